#include "core/model/weight_source.hpp"

#include <cstring>
#include <sstream>

#include "core/common/error.hpp"
#include "core/common/tensor.hpp"

namespace aph::model {

aph_weight_info SourceTensor::info() const {
  aph_weight_info w{};
  w.size = sizeof(aph_weight_info);
  w.name = name.c_str();
  w.dtype = dtype;
  w.format_type = format_type;
  w.type_name = type_name.c_str();
  w.rank = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size() && i < APH_MAX_RANK; ++i) w.shape[i] = shape[i];
  w.data = data;
  w.nbytes = nbytes;
  return w;
}

int64_t SourceTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string SourceTensor::describe() const {
  std::ostringstream o;
  o << "'" << name << "' (" << type_name << " [";
  for (size_t i = 0; i < shape.size(); ++i) o << (i ? "," : "") << shape[i];
  o << "] in " << where << ")";
  return o.str();
}

const SourceTensor& WeightSource::get(const std::string& name) const {
  const SourceTensor* t = find(name);
  if (!t) throw invalid_argument(describe() + ": tensor '" + name + "' is missing");
  return *t;
}

namespace {

class HfSource : public WeightSource {
 public:
  explicit HfSource(const weights::HfCheckpoint& ck) : ck_(ck) {}
  const SourceTensor* find(const std::string& name) const override {
    auto it = cache_.find(name);
    if (it != cache_.end()) return &it->second;
    const weights::StoredTensor* t = ck_.find(name);
    if (!t) return nullptr;
    return &cache_.emplace(name, convert(*t)).first->second;
  }
  std::vector<const SourceTensor*> with_prefix(const std::string& prefix) const override {
    std::vector<const SourceTensor*> out;
    for (const auto* t : ck_.with_prefix(prefix)) out.push_back(find(t->name));
    return out;
  }
  std::string describe() const override { return ck_.dir(); }

 private:
  static SourceTensor convert(const weights::StoredTensor& t) {
    SourceTensor s;
    s.name = t.name;
    s.dtype = t.dtype;
    s.type_name = t.dtype_name;
    s.shape = t.shape;
    s.data = t.data;
    s.nbytes = t.nbytes;
    s.where = t.file;
    return s;
  }
  const weights::HfCheckpoint& ck_;
  mutable std::map<std::string, SourceTensor> cache_;
};

}  // namespace

std::unique_ptr<WeightSource> make_hf_source(const weights::HfCheckpoint& checkpoint) {
  return std::make_unique<HfSource>(checkpoint);
}

PluginSource::PluginSource(const LoadedQuantPlugin& plugin, const aph_checkpoint_desc& desc) : plugin_(plugin) {
  const aph_quant_vtable* vt = plugin.vtable;
  describe_ = std::string(desc.path) + " (via plugin " + plugin.name + ")";
  if (!vt->source_open || !vt->source_metadata_json || !vt->source_tensor_count || !vt->source_tensor ||
      !vt->source_close) {
    throw Error(APH_ERR_UNSUPPORTED, "plugin " + plugin.name + " is not a model source");
  }
  aph_error err{};
  err.size = sizeof(err);
  check(vt->source_open(plugin.state, &desc, &source_, &err), err, "plugin " + plugin.name + " cannot open " + desc.path);
  try {
    const char* meta = vt->source_metadata_json(source_);
    if (!meta) throw Error(APH_ERR_INTERNAL, describe_ + ": plugin returned no metadata");
    metadata_ = meta;
    const uint64_t count = vt->source_tensor_count(source_);
    for (uint64_t i = 0; i < count; ++i) {
      aph_weight_info w{};
      w.size = sizeof(w);
      check(vt->source_tensor(source_, i, &w, &err), err, describe_ + ": tensor #" + std::to_string(i));
      if (!w.name) throw Error(APH_ERR_INTERNAL, describe_ + ": tensor #" + std::to_string(i) + " has no name");
      if (w.rank < 0 || w.rank > APH_MAX_RANK) {
        throw invalid_argument(describe_ + ": tensor '" + w.name + "' has rank " + std::to_string(w.rank));
      }
      SourceTensor s;
      s.name = w.name;
      s.dtype = w.dtype;
      s.format_type = w.format_type;
      s.type_name = w.type_name ? w.type_name : (w.dtype >= 0 ? dtype_name(static_cast<aph_dtype>(w.dtype)) : "?");
      s.shape.assign(w.shape, w.shape + w.rank);
      s.data = w.data;
      s.nbytes = w.nbytes;
      s.where = desc.path;
      if (s.dtype >= 0 && (s.numel() < 0 || static_cast<uint64_t>(s.numel()) * dtype_size(static_cast<aph_dtype>(s.dtype)) != s.nbytes)) {
        throw invalid_argument(describe_ + ": tensor " + s.describe() + " has " + std::to_string(s.nbytes) +
                               " bytes, which does not match its shape");
      }
      tensors_.emplace(s.name, std::move(s));
    }
  } catch (...) {
    vt->source_close(source_);
    throw;
  }
}

PluginSource::~PluginSource() {
  if (source_) plugin_.vtable->source_close(source_);
}

const SourceTensor* PluginSource::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::vector<const SourceTensor*> PluginSource::with_prefix(const std::string& prefix) const {
  std::vector<const SourceTensor*> out;
  for (auto it = tensors_.lower_bound(prefix); it != tensors_.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    out.push_back(&it->second);
  }
  return out;
}

}  // namespace aph::model
