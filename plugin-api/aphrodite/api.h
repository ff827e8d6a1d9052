/* API plugins: HTTP dialects (OpenAI, KoboldAI, ...).
 *
 * The host owns the HTTP transport (Beast): connections, keep-alive, chunked
 * bodies, size limits, API-key checks, CORS, request ids, access logs. An API
 * plugin registers routes from init() and, per request, parses its dialect
 * into the engine's canonical request JSON, submits it, and writes JSON or SSE
 * back through the responder.
 */
#ifndef APHRODITE_API_H
#define APHRODITE_API_H

#include "aphrodite/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aph_http_header {
  uint32_t size;
  const char* name;
  const char* value;
} aph_http_header;

/* Valid for the duration of the handle() call. */
typedef struct aph_http_request {
  uint32_t size;
  const char* method;  /* "GET", "POST", ... */
  const char* path;    /* without the query string */
  const char* query;   /* after '?', or "" */
  const char* body;    /* may hold NULs; not NUL-terminated */
  uint64_t body_len;
  uint32_t n_headers;
  const aph_http_header* headers;
  const char* request_id; /* also sent back as the X-Request-Id header */
  const char* api_key;    /* the key that authenticated, or "" if none was needed */
  const char* remote_addr; /* the peer's address ("127.0.0.1"), for scoping per client */
} aph_http_request;

/* The connection, for one request. Called on the handler's thread only. A
 * handler answers exactly once: send(), or stream_begin() + stream_write()* +
 * stream_end(). */
typedef struct aph_http_responder {
  uint32_t size;
  void* conn;
  /* Adds a response header; before send()/stream_begin(). */
  aph_status (*add_header)(void* conn, const char* name, const char* value);
  aph_status (*send)(void* conn, int32_t http_status, const char* content_type, const char* body,
                     uint64_t body_len);
  /* Starts a chunked response (SSE: content_type "text/event-stream"). */
  aph_status (*stream_begin)(void* conn, int32_t http_status, const char* content_type);
  /* Writes and flushes one chunk. APH_ERR_CANCELLED once the client is gone. */
  aph_status (*stream_write)(void* conn, const char* data, uint64_t len);
  aph_status (*stream_end)(void* conn);
  /* Non-zero once the peer has closed the connection (checked without
   * blocking), so non-streaming handlers can cancel their request. */
  int32_t (*client_gone)(void* conn);
} aph_http_responder;

typedef enum aph_route_auth {
  APH_ROUTE_AUTH_REQUIRED = 0, /* API keys checked when configured */
  APH_ROUTE_AUTH_LEGACY = 1    /* open when the toml's legacy switch is on */
} aph_route_auth;

typedef struct aph_route {
  uint32_t size;
  const char* method; /* "GET", "POST", ... */
  const char* path;   /* exact path, or a prefix when prefix_match != 0 */
  int32_t prefix_match;
  int32_t auth;       /* aph_route_auth */
  void* handler_state;
  /* A connection thread; may block (it owns the connection while it runs).
   * Returning an error without having answered makes the host call
   * send_error with 500. */
  aph_status (*handle)(void* handler_state, const aph_http_request* request,
                       const aph_http_responder* responder, aph_error* err);
  /* A connection thread. Answers an error in the dialect's own shape (the host
   * uses it for 401, 404, 413, ... on this route). */
  void (*send_error)(void* handler_state, int32_t http_status, const char* message,
                     const aph_http_responder* responder);
} aph_route;

/* ---- the engine, as API plugins see it ---- */

typedef struct aph_request aph_request; /* opaque, host-owned */

/* A host-allocated byte buffer; free with aph_engine_api.free_buffer. */
typedef struct aph_buffer {
  uint32_t size;
  void* data;
  uint64_t len; /* bytes (for token ids: count * 4) */
} aph_buffer;

typedef struct aph_model_desc {
  uint32_t size;
  const char* served_model_name;
  const char* model_path;
  int64_t max_model_len;
  int64_t vocab_size;
  int32_t bos_token_id; /* -1 if none */
  int32_t eos_token_id; /* -1 if none */
  int32_t add_bos;      /* the tokenizer adds BOS by default */
  const char* lora_names_json; /* JSON array of adapter names */
  int32_t ready;        /* 0 while loading */
} aph_model_desc;

