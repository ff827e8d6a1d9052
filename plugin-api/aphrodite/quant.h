/* Quant plugins: weight formats (GGUF, GPTQ, AWQ, EXL2, FP8, ...).
 *
 * A quant plugin does up to two jobs:
 *  1. Linear layers: given the raw tensors that make up one quantized linear
 *     layer, create an object that computes y = x · Wᵀ (+ bias) on the CPU or
 *     on a CUDA device.
 *  2. Optionally, act as a model source for a container format (GGUF): open
 *     the file, describe the model as an HF-style config plus tokenizer data,
 *     and list its tensors under HF names.
 *
 * The host picks the plugin whose probe() scores a checkpoint highest (or the
 * one --quantization names) and asks it for every linear layer whose weights
 * it owns. Plain float tensors (norms, biases) are read by the host directly.
 */
#ifndef APHRODITE_QUANT_H
#define APHRODITE_QUANT_H

#include "aphrodite/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aph_quant_linear aph_quant_linear; /* opaque, plugin-owned */
typedef struct aph_model_source aph_model_source; /* opaque, plugin-owned */

/* What the user asked to load. */
typedef struct aph_checkpoint_desc {
  uint32_t size;
  const char* path;         /* file or directory the user named */
  const char* config_json;  /* HF config.json text, or NULL (e.g. a bare .gguf) */
  const char* quantization; /* --quantization, or NULL/"" for automatic */
} aph_checkpoint_desc;

/* One stored tensor. `dtype` is an aph_dtype for plain tensors, or -1 when the
 * data is in a format-specific encoding named by format_type/type_name. Shape
 * is logical and row-major, outermost first ([out_features, in_features] for a
 * linear weight), whatever order the container stores it in. `data` is host
 * memory (usually memory-mapped) valid while its source is open. */
typedef struct aph_weight_info {
  uint32_t size;
  const char* name;
  int32_t dtype;
  uint32_t format_type; /* e.g. the ggml type id */
  const char* type_name;
  int32_t rank;
  int64_t shape[APH_MAX_RANK];
  const void* data;
  uint64_t nbytes;
} aph_weight_info;

/* Everything needed to build one linear layer y[M,N] = x[M,K] · W[N,K]ᵀ + b. */
typedef struct aph_linear_desc {
  uint32_t size;
  const char* name;     /* HF base name, e.g. "model.layers.0.self_attn.q_proj" */
  int64_t in_features;  /* K */
  int64_t out_features; /* N */
  int32_t device;       /* APH_DEVICE_CPU or a CUDA ordinal */
  int32_t act_dtype;    /* dtype of x and y: F32 on CPU; F16 or BF16 on CUDA */
  uint32_t n_parts;     /* the tensors making up the layer ("weight", "qweight", "scales", ...) */
  const aph_weight_info* parts;
  const aph_weight_info* bias; /* NULL when the layer has none */
  const char* quant_config_json; /* HF quantization_config, or NULL */
  aph_stream stream;             /* for the upload; NULL on CPU */
} aph_linear_desc;

/* The input of a projection group that follows a residual add and an
 * RMSNorm (linear_forward_shared_rms_norm): per row,
 *   v = residual + delta (each sum rounded to the activation dtype),
 *   x = v / sqrt(mean(v^2) + eps) * weight (each product rounded likewise),
 * as the host's add_rms_norm computes it. */
typedef struct aph_rms_norm_input {
  uint32_t size;
  const aph_tensor* residual; /* [M, K], act_dtype, contiguous */
  const aph_tensor* delta;    /* [M, K] like residual, or NULL: v = residual */
  const aph_tensor* weight;   /* [K], F32 */
  float eps;
  /* [M, K] like residual: with delta, v is stored here. Overlaps neither
   * residual nor delta (every CTA may still be reading those). Unused (may
   * be NULL) without delta. */
  aph_tensor* residual_out;
} aph_rms_norm_input;

