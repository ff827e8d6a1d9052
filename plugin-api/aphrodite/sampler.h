/* Sampler plugins: stages of the sampler chain (penalties, DRY, temperature,
 * truncation, shaping, selection, masks ...). One plugin may ship many stages.
 *
 * Each engine step the host runs the chain over a batch of logits rows in the
 * configured (or per-request) order. A stage sees only the rows that use it:
 * a row whose params are NULL pays nothing. Stages work in fp32 on the logits
 * in place; a removed token gets -INFINITY. A selection stage writes the chosen
 * token of the rows it decides; later selection stages skip rows already
 * decided (chosen >= 0).
 *
 * Removed stays removed: within one run of the chain (aph_sampler_batch's
 * run_id) no stage gives a -INFINITY logit a finite value again, so a row's
 * set of live tokens only shrinks from stage to stage. A stage may rely on
 * that, e.g. to keep the live tokens an earlier stage found for the next.
 */
#ifndef APHRODITE_SAMPLER_H
#define APHRODITE_SAMPLER_H

#include "aphrodite/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum aph_field_type {
  APH_FIELD_FLOAT = 0,
  APH_FIELD_INT = 1,
  APH_FIELD_BOOL = 2,
  APH_FIELD_STRING = 3,
  APH_FIELD_INT_LIST = 4,
  APH_FIELD_STRING_LIST = 5,
  APH_FIELD_JSON = 6 /* any JSON value, validated by the stage */
} aph_field_type;

/* A request field a stage reads. The host type- and range-checks every
 * declared field before the stage sees a request, so clients get a 400 naming
 * the field. Numeric ranges are inclusive; NaN bounds mean "unbounded". */
typedef struct aph_sampler_field {
  uint32_t size;
  const char* name;       /* canonical Aphrodite name, e.g. "min_p" */
  int32_t type;           /* aph_field_type */
  double default_number;  /* for FLOAT/INT/BOOL */
  const char* default_json; /* for the other types; NULL = absent */
  double min_value;
  double max_value;
  const char* description;
} aph_sampler_field;

typedef enum aph_sampler_flags {
  APH_SAMPLER_NEEDS_HISTORY = 1, /* reads rows[i].tokens (prompt + output) */
  APH_SAMPLER_SELECTS = 2,       /* writes batch->chosen */
  APH_SAMPLER_NEEDS_PROBS = 4,   /* wants softmax probabilities, not logits */
  /* Keeps its default position: configured and per-request orders move only
   * the other stages (masks run first, selection last, whatever the order). */
  APH_SAMPLER_FIXED_POSITION = 8
} aph_sampler_flags;

/* One row's view of its request. */
typedef struct aph_sampler_row {
  uint32_t size;
  void* params;             /* from row_create; NULL: this stage is off for the row */
  const int32_t* tokens;    /* host: prompt then output ids */
  int64_t n_prompt;         /* tokens[0, n_prompt) are the prompt */
  int64_t n_tokens;         /* total ids in tokens */
  const int32_t* tokens_device; /* same ids on the batch's device, or NULL on CPU */
  uint64_t seed;            /* the row's RNG seed */
  uint64_t step;            /* output tokens so far; (seed, step) drives the RNG */
} aph_sampler_row;

typedef struct aph_sampler_batch {
  uint32_t size;
  aph_tensor logits;  /* F32 [n_rows, vocab], in place, on the batch's device */
  aph_tensor chosen;  /* I32 [n_rows], same device; -1 = not decided yet */
  uint32_t n_rows;
  const aph_sampler_row* rows; /* host array of n_rows */
  int32_t eos_token_id; /* -1 when the model has none */
  /* Appended (read only when `size` covers it). Nonzero and distinct for
   * each run of the chain over a batch (one engine step's sampling): every
   * stage of the run gets the same batch (logits rows included) with the
   * same run_id, and no other run, on any chain of the process, reuses it.
   * 0 = not given. */
  uint64_t run_id;
} aph_sampler_batch;

typedef struct aph_sampler_stage {
  uint32_t size;
  const char* name;        /* e.g. "min_p"; used in aphrodite.toml's order */
  /* Comma-separated names SillyTavern's sampler_priority uses for this stage
   * (e.g. "top_p_top_k"); may be "". */
  const char* priority_aliases;
  int32_t kobold_id;       /* Kobold sampler_order id, or -1 */
  int32_t default_position;/* sort key of Aphrodite's default order */
  uint32_t flags;          /* aph_sampler_flags */
  uint32_t n_fields;
  const aph_sampler_field* fields;
  /* Alternative names clients send, "alias=canonical" comma-separated
   * (e.g. "rep_pen=repetition_penalty"). May be "". */
  const char* field_aliases;

  /* Request thread. Reads the stage's fields from the request (a JSON object
   * holding every field, defaults filled in) and returns per-request params,
   * or *params = NULL when the stage does nothing for this request. Extra
   * validation failures return APH_ERR_INVALID_ARGUMENT naming the field. */
  aph_status (*row_create)(void* plugin_state, const char* request_json, void** params,
                           aph_error* err);
  /* Engine or request thread. */
  void (*row_destroy)(void* plugin_state, void* params);
  /* Engine thread. Applies the stage to every row with params != NULL.
   * Launches only on `stream` (NULL on CPU). */
  aph_status (*apply)(void* plugin_state, const aph_sampler_batch* batch, aph_stream stream,
                      aph_error* err);
} aph_sampler_stage;

/* The model's vocabulary, for stages that match text (banned strings) or
 * bound token ids. Pointers are valid only during the set_vocab call. */
typedef struct aph_sampler_vocab {
  uint32_t size;
  int32_t n_tokens;                /* logits columns; bounds token-id fields */
  /* token_bytes[i]: the bytes token i adds to text, token_lengths[i] long
   * (may hold NULs). Both NULL when the engine has no text for its tokens. */
  const char* const* token_bytes;
  const uint32_t* token_lengths;
  int32_t eos_token_id;            /* -1 when none */
  uint32_t n_eog;                  /* every end-of-generation id */
  const int32_t* eog_token_ids;
} aph_sampler_vocab;

typedef struct aph_sampler_vtable {
  uint32_t size;
  uint32_t n_stages;
  const aph_sampler_stage* stages;
  /* Appended: read only when `size` covers it; may be NULL. Start-up thread,
   * before any row_create; a later call replaces the vocabulary. */
  aph_status (*set_vocab)(void* plugin_state, const aph_sampler_vocab* vocab, aph_error* err);
} aph_sampler_vtable;

#ifdef __cplusplus
}
#endif

#endif /* APHRODITE_SAMPLER_H */
