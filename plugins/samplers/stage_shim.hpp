// Turns a plugin-internal C++ stage (a struct with static members) into an
// aph_sampler_stage. The C ABI passes only plugin_state, so each stage gets its
// own instantiation of these shims; exceptions become status values here.
#pragma once

#include <memory>
#include <span>

#include "aphrodite/sampler.h"
#include "core/common/error.hpp"
#include "plugins/samplers/plugin_state.hpp"
#include "plugins/samplers/request.hpp"
#include "plugins/samplers/rows.hpp"

namespace aph::samplers {

// What a stage struct S provides:
//   static constexpr StageInfo info;
//   static std::span<const aph_sampler_field> fields();
//   using Params = ...;
//   static std::unique_ptr<Params> create(const Request&, const PluginState&);  // null = off
//   static void apply_cpu(PluginState&, std::span<const CpuRow<Params>> rows);
//   optionally: static void apply_cuda(PluginState&, const aph_sampler_batch&, aph_stream);
struct StageInfo {
  const char* name;
  const char* priority_aliases;
  int32_t kobold_id;
  int32_t default_position;
  uint32_t flags;
  const char* field_aliases;
};

template <typename S>
concept HasCuda = requires(PluginState& st, const aph_sampler_batch& b, aph_stream s) {
  S::apply_cuda(st, b, s);
};

template <typename S>
aph_status stage_row_create(void* state, const char* request_json, void** params, aph_error* err) {
  return guard(err, [&] {
    *params = nullptr;
    Request request(request_json);
    std::unique_ptr<typename S::Params> p = S::create(request, *static_cast<PluginState*>(state));
    *params = p.release();
  });
}

template <typename S>
void stage_row_destroy(void* state, void* params) {
  delete static_cast<typename S::Params*>(params);
}

template <typename S>
aph_status stage_apply(void* state, const aph_sampler_batch* batch, aph_stream stream, aph_error* err) {
  return guard(err, [&] {
    PluginState& st = *static_cast<PluginState*>(state);
    check_batch(*batch, S::info.name);
    if (batch->logits.device != APH_DEVICE_CPU) {
      if constexpr (HasCuda<S>) {
        S::apply_cuda(st, *batch, stream);
        return;
      }
      // No kernel for this stage: run the CPU code on a host copy of the
      // rows that use it (correct, but it synchronizes the stream).
      run_on_host_copy(*batch, stream, [&](const aph_sampler_batch& host) {
        auto rows = cpu_rows<typename S::Params>(host);
        S::apply_cpu(st, std::span<const CpuRow<typename S::Params>>(rows));
      });
      return;
    }
    auto rows = cpu_rows<typename S::Params>(*batch);
    S::apply_cpu(st, std::span<const CpuRow<typename S::Params>>(rows));
  });
}

template <typename S>
aph_sampler_stage make_stage() {
  aph_sampler_stage s{};
  s.size = sizeof(aph_sampler_stage);
  s.name = S::info.name;
  s.priority_aliases = S::info.priority_aliases;
  s.kobold_id = S::info.kobold_id;
  s.default_position = S::info.default_position;
  s.flags = S::info.flags;
  std::span<const aph_sampler_field> f = S::fields();
  s.n_fields = static_cast<uint32_t>(f.size());
  s.fields = f.data();
  s.field_aliases = S::info.field_aliases;
  s.row_create = &stage_row_create<S>;
  s.row_destroy = &stage_row_destroy<S>;
  s.apply = &stage_apply<S>;
  return s;
}

// Field declaration helpers (NaN bound = unbounded).
constexpr double kUnbounded = __builtin_nan("");
constexpr aph_sampler_field field_float(const char* name, double def, double lo, double hi,
                                        const char* description) {
  return {sizeof(aph_sampler_field), name, APH_FIELD_FLOAT, def, nullptr, lo, hi, description};
}
constexpr aph_sampler_field field_int(const char* name, double def, double lo, double hi,
                                      const char* description) {
  return {sizeof(aph_sampler_field), name, APH_FIELD_INT, def, nullptr, lo, hi, description};
}
constexpr aph_sampler_field field_bool(const char* name, bool def, const char* description) {
  return {sizeof(aph_sampler_field), name, APH_FIELD_BOOL, def ? 1.0 : 0.0, nullptr, 0, 1, description};
}
constexpr aph_sampler_field field_other(const char* name, aph_field_type type, const char* def_json,
                                        const char* description) {
  return {sizeof(aph_sampler_field), name, type, 0.0, def_json, kUnbounded, kUnbounded, description};
}

}  // namespace aph::samplers