typedef enum aph_event_kind {
  APH_EVENT_NONE = 0,    /* timeout: nothing new yet */
  APH_EVENT_TOKENS = 1,  /* new text/tokens for one choice */
  APH_EVENT_FINISHED = 2,/* one choice ended; finish_reason set */
  APH_EVENT_ERROR = 3,   /* the request failed; message in err */
  APH_EVENT_DONE = 4     /* every choice ended; no more events */
} aph_event_kind;

/* Pointers inside are valid until the next next_event()/release() call. */
typedef struct aph_gen_event {
  uint32_t size;
  int32_t kind;    /* aph_event_kind */
  uint32_t choice; /* index among n choices */
  const char* text; /* new text (stop strings held back and trimmed) */
  uint64_t text_len;
  const int32_t* token_ids; /* the tokens behind `text` */
  uint32_t n_tokens;
  /* When the request asked for logprobs: JSON array, one entry per token,
   * {"id":int,"token":str,"bytes":[...],"logprob":num,"top":[{"id","token","bytes","logprob"}]} */
  const char* logprobs_json;
  const char* finish_reason; /* "stop", "length", "abort" on FINISHED */
  const char* stop_reason;   /* the stop string or token that matched, or NULL */
  uint64_t prompt_tokens;
  uint64_t completion_tokens; /* so far, for this choice */
  uint64_t cached_prompt_tokens;
} aph_gen_event;

/* Any thread unless noted. */
typedef struct aph_engine_api {
  uint32_t size;
  void* engine;

  aph_status (*model_info)(void* engine, aph_model_desc* out, aph_error* err);
  /* out: I32 ids. */
  aph_status (*tokenize)(void* engine, const char* text, uint64_t text_len, int32_t add_special,
                         int32_t parse_special, aph_buffer* out, aph_error* err);
  /* out: UTF-8 text. */
  aph_status (*detokenize)(void* engine, const int32_t* ids, uint64_t n_ids,
                           int32_t skip_special_tokens, aph_buffer* out, aph_error* err);
  /* messages_json: OpenAI-style messages array. options_json: {"add_generation_prompt",
   * "continue_final_message", "tools", "chat_template", "chat_template_kwargs"}.
   * out: the prompt text. A template error is APH_ERR_INVALID_ARGUMENT. */
  aph_status (*apply_chat_template)(void* engine, const char* messages_json,
                                    const char* options_json, aph_buffer* out, aph_error* err);
  void (*free_buffer)(void* engine, aph_buffer* buffer);

  /* Submits a generation. request_json is the canonical request:
   *   "prompt": str  or  "prompt_token_ids": [int]   (one prompt per request)
   *   "add_special_tokens": bool, "max_tokens": int|null, "n": int,
   *   "stop": [str], "stop_token_ids": [int], "include_stop_str_in_output": bool,
   *   "skip_special_tokens": bool, "spaces_between_special_tokens": bool,
   *   "logprobs": int|null, "seed": int|null, "ignore_eos": bool, "min_tokens": int,
   *   "lora": str|null, "sampler_order": [str] | "kobold_sampler_order": [int],
   *   and every sampler stage field by canonical name or declared alias.
   * Unknown keys are ignored; a bad value is APH_ERR_INVALID_ARGUMENT naming
   * the field; a full queue is APH_ERR_BUSY. */
  aph_status (*submit)(void* engine, const char* request_json, aph_request** out, aph_error* err);
  /* The submitting thread. Waits up to timeout_ms for the next event. */
  aph_status (*next_event)(aph_request* request, int32_t timeout_ms, aph_gen_event* out,
                           aph_error* err);
  /* Any thread. Frees the request's KV blocks within one engine step. */
  void (*cancel)(aph_request* request);
  /* The submitting thread, once; cancels if still running. */
  void (*release)(aph_request* request);
} aph_engine_api;

/* API plugins need no vtable beyond init (which registers routes). */
typedef struct aph_api_vtable {
  uint32_t size;
  const char* dialect; /* "openai", "kobold", ... */
} aph_api_vtable;

#ifdef __cplusplus
}
#endif

#endif /* APHRODITE_API_H */
