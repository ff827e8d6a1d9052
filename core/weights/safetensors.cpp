#include "core/weights/safetensors.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cstring>

#include "core/common/error.hpp"

namespace aph::weights {

namespace {

struct DtypeEntry {
  const char* name;
  int bits;
  int32_t aph;
};

constexpr DtypeEntry kDtypes[] = {
    {"BOOL", 8, -1},          {"U8", 8, APH_DTYPE_U8},       {"I8", 8, APH_DTYPE_I8},
    {"I16", 16, APH_DTYPE_I16}, {"U16", 16, -1},             {"F16", 16, APH_DTYPE_F16},
    {"BF16", 16, APH_DTYPE_BF16}, {"I32", 32, APH_DTYPE_I32}, {"U32", 32, APH_DTYPE_U32},
    {"F32", 32, APH_DTYPE_F32}, {"F64", 64, APH_DTYPE_F64},  {"I64", 64, APH_DTYPE_I64},
    {"U64", 64, -1},          {"C64", 64, -1},               {"F8_E4M3", 8, APH_DTYPE_F8_E4M3},
    {"F8_E5M2", 8, APH_DTYPE_F8_E5M2}, {"F8_E4M3FNUZ", 8, -1}, {"F8_E5M2FNUZ", 8, -1},
    {"F8_E8M0", 8, -1},       {"F4", 4, -1},                 {"F6_E2M3", 6, -1},
    {"F6_E3M2", 6, -1},
};

// The reference implementation caps the header at 100 MB.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

uint64_t checked_u64(const boost::json::value& v, const std::string& what) {
  if (v.is_uint64()) return v.as_uint64();
  if (v.is_int64() && v.as_int64() >= 0) return static_cast<uint64_t>(v.as_int64());
  throw invalid_argument(what + " is not a non-negative integer");
}

}  // namespace

int safetensors_dtype_bits(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return d.bits;
  return 0;
}

int32_t safetensors_dtype_to_aph(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return d.aph;
  return -1;
}

int64_t StoredTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  map_ = std::make_unique<MappedFile>(path);
  parse(map_->data(), map_->size());
}

SafetensorsFile::SafetensorsFile(const uint8_t* bytes, size_t size, const std::string& label)
    : path_(label) {
  parse(bytes, size);
}

void SafetensorsFile::parse(const uint8_t* bytes, size_t size) {
  const std::string where = path_ + ": ";
  if (size < 8) throw invalid_argument(where + "too short for a safetensors header");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  if (header_len > kMaxHeaderBytes) {
    throw invalid_argument(where + "header length " + std::to_string(header_len) + " exceeds 100 MB");
  }
  if (header_len > size - 8) {
    throw invalid_argument(where + "header length " + std::to_string(header_len) +
                           " runs past the end of the file (" + std::to_string(size) + " bytes)");
  }
  const uint8_t* buffer = bytes + 8 + header_len;
  const uint64_t buffer_len = size - 8 - header_len;

  boost::json::value root;
  try {
    root = boost::json::parse(
        std::string_view(reinterpret_cast<const char*>(bytes + 8), header_len));
  } catch (const std::exception& e) {
    throw invalid_argument(where + "header is not valid JSON: " + e.what());
  }
  if (!root.is_object()) throw invalid_argument(where + "header is not a JSON object");

  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [key, value] : root.as_object()) {
    std::string name(key);
    if (name == "__metadata__") {
      if (!value.is_object()) throw invalid_argument(where + "__metadata__ is not an object");
      for (const auto& [mk, mv] : value.as_object()) {
        if (!mv.is_string()) throw invalid_argument(where + "__metadata__." + std::string(mk) + " is not a string");
        metadata_[std::string(mk)] = std::string(mv.as_string());
      }
      continue;
    }
    const std::string at = where + "tensor '" + name + "': ";
    if (!value.is_object()) throw invalid_argument(at + "entry is not an object");
    const auto& obj = value.as_object();
    const auto* dtype = obj.if_contains("dtype");
    const auto* shape = obj.if_contains("shape");
    const auto* offsets = obj.if_contains("data_offsets");
    if (!dtype || !dtype->is_string()) throw invalid_argument(at + "missing or non-string dtype");
    if (!shape || !shape->is_array()) throw invalid_argument(at + "missing or non-array shape");
    if (!offsets || !offsets->is_array() || offsets->as_array().size() != 2) {
      throw invalid_argument(at + "data_offsets must be [begin, end]");
    }
    StoredTensor t;
    t.name = name;
    t.file = path_;
    t.dtype_name = std::string(dtype->as_string());
    int bits = safetensors_dtype_bits(t.dtype_name);
    if (bits == 0) throw invalid_argument(at + "unknown dtype " + t.dtype_name);
    t.dtype = safetensors_dtype_to_aph(t.dtype_name);
    // Overflow-safe element count: every real tensor is far below 2^62 bits.
    unsigned __int128 total_bits = static_cast<unsigned __int128>(bits);
    for (const auto& d : shape->as_array()) {
      uint64_t dim = checked_u64(d, at + "shape entry");
      if (dim > (uint64_t{1} << 62)) throw invalid_argument(at + "shape entry too large");
      t.shape.push_back(static_cast<int64_t>(dim));
      total_bits *= dim;
      if (total_bits > (static_cast<unsigned __int128>(1) << 70)) throw invalid_argument(at + "shape too large");
    }
    if (total_bits % 8 != 0) throw invalid_argument(at + "element count does not fill whole bytes");
    uint64_t expect = static_cast<uint64_t>(total_bits / 8);
    uint64_t begin = checked_u64(offsets->as_array()[0], at + "data_offsets[0]");
    uint64_t end = checked_u64(offsets->as_array()[1], at + "data_offsets[1]");
    if (begin > end) throw invalid_argument(at + "data_offsets begin > end");
    if (end > buffer_len) {
      throw invalid_argument(at + "data ends at byte " + std::to_string(end) + " but the data section has " +
                             std::to_string(buffer_len) + " bytes (truncated file?)");
    }
    if (end - begin != expect) {
      throw invalid_argument(at + "data_offsets span " + std::to_string(end - begin) + " bytes but " +
                             t.dtype_name + " of this shape needs " + std::to_string(expect));
    }
    t.data = buffer + begin;
    t.nbytes = expect;
    ranges.emplace_back(begin, end);
    tensors_.emplace(name, std::move(t));
  }
  // Like the reference validator: the tensors tile the data section exactly,
  // so no two tensors share bytes.
  std::sort(ranges.begin(), ranges.end());
  uint64_t cursor = 0;
  for (const auto& [b, e] : ranges) {
    if (b != cursor) {
      throw invalid_argument(where + (b < cursor ? "tensors overlap" : "gap between tensors") + " at byte " +
                             std::to_string(b));
    }
    cursor = e;
  }
  if (cursor != buffer_len) {
    throw invalid_argument(where + "data section has " + std::to_string(buffer_len - cursor) +
                           " bytes after the last tensor");
  }
}

}  // namespace aph::weights