/* What a q/k/v projection group's matvec can do with its rows as it writes
 * them (linear_forward_qkv_rope_kv), instead of a kernel of the host's after
 * it: rotate q and k by RoPE in adjacent pairs (elements 2i, 2i + 1 of a
 * head: GGUF's llama order) and store k and v straight into the paged KV
 * cache. For token i (row i of x):
 *   q, k: pair p < rotary_dim / 2 of each head, at angle
 *         positions[i] * inv_freq[p], c = cos * mscale, s = sin * mscale
 *         (sincosf), from (a, b) the pair's matvec outputs rounded to the
 *         activation dtype: (a c - b s, b c + a s); elements past rotary_dim
 *         pass through. Rotated q is rounded to the activation dtype into
 *         ys[0]; k and v go to slot = slot_mapping[i] (nothing stored when
 *         it is < 0 or >= total_slots) at element (slot * kv_width + row),
 *         each value rounded to the activation dtype, then to kv_dtype (fp8:
 *         value / scale, saturating).
 * These are the host's own rope and KV write (core/common/rope_pair.cuh,
 * core/attention/cuda/kv_types.cuh), so the cache holds the same bytes
 * either way. Every pointer is device memory. */
typedef struct aph_rope_kv_store {
  uint32_t size;
  const int32_t* positions;    /* [M] */
  const float* inv_freq;       /* [rotary_dim / 2], scaling applied */
  int32_t head_dim;            /* q rows = heads x head_dim; k, v rows = kv_width */
  int32_t rotary_dim;          /* even, <= head_dim */
  float mscale;
  const int64_t* slot_mapping; /* [M] */
  int64_t total_slots;
  void* k_cache;               /* [total_slots, kv_width] of kv_dtype */
  void* v_cache;
  int32_t kv_dtype;            /* F16, BF16, F8_E4M3 or F8_E5M2 */
  float k_scale, v_scale;      /* fp8 only */
} aph_rope_kv_store;

