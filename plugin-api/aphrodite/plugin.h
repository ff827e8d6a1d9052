/* aphrodited plugin ABI — the common part every plugin kind shares.
 *
 * Rules (DESIGN.md "Plugin ABI rules"):
 *  - One exported entry symbol per .so: APH_PLUGIN_ENTRY_SYMBOL.
 *  - Every struct that crosses starts with `uint32_t size` (sizeof as the
 *    writer compiled it) and only grows at the end. A reader checks `size`
 *    before touching a field added in a later minor.
 *  - Only C types cross. Errors are values: a status plus a message written
 *    into the caller's aph_error. No exception, abort or exit crosses.
 *  - Whoever creates an object destroys it, through the same table.
 *  - Plugins start no threads and launch GPU work only on the stream given.
 *
 * Header only: a plugin links nothing from the host.
 */
#ifndef APHRODITE_PLUGIN_H
#define APHRODITE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define APH_ABI_MAJOR 1
#define APH_ABI_MINOR 1

#if defined(_WIN32)
#define APH_EXPORT __declspec(dllexport)
#else
#define APH_EXPORT __attribute__((visibility("default")))
#endif

#define APH_PLUGIN_ENTRY_SYMBOL "aph_plugin_entry"

typedef enum aph_status {
  APH_OK = 0,
  APH_ERR_INVALID_ARGUMENT = 1, /* the caller's input is wrong (a 4xx) */
  APH_ERR_NOT_FOUND = 2,
  APH_ERR_UNSUPPORTED = 3, /* valid, but this plugin cannot do it */
  APH_ERR_OUT_OF_MEMORY = 4,
  APH_ERR_IO = 5,
  APH_ERR_INTERNAL = 6,
  APH_ERR_DEVICE = 7,   /* a CUDA call failed */
  APH_ERR_VERSION = 8,  /* ABI negotiation failed */
  APH_ERR_BUSY = 9,     /* queue full: try later (429/503) */
  APH_ERR_CANCELLED = 10
} aph_status;

#define APH_ERROR_MESSAGE_CAPACITY 1024

/* Written by the callee on failure; the caller owns the storage. The message
 * is UTF-8, NUL-terminated, truncated to fit, and names the field, file or
 * tensor at fault. */
typedef struct aph_error {
  uint32_t size;
  int32_t code; /* an aph_status */
  char message[APH_ERROR_MESSAGE_CAPACITY];
} aph_error;

typedef enum aph_plugin_kind {
  APH_KIND_QUANT = 1,   /* weight formats; see quant.h */
  APH_KIND_SAMPLER = 2, /* sampler stages; see sampler.h */
  APH_KIND_LORA = 3,    /* LoRA adapter formats; see lora.h */
  APH_KIND_API = 4      /* HTTP dialects; see api.h */
} aph_plugin_kind;

typedef enum aph_log_level {
  APH_LOG_TRACE = 0,
  APH_LOG_DEBUG = 1,
  APH_LOG_INFO = 2,
  APH_LOG_WARN = 3,
  APH_LOG_ERROR = 4
} aph_log_level;

/* Element types of tensors that cross the ABI. */
typedef enum aph_dtype {
  APH_DTYPE_F32 = 0,
  APH_DTYPE_F16 = 1,
  APH_DTYPE_BF16 = 2,
  APH_DTYPE_I32 = 3,
  APH_DTYPE_I64 = 4,
  APH_DTYPE_U8 = 5,
  APH_DTYPE_I8 = 6,
  APH_DTYPE_F8_E4M3 = 7,
  APH_DTYPE_F8_E5M2 = 8,
  APH_DTYPE_U32 = 9,
  APH_DTYPE_I16 = 10,
  APH_DTYPE_F64 = 11
} aph_dtype;

#define APH_DEVICE_CPU (-1) /* device >= 0 is a CUDA ordinal */
#define APH_MAX_RANK 8

