#include "plugins/quant-gguf/container/gguf_writer.hpp"

#include <cstring>

#include "core/common/error.hpp"
#include "plugins/quant-gguf/container/ggml_types.hpp"

namespace aph::gguf {

namespace {

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.insert(out.end(), b, b + sizeof(T));
}

void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

int64_t as_int(const boost::json::value& v, const std::string& key) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64()) return static_cast<int64_t>(v.get_uint64());
  if (v.is_bool()) return v.get_bool() ? 1 : 0;
  if (v.is_double()) return static_cast<int64_t>(v.get_double());
  throw invalid_argument("GGUF writer: key '" + key + "' needs a number");
}

double as_double(const boost::json::value& v, const std::string& key) {
  if (v.is_double()) return v.get_double();
  return static_cast<double>(as_int(v, key));
}

void put_value(std::vector<uint8_t>& out, ValueType type, ValueType element,
               const boost::json::value& v, const std::string& key) {
  switch (type) {
    case kVU8: put<uint8_t>(out, static_cast<uint8_t>(as_int(v, key))); break;
    case kVI8: put<int8_t>(out, static_cast<int8_t>(as_int(v, key))); break;
    case kVU16: put<uint16_t>(out, static_cast<uint16_t>(as_int(v, key))); break;
    case kVI16: put<int16_t>(out, static_cast<int16_t>(as_int(v, key))); break;
    case kVU32: put<uint32_t>(out, static_cast<uint32_t>(as_int(v, key))); break;
    case kVI32: put<int32_t>(out, static_cast<int32_t>(as_int(v, key))); break;
    case kVU64:
      put<uint64_t>(out, v.is_uint64() ? v.get_uint64() : static_cast<uint64_t>(as_int(v, key)));
      break;
    case kVI64: put<int64_t>(out, as_int(v, key)); break;
    case kVF32: put<float>(out, static_cast<float>(as_double(v, key))); break;
    case kVF64: put<double>(out, as_double(v, key)); break;
    case kVBool:
      if (!v.is_bool()) throw invalid_argument("GGUF writer: key '" + key + "' needs a bool");
      put<uint8_t>(out, v.get_bool() ? 1 : 0);
      break;
    case kVString:
      if (!v.is_string()) throw invalid_argument("GGUF writer: key '" + key + "' needs a string");
      put_string(out, std::string_view(v.get_string().data(), v.get_string().size()));
      break;
    case kVArray: {
      if (!v.is_array()) throw invalid_argument("GGUF writer: key '" + key + "' needs an array");
      const auto& arr = v.get_array();
      bool nested = !arr.empty() && arr[0].is_array();
      put<uint32_t>(out, nested ? kVArray : element);
      put<uint64_t>(out, arr.size());
      for (const auto& e : arr) put_value(out, nested ? kVArray : element, element, e, key);
      break;
    }
    default:
      throw invalid_argument("GGUF writer: key '" + key + "' has unknown type");
  }
}

}  // namespace

uint64_t tensor_nbytes(uint32_t ggml_type, const std::vector<uint64_t>& ne) {
  auto t = type_traits(ggml_type);
  if (!t) throw invalid_argument("unknown ggml type " + std::to_string(ggml_type));
  uint64_t n = 1;
  for (auto d : ne) n *= d;
  uint64_t ne0 = ne.empty() ? 1 : ne[0];
  if (ne0 % t->block_elems != 0)
    throw invalid_argument("ne[0]=" + std::to_string(ne0) + " is not a multiple of the " +
                           std::string(t->name) + " block size");
  return n / t->block_elems * t->block_bytes;
}

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
  if (alignment != 32) add_u32("general.alignment", alignment);
}

void GgufWriter::add_kv(const std::string& key, KeyType type, const boost::json::value& value) {
  put_string(kv_, key);
  put<uint32_t>(kv_, type.type);
  put_value(kv_, type.type, type.element, value, key);
  ++n_kv_;
}

uint64_t GgufWriter::add_tensor(const std::string& name, uint32_t ggml_type,
                                const std::vector<uint64_t>& ne) {
  Tensor t{name, ggml_type, ne, data_bytes_, tensor_nbytes(ggml_type, ne)};
  data_bytes_ += (t.nbytes + alignment_ - 1) / alignment_ * alignment_;
  tensors_.push_back(t);
  return t.offset;
}

std::vector<uint8_t> GgufWriter::header() const {
  std::vector<uint8_t> out;
  put<uint32_t>(out, 0x46554747);
  put<uint32_t>(out, 3);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, n_kv_);
  out.insert(out.end(), kv_.begin(), kv_.end());
  for (const auto& t : tensors_) {
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
    for (auto d : t.ne) put<uint64_t>(out, d);
    put<uint32_t>(out, t.type);
    put<uint64_t>(out, t.offset);
  }
  out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, 0);
  return out;
}

std::vector<uint8_t> GgufWriter::to_bytes(const std::vector<std::vector<uint8_t>>& data) const {
  if (data.size() != tensors_.size()) throw invalid_argument("GGUF writer: tensor count mismatch");
  std::vector<uint8_t> out = header();
  size_t base = out.size();
  out.resize(base + data_bytes_, 0);
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i].size() != tensors_[i].nbytes)
      throw invalid_argument("GGUF writer: tensor '" + tensors_[i].name + "' has " +
                             std::to_string(data[i].size()) + " bytes, expected " +
                             std::to_string(tensors_[i].nbytes));
    // An empty tensor's vector may hold no buffer at all (memcpy from null is UB).
    if (!data[i].empty()) std::memcpy(out.data() + base + tensors_[i].offset, data[i].data(), data[i].size());
  }
  return out;
}

}  // namespace aph::gguf