typedef struct aph_quant_vtable {
  uint32_t size;
  const char* format_name; /* "gguf", "gptq", ... matched by --quantization */
  /* Devices with kernels, comma-separated: "cpu", "sm_80", ... "sm_90". */
  const char* devices;

  /* Start-up thread. How well this plugin can load the checkpoint: 0 = not at
   * all, 1..100 = confidence. Must not fail on unrelated inputs. */
  aph_status (*probe)(void* state, const aph_checkpoint_desc* checkpoint, float* score,
                      aph_error* err);

  /* ---- model source (all NULL if the plugin is not a container format) ---- */

  /* Start-up thread. Opens the checkpoint (memory-mapping it). */
  aph_status (*source_open)(void* state, const aph_checkpoint_desc* checkpoint,
                            aph_model_source** out, aph_error* err);
  /* Any thread, after open. A JSON object text, valid until close:
   *   "config":        HF config.json fields (architectures, hidden_size, ...,
   *                    rope_theta, rope_scaling, head_dim, tie_word_embeddings)
   *   "rope_interleaved": true when Q/K rows are stored for adjacent-pair RoPE
   *                    (GGUF llama), false for HF (NEOX) order
   *   "tokenizer":     the container's tokenizer fields under their GGUF names
   *                    (tokenizer.ggml.model, .tokens, .scores, .merges, ...)
   *   "chat_template": string or null
   *   "metadata":      every other key/value, as stored */
  const char* (*source_metadata_json)(aph_model_source* source);
  /* Any thread. Tensors are named as in HF checkpoints (FORMATS.md §1.3). */
  uint64_t (*source_tensor_count)(aph_model_source* source);
  aph_status (*source_tensor)(aph_model_source* source, uint64_t index, aph_weight_info* out,
                              aph_error* err);
  /* Shutdown/start-up thread. After every linear created from it is destroyed. */
  void (*source_close)(aph_model_source* source);

  /* ---- linear layers ---- */

  /* Loader thread. Copies or uploads what it needs; desc->parts may be
   * unmapped after it returns. */
  aph_status (*linear_create)(void* state, const aph_linear_desc* desc, aph_quant_linear** out,
                              aph_error* err);
  /* Engine thread. x: [M, K], y: [M, N], both contiguous, act_dtype, on the
   * layer's device. Launches only on `stream`; does not synchronize it. */
  aph_status (*linear_forward)(aph_quant_linear* linear, const aph_tensor* x, aph_tensor* y,
                               aph_stream stream, aph_error* err);
  /* Engine thread. Optional (NULL): dequantized rows out[i,:] = W[ids[i],:],
   * for quantized embedding tables. ids: I32 [M]; out: [M, K] act_dtype. */
  aph_status (*linear_get_rows)(aph_quant_linear* linear, const aph_tensor* ids, aph_tensor* out,
                                aph_stream stream, aph_error* err);
  /* Any thread. Bytes held on the device, for the memory budget. */
  uint64_t (*linear_device_bytes)(aph_quant_linear* linear);
  /* Loader or shutdown thread. */
  void (*linear_destroy)(aph_quant_linear* linear);

  /* ---- optional trailing members: the host reads one only when `size`
   * covers it, so plugins built before it was added still load ---- */

  /* Engine thread. Optional (NULL): ys[i] = x · linears[i] for n linears of
   * this plugin that read the same x (a projection group: q/k/v, gate/up), so
   * the plugin can prepare x once (quantize it, say) instead of n times. The
   * same contracts as linear_forward for each pair (x, ys[i]). */
  aph_status (*linear_forward_shared)(aph_quant_linear* const* linears, uint32_t n, const aph_tensor* x,
                                      aph_tensor* ys, aph_stream stream, aph_error* err);

  /* Engine thread. Optional (NULL): y = (silu(gate) * up) · linear, the down
   * projection of a gated MLP reading the gate and up projections' outputs
   * directly (both [M, in_features] in the activation dtype; their rows may
   * be strided, strides[1] is 1), so the plugin can fold the activation into
   * how it prepares x. Each product silu(g) * u = g / (1 + e^-g) * u is
   * rounded to the activation dtype before use, as the host's own silu_mul
   * does. Returns APH_ERR_UNSUPPORTED, having launched nothing, when it does
   * not take this call (say, this M or device): the host then runs silu_mul
   * itself and calls linear_forward. */
  aph_status (*linear_forward_silu_mul)(aph_quant_linear* linear, const aph_tensor* gate, const aph_tensor* up,
                                        aph_tensor* y, aph_stream stream, aph_error* err);
  /* Engine thread. Optional (NULL): ys[i] = x · linears[i] with x the RMSNorm
   * of a residual add (aph_rms_norm_input), so the plugin can fold the norm
   * into how it prepares x instead of the host launching it first. Returns
   * APH_ERR_UNSUPPORTED, having launched and written nothing, when it does
   * not take this call: the host then runs its add_rms_norm and
   * linear_forward_shared. */
  aph_status (*linear_forward_shared_rms_norm)(aph_quant_linear* const* linears, uint32_t n,
                                               const aph_rms_norm_input* in, aph_tensor* ys, aph_stream stream,
                                               aph_error* err);
  /* Engine thread. Optional (NULL): the q, k and v projections (linears[0..2],
   * one input width) of x = RMSNorm(residual + delta) * weight as in
   * linear_forward_shared_rms_norm, with q rotated into ys[0] ([M, q rows])
   * and k, v rotated and stored into the cache (aph_rope_kv_store); nothing
   * else is written but in->residual_out. Returns APH_ERR_UNSUPPORTED,
   * having launched and written nothing, when it does not take this call
   * (say, this M): the host then runs the projections, its rope and its KV
   * write. */
  aph_status (*linear_forward_qkv_rope_kv)(aph_quant_linear* const* linears, const aph_rms_norm_input* in,
                                           aph_tensor* q_out, const aph_rope_kv_store* kv, aph_stream stream,
                                           aph_error* err);
} aph_quant_vtable;

#ifdef __cplusplus
}
#endif

#endif /* APHRODITE_QUANT_H */
