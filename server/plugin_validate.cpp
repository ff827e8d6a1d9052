#include "server/plugin_validate.hpp"

#include <cstring>
#include <set>
#include <string>

#include "aphrodite/api.h"
#include "aphrodite/lora.h"
#include "aphrodite/quant.h"
#include "aphrodite/sampler.h"

namespace aph::server {
namespace {

// ABI 1.0 sizes: the offset of each struct's last 1.0 field plus its size.
// Later minors append fields, so these stay the lower bounds for major 1.
constexpr uint32_t kQuantMin = offsetof(aph_quant_vtable, linear_destroy) + sizeof(void*);
constexpr uint32_t kSamplerMin = offsetof(aph_sampler_vtable, stages) + sizeof(void*);
constexpr uint32_t kStageMin = offsetof(aph_sampler_stage, apply) + sizeof(void*);
constexpr uint32_t kFieldMin = offsetof(aph_sampler_field, description) + sizeof(void*);
constexpr uint32_t kLoraMin = offsetof(aph_lora_vtable, close) + sizeof(void*);
constexpr uint32_t kApiMin = offsetof(aph_api_vtable, dialect) + sizeof(void*);

bool nonempty(const char* s) { return s != nullptr && s[0] != '\0'; }

std::string size_problem(const char* what, uint32_t got, uint32_t need) {
  return "bad vtable size " + std::to_string(got) + " for " + what + " (ABI 1.0 needs at least " +
         std::to_string(need) + ")";
}

std::string check_quant(const aph_quant_vtable* v) {
  if (v->size < kQuantMin) return size_problem("a quant plugin", v->size, kQuantMin);
  if (!nonempty(v->format_name)) return "quant vtable: format_name is empty";
  if (v->devices == nullptr) return "quant vtable: devices is NULL";
  if (v->probe == nullptr) return "quant vtable: probe is NULL";
  int source = (v->source_open != nullptr) + (v->source_metadata_json != nullptr) +
               (v->source_tensor_count != nullptr) + (v->source_tensor != nullptr) +
               (v->source_close != nullptr);
  if (source != 0 && source != 5) return "quant vtable: source_* functions are only partly set";
  int linear = (v->linear_create != nullptr) + (v->linear_forward != nullptr) +
               (v->linear_device_bytes != nullptr) + (v->linear_destroy != nullptr);
  if (linear != 0 && linear != 4) return "quant vtable: linear_* functions are only partly set";
  if (source == 0 && linear == 0) return "quant vtable: neither a model source nor linear layers";
  return "";
}

std::string check_sampler(const aph_sampler_vtable* v) {
  if (v->size < kSamplerMin) return size_problem("a sampler plugin", v->size, kSamplerMin);
  if (v->n_stages > 0 && v->stages == nullptr) return "sampler vtable: stages is NULL";
  if (v->n_stages > 4096) return "sampler vtable: n_stages " + std::to_string(v->n_stages);
  std::set<std::string> names;
  for (uint32_t i = 0; i < v->n_stages; ++i) {
    const aph_sampler_stage& s = v->stages[i];
    std::string where = "sampler stage " + std::to_string(i);
    if (s.size < kStageMin) return size_problem(where.c_str(), s.size, kStageMin);
    if (!nonempty(s.name)) return where + ": name is empty";
    where = "sampler stage '" + std::string(s.name) + "'";
    if (!names.insert(s.name).second) return where + ": duplicate stage name";
    if (s.row_create == nullptr || s.row_destroy == nullptr || s.apply == nullptr) {
      return where + ": row_create, row_destroy and apply are required";
    }
    if (s.n_fields > 0 && s.fields == nullptr) return where + ": fields is NULL";
    if (s.n_fields > 1024) return where + ": n_fields " + std::to_string(s.n_fields);
    for (uint32_t f = 0; f < s.n_fields; ++f) {
      const aph_sampler_field& field = s.fields[f];
      if (field.size < kFieldMin) return size_problem((where + " field").c_str(), field.size, kFieldMin);
      if (!nonempty(field.name)) return where + ": a field has an empty name";
      if (field.type < APH_FIELD_FLOAT || field.type > APH_FIELD_JSON) {
        return where + ": field '" + field.name + "' has unknown type " + std::to_string(field.type);
      }
    }
  }
  return "";
}

std::string check_lora(const aph_lora_vtable* v) {
  if (v->size < kLoraMin) return size_problem("a lora plugin", v->size, kLoraMin);
  if (!nonempty(v->format_name)) return "lora vtable: format_name is empty";
  if (v->probe == nullptr || v->open == nullptr || v->info_json == nullptr ||
      v->tensor_count == nullptr || v->tensor == nullptr || v->close == nullptr) {
    return "lora vtable: probe, open, info_json, tensor_count, tensor and close are required";
  }
  return "";
}

std::string check_api(const aph_api_vtable* v) {
  if (v->size < kApiMin) return size_problem("an api plugin", v->size, kApiMin);
  if (!nonempty(v->dialect)) return "api vtable: dialect is empty";
  return "";
}

}  // namespace

bool valid_plugin_name(const char* name) {
  if (name == nullptr) return false;
  size_t n = std::strlen(name);
  if (n == 0 || n > 64) return false;
  for (size_t i = 0; i < n; ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

std::string check_plugin_info(const aph_plugin_info& info) {
  if (!valid_plugin_name(info.name)) {
    return "invalid plugin name (1..64 characters of A-Z a-z 0-9 _ - .)";
  }
  if (info.vtable == nullptr) return "vtable is NULL";
  switch (info.kind) {
    case APH_KIND_QUANT: return check_quant(static_cast<const aph_quant_vtable*>(info.vtable));
    case APH_KIND_SAMPLER:
      return check_sampler(static_cast<const aph_sampler_vtable*>(info.vtable));
    case APH_KIND_LORA: return check_lora(static_cast<const aph_lora_vtable*>(info.vtable));
    case APH_KIND_API: return check_api(static_cast<const aph_api_vtable*>(info.vtable));
    default: return "unknown plugin kind " + std::to_string(info.kind);
  }
}

}  // namespace aph::server