/* A strided view of memory the caller owns. Strides are in elements. */
typedef struct aph_tensor {
  uint32_t size;
  int32_t dtype;  /* aph_dtype */
  int32_t device; /* APH_DEVICE_CPU or a CUDA ordinal */
  int32_t rank;
  void* data;
  int64_t shape[APH_MAX_RANK];
  int64_t strides[APH_MAX_RANK];
} aph_tensor;

/* An opaque CUDA stream (cudaStream_t), or NULL on the CPU. Never created by
 * a plugin. */
typedef void* aph_stream;

struct aph_engine_api;
struct aph_route;

/* What the host offers every plugin. All functions are thread-safe unless
 * noted. `host` is passed back as the first argument. */
typedef struct aph_host_services {
  uint32_t size;
  void* host;

  /* Any thread. Logs through the plugin's own spdlog logger. */
  void (*log)(void* host, int32_t level, const char* message);

  /* Any thread. The plugin's own toml section ([plugins.<name>]) as a JSON
   * object text; "{}" when absent. Valid until the plugin is unloaded. */
  const char* (*config_json)(void* host);

  /* Any thread. Memory counted against the host's budget. device is
   * APH_DEVICE_CPU for plain host memory or a CUDA ordinal. Returns NULL and
   * fills err on failure. */
  void* (*device_alloc)(void* host, int32_t device, uint64_t bytes, aph_error* err);
  void (*device_free)(void* host, int32_t device, void* ptr);
  void* (*pinned_alloc)(void* host, uint64_t bytes, aph_error* err);
  void (*pinned_free)(void* host, void* ptr);

  /* Start-up thread only (from init). API plugins register their routes. */
  aph_status (*register_route)(void* host, const struct aph_route* route, aph_error* err);

  /* The engine, for API plugins; NULL for the other kinds. See api.h. */
  const struct aph_engine_api* engine;

  /* Any thread. The CUDA device ordinal the engine runs on, or
   * APH_DEVICE_CPU. */
  int32_t (*active_device)(void* host);

  /* ---- minor 1 ---- */

  /* Any thread; blocks the caller. Runs fn(ctx, begin, end) over [0, n) in
   * contiguous chunks of at least min_chunk items on the host's CPU worker
   * threads (the caller's included) and returns when every chunk is done.
   * Plugins start no threads of their own: this is how their CPU kernels go
   * parallel. fn must not throw or call parallel_for again. Check `size`
   * before use: hosts of minor 0 lack it. */
  void (*parallel_for)(void* host, uint64_t n, uint64_t min_chunk,
                       void (*fn)(void* ctx, uint64_t begin, uint64_t end), void* ctx);
} aph_host_services;

/* What the host offers in negotiation. */
typedef struct aph_version_offer {
  uint32_t size;
  uint32_t major;
  uint32_t min_minor;
  uint32_t max_minor;
} aph_version_offer;

/* The plugin's answer. `vtable` points at the kind's table (aph_quant_vtable,
 * aph_sampler_vtable, aph_lora_vtable, aph_api_vtable) and lives as long as
 * the library is loaded. */
typedef struct aph_plugin_info {
  uint32_t size;
  uint32_t abi_major;
  uint32_t abi_minor;
  int32_t kind; /* aph_plugin_kind */
  const char* name;
  const char* version;
  const char* description;
  const void* vtable;

  /* Start-up thread, once, after negotiation. Creates the plugin's state.
   * `services` lives until shutdown. A failure skips the plugin. */
  aph_status (*init)(const aph_host_services* services, void** state, aph_error* err);
  /* Shutdown thread, once, after every object it created is destroyed. */
  void (*shutdown)(void* state);
} aph_plugin_info;

/* The one exported symbol. Any thread, once per load. The plugin returns
 * APH_ERR_VERSION if it speaks no (major, minor) inside the offer; otherwise it
 * fills `out`, with abi_minor inside [min_minor, max_minor]. */
typedef aph_status (*aph_plugin_entry_fn)(const aph_version_offer* offer, aph_plugin_info* out,
                                          aph_error* err);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* APHRODITE_PLUGIN_H */
