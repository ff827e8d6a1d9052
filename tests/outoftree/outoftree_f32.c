/* An out-of-tree quant plugin in plain C: plain float32 linear layers on the
 * CPU, y = x * W^T + b. It shows what a third party needs: plugin-api/ headers,
 * one exported entry symbol, and the host's services for memory and logs. */
#include <stdio.h>
#include <string.h>

#include "aphrodite/quant.h"

typedef struct plugin_state {
  const aph_host_services* services;
} plugin_state;

struct aph_quant_linear {
  plugin_state* owner;
  int64_t in_features;
  int64_t out_features;
  float* weight; /* [out, in], from the host's budget */
  float* bias;   /* [out] or NULL */
};

static aph_status fail(aph_error* err, aph_status code, const char* message) {
  if (err != NULL) {
    err->size = sizeof(*err);
    err->code = code;
    snprintf(err->message, sizeof(err->message), "%s", message);
  }
  return code;
}

static uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }

static aph_status probe(void* state, const aph_checkpoint_desc* checkpoint, float* score,
                        aph_error* err) {
  /* Only when asked for by name: this format has no file signature. */
  *score = (checkpoint->quantization != NULL &&
            strcmp(checkpoint->quantization, "outoftree-f32") == 0)
               ? 100.0f
               : 0.0f;
  return APH_OK;
}

static aph_status linear_create(void* state, const aph_linear_desc* desc, aph_quant_linear** out,
                                aph_error* err) {
  plugin_state* s = (plugin_state*)state;
  const aph_host_services* h = s->services;
  if (desc->device != APH_DEVICE_CPU) return fail(err, APH_ERR_UNSUPPORTED, "outoftree-f32: CPU only");
  if (desc->n_parts != 1 || desc->parts[0].dtype != APH_DTYPE_F32 || desc->parts[0].rank != 2 ||
      desc->parts[0].shape[0] != desc->out_features || desc->parts[0].shape[1] != desc->in_features) {
    return fail(err, APH_ERR_INVALID_ARGUMENT, "outoftree-f32: expects one F32 weight [out, in]");
  }
  uint64_t wbytes = (uint64_t)desc->out_features * (uint64_t)desc->in_features * sizeof(float);
  if (desc->parts[0].nbytes < wbytes) return fail(err, APH_ERR_INVALID_ARGUMENT, "outoftree-f32: weight too short");
  aph_quant_linear* l = (aph_quant_linear*)h->device_alloc(h->host, APH_DEVICE_CPU, sizeof(*l), err);
  if (l == NULL) return err->code;
  memset(l, 0, sizeof(*l));
  l->owner = s;
  l->in_features = desc->in_features;
  l->out_features = desc->out_features;
  l->weight = (float*)h->device_alloc(h->host, APH_DEVICE_CPU, wbytes, err);
  if (l->weight == NULL) {
    h->device_free(h->host, APH_DEVICE_CPU, l);
    return err->code;
  }
  memcpy(l->weight, desc->parts[0].data, wbytes);
  if (desc->bias != NULL) {
    uint64_t bbytes = (uint64_t)desc->out_features * sizeof(float);
    l->bias = (float*)h->device_alloc(h->host, APH_DEVICE_CPU, bbytes, err);
    if (l->bias == NULL) {
      h->device_free(h->host, APH_DEVICE_CPU, l->weight);
      h->device_free(h->host, APH_DEVICE_CPU, l);
      return err->code;
    }
    memcpy(l->bias, desc->bias->data, bbytes);
  }
  *out = l;
  return APH_OK;
}

static aph_status linear_forward(aph_quant_linear* l, const aph_tensor* x, aph_tensor* y,
                                 aph_stream stream, aph_error* err) {
  if (x->device != APH_DEVICE_CPU || x->dtype != APH_DTYPE_F32 || y->dtype != APH_DTYPE_F32 ||
      x->rank != 2 || y->rank != 2 || x->shape[1] != l->in_features ||
      y->shape[1] != l->out_features || y->shape[0] != x->shape[0]) {
    return fail(err, APH_ERR_INVALID_ARGUMENT, "outoftree-f32: x must be F32 [M, K], y F32 [M, N]");
  }
  const float* xs = (const float*)x->data;
  float* ys = (float*)y->data;
  for (int64_t m = 0; m < x->shape[0]; ++m) {
    for (int64_t n = 0; n < l->out_features; ++n) {
      float acc = l->bias ? l->bias[n] : 0.0f;
      for (int64_t k = 0; k < l->in_features; ++k) acc += xs[m * l->in_features + k] * l->weight[n * l->in_features + k];
      ys[m * l->out_features + n] = acc;
    }
  }
  return APH_OK;
}

static uint64_t linear_device_bytes(aph_quant_linear* l) { return 0; /* all on the host */ }

static void linear_destroy(aph_quant_linear* l) {
  const aph_host_services* h = l->owner->services;
  if (l->bias) h->device_free(h->host, APH_DEVICE_CPU, l->bias);
  h->device_free(h->host, APH_DEVICE_CPU, l->weight);
  h->device_free(h->host, APH_DEVICE_CPU, l);
}

/* Designated: fields a later ABI minor appends stay zero. The source_*
 * functions stay NULL: this is not a container format. */
static const aph_quant_vtable kVtable = {
    .size = sizeof(aph_quant_vtable),
    .format_name = "outoftree-f32",
    .devices = "cpu",
    .probe = probe,
    .linear_create = linear_create,
    .linear_forward = linear_forward,
    .linear_device_bytes = linear_device_bytes,
    .linear_destroy = linear_destroy,
};

static plugin_state g_state; /* one load of the library, one state */

static aph_status init(const aph_host_services* services, void** state, aph_error* err) {
  g_state.services = services;
  services->log(services->host, APH_LOG_INFO, "outoftree-f32 ready");
  *state = &g_state;
  return APH_OK;
}

static void shutdown_plugin(void* state) {}

APH_EXPORT aph_status aph_plugin_entry(const aph_version_offer* offer, aph_plugin_info* out,
                                       aph_error* err) {
  /* Built against 1.APH_ABI_MINOR: it speaks 1.0 up to that minor. */
  if (offer->major != APH_ABI_MAJOR || offer->min_minor > APH_ABI_MINOR) {
    return fail(err, APH_ERR_VERSION, "outoftree-f32 speaks only ABI 1.x up to its headers' minor");
  }
  memset(out, 0, sizeof(*out));
  out->size = sizeof(*out);
  out->abi_major = APH_ABI_MAJOR;
  out->abi_minor = min_u32(offer->max_minor, APH_ABI_MINOR);
  out->kind = APH_KIND_QUANT;
  out->name = "outoftree-f32";
  out->version = "1.0.0";
  out->description = "float32 linear layers, built out of tree";
  out->vtable = &kVtable;
  out->init = init;
  out->shutdown = shutdown_plugin;
  return APH_OK;
}
