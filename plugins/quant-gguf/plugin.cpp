// The GGUF quant plugin: entry point and the aph_quant_vtable shims. Every
// shim converts exceptions into an aph_status (aph::guard); nothing here
// starts threads, and CUDA work runs only on the stream given.
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "aphrodite/quant.h"
#include "core/common/error.hpp"
#include "plugins/quant-gguf/cuda/cuda_linear.hpp"
#include "plugins/quant-gguf/linear.hpp"
#include "plugins/quant-gguf/model_source.hpp"
#include "plugins/quant-gguf/plugin_state.hpp"

#include <boost/json.hpp>

struct aph_model_source {
  std::unique_ptr<aph::gguf::ModelSource> impl;
};
struct aph_quant_linear {
  std::unique_ptr<aph::gguf::Linear> impl;
};

namespace aph::gguf {

namespace {

bool has_gguf_magic(const char* path) {
  if (!path) return false;
  std::FILE* f = std::fopen(path, "rb");
  if (!f) return false;
  char magic[4] = {0, 0, 0, 0};
  size_t got = std::fread(magic, 1, 4, f);
  std::fclose(f);
  return got == 4 && std::memcmp(magic, "GGUF", 4) == 0;
}

aph_status probe(void*, const aph_checkpoint_desc* ck, float* score, aph_error* err) {
  return guard(err, [&] {
    if (!score) throw invalid_argument("probe: score is NULL");
    *score = 0.0f;
    // Unrelated inputs (directories, other formats, unreadable paths) score 0.
    if (ck && ck->size >= sizeof(aph_checkpoint_desc) && has_gguf_magic(ck->path)) *score = 100.0f;
  });
}

aph_status source_open(void* state, const aph_checkpoint_desc* ck, aph_model_source** out, aph_error* err) {
  return guard(err, [&] {
    if (!ck || !ck->path || !out) throw invalid_argument("source_open: missing checkpoint or output");
    auto src = std::make_unique<aph_model_source>();
    src->impl = std::make_unique<ModelSource>(ck->path);
    auto* st = static_cast<PluginState*>(state);
    if (st)
      st->log(APH_LOG_INFO, "opened " + std::string(ck->path) + ": " +
                                std::to_string(src->impl->tensor_count()) + " tensors, GGUF v" +
                                std::to_string(src->impl->file().version()));
    *out = src.release();
  });
}

const char* source_metadata_json(aph_model_source* s) {
  return s ? s->impl->metadata_json().c_str() : nullptr;
}

uint64_t source_tensor_count(aph_model_source* s) { return s ? s->impl->tensor_count() : 0; }

aph_status source_tensor(aph_model_source* s, uint64_t index, aph_weight_info* out, aph_error* err) {
  return guard(err, [&] {
    if (!s || !out) throw invalid_argument("source_tensor: NULL argument");
    if (out->size != 0 && out->size < sizeof(aph_weight_info))
      throw Error(APH_ERR_VERSION, "source_tensor: aph_weight_info is older than this plugin");
    *out = s->impl->tensor(index);
  });
}

void source_close(aph_model_source* s) { delete s; }

aph_status linear_create(void* state, const aph_linear_desc* desc, aph_quant_linear** out, aph_error* err) {
  return guard(err, [&] {
    if (!state || !desc || !out) throw invalid_argument("linear_create: NULL argument");
    if (desc->size < sizeof(aph_linear_desc)) throw Error(APH_ERR_VERSION, "linear_create: descriptor too old");
    auto lin = std::make_unique<aph_quant_linear>();
    lin->impl = std::make_unique<Linear>(*static_cast<PluginState*>(state), *desc);
    *out = lin.release();
  });
}

aph_status linear_forward(aph_quant_linear* l, const aph_tensor* x, aph_tensor* y, aph_stream stream,
                          aph_error* err) {
  return guard(err, [&] {
    if (!l || !x || !y) throw invalid_argument("linear_forward: NULL argument");
    l->impl->forward(*x, *y, stream);
  });
}

aph_status linear_get_rows(aph_quant_linear* l, const aph_tensor* ids, aph_tensor* out, aph_stream stream,
                           aph_error* err) {
  return guard(err, [&] {
    if (!l || !ids || !out) throw invalid_argument("linear_get_rows: NULL argument");
    l->impl->get_rows(*ids, *out, stream);
  });
}

aph_status linear_forward_shared(aph_quant_linear* const* ls, uint32_t n, const aph_tensor* x, aph_tensor* ys,
                                 aph_stream stream, aph_error* err) {
  return guard(err, [&] {
    if (!ls || !x || !ys) throw invalid_argument("linear_forward_shared: NULL argument");
    std::vector<Linear*> group;
    for (uint32_t i = 0; i < n; ++i) {
      if (!ls[i]) throw invalid_argument("linear_forward_shared: linear " + std::to_string(i) + " is NULL");
      group.push_back(ls[i]->impl.get());
    }
    Linear::forward_shared(group, *x, ys, stream);
  });
}

aph_status linear_forward_silu_mul(aph_quant_linear* l, const aph_tensor* gate, const aph_tensor* up, aph_tensor* y,
                                   aph_stream stream, aph_error* err) {
  bool done = false;
  const aph_status st = guard(err, [&] {
    if (!l || !gate || !up || !y) throw invalid_argument("linear_forward_silu_mul: NULL argument");
    done = l->impl->forward_silu_mul(*gate, *up, *y, stream);
  });
  if (st != APH_OK) return st;
  return done ? APH_OK : APH_ERR_UNSUPPORTED;  // not taken: the host runs silu_mul and linear_forward
}

aph_status linear_forward_shared_rms_norm(aph_quant_linear* const* ls, uint32_t n, const aph_rms_norm_input* in,
                                          aph_tensor* ys, aph_stream stream, aph_error* err) {
  bool done = false;
  const aph_status st = guard(err, [&] {
    if (!ls || !in || !ys || n == 0) throw invalid_argument("linear_forward_shared_rms_norm: NULL argument");
    std::vector<Linear*> group;
    for (uint32_t i = 0; i < n; ++i) {
      if (!ls[i]) throw invalid_argument("linear_forward_shared_rms_norm: linear " + std::to_string(i) + " is NULL");
      group.push_back(ls[i]->impl.get());
    }
    done = Linear::forward_shared_rms_norm(group, *in, ys, stream);
  });
  if (st != APH_OK) return st;
  return done ? APH_OK : APH_ERR_UNSUPPORTED;  // not taken: the host norms x and calls linear_forward_shared
}

aph_status linear_forward_qkv_rope_kv(aph_quant_linear* const* ls, const aph_rms_norm_input* in, aph_tensor* q_out,
                                      const aph_rope_kv_store* kv, aph_stream stream, aph_error* err) {
  bool done = false;
  const aph_status st = guard(err, [&] {
    if (!ls || !in || !q_out || !kv) throw invalid_argument("linear_forward_qkv_rope_kv: NULL argument");
    std::vector<Linear*> group;
    for (uint32_t i = 0; i < 3; ++i) {
      if (!ls[i]) throw invalid_argument("linear_forward_qkv_rope_kv: linear " + std::to_string(i) + " is NULL");
      group.push_back(ls[i]->impl.get());
    }
    done = Linear::forward_qkv_rope_kv(group, *in, *q_out, *kv, stream);
  });
  if (st != APH_OK) return st;
  return done ? APH_OK : APH_ERR_UNSUPPORTED;  // not taken: the host projects, rotates and writes the KV itself
}

uint64_t linear_device_bytes(aph_quant_linear* l) { return l ? l->impl->device_bytes() : 0; }

void linear_destroy(aph_quant_linear* l) { delete l; }

const aph_quant_vtable kVtable = {
    sizeof(aph_quant_vtable),
    "gguf",
#ifdef APH_HAVE_CUDA
    "cpu,sm_80,sm_86,sm_89,sm_90",
#else
    "cpu",
#endif
    probe,
    source_open,
    source_metadata_json,
    source_tensor_count,
    source_tensor,
    source_close,
    linear_create,
    linear_forward,
    linear_get_rows,
    linear_device_bytes,
    linear_destroy,
    linear_forward_shared,
    linear_forward_silu_mul,
    linear_forward_shared_rms_norm,
    linear_forward_qkv_rope_kv,
};

aph_status init(const aph_host_services* services, void** state, aph_error* err) {
  return guard(err, [&] {
    if (!services || !state) throw invalid_argument("init: NULL argument");
    auto st = std::make_unique<PluginState>();
    st->services = services;
    if (services->config_json) {
      const char* text = services->config_json(services->host);
      boost::system::error_code ec;
      boost::json::value cfg = boost::json::parse(text ? text : "{}", ec);
      if (ec || !cfg.is_object()) throw invalid_argument("[plugins.gguf]: config is not a JSON object");
      if (const auto* v = cfg.as_object().if_contains("cpu_exact")) {
        if (!v->is_bool()) throw invalid_argument("[plugins.gguf] cpu_exact must be a boolean");
        st->cpu_exact = v->get_bool();
      }
    }
    *state = st.release();
  });
}

void shutdown(void* state) { delete static_cast<PluginState*>(state); }

}  // namespace

}  // namespace aph::gguf

extern "C" APH_EXPORT aph_status aph_plugin_entry(const aph_version_offer* offer, aph_plugin_info* out,
                                                  aph_error* err) {
  return aph::guard(err, [&] {
    if (!offer || !out) throw aph::invalid_argument("aph_plugin_entry: NULL argument");
    if (offer->major != APH_ABI_MAJOR || offer->min_minor > APH_ABI_MINOR)
      throw aph::Error(APH_ERR_VERSION, "the GGUF plugin speaks ABI " + std::to_string(APH_ABI_MAJOR) +
                                            "." + std::to_string(APH_ABI_MINOR));
    aph_plugin_info info{};
    info.size = sizeof(info);
    info.abi_major = APH_ABI_MAJOR;
    info.abi_minor = APH_ABI_MINOR;
    info.kind = APH_KIND_QUANT;
    info.name = "gguf";
    info.version = "0.1.0";
    info.description = "GGUF container and ggml quant types (CPU + CUDA)";
    info.vtable = &aph::gguf::kVtable;
    info.init = aph::gguf::init;
    info.shutdown = aph::gguf::shutdown;
    *out = info;
  });
}
