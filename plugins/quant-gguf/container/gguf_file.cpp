#include "plugins/quant-gguf/container/gguf_file.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <regex>
#include <unordered_map>

#include "core/common/error.hpp"
#include "core/common/mapped_file.hpp"
#include "plugins/quant-gguf/container/ggml_types.hpp"

namespace aph::gguf {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read little-endian
constexpr uint32_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;
constexpr size_t kMaxTensorName = 64;  // GGML_MAX_NAME, including the NUL
constexpr int kMaxArrayDepth = 8;       // nested arrays beyond this are hostile input

Error bad(const std::string& file, const std::string& what) {
  return invalid_argument("GGUF " + file + ": " + what);
}

// Bounds-checked little-endian reader over one file's bytes. Every length read
// from the file is checked against what remains before anything is allocated.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size, const std::string& file)
      : data_(data), size_(size), file_(file) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  void need(uint64_t n, const std::string& what) const {
    if (n > remaining())
      throw bad(file_, "truncated while reading " + what + " (need " + std::to_string(n) +
                           " bytes at offset " + std::to_string(pos_) + ", file has " +
                           std::to_string(size_) + ")");
  }

  template <typename T>
  T get(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  // The next u32 without consuming it; 0 when the file ends first (the
  // following read reports the truncation).
  uint32_t peek_u32() const {
    if (remaining() < 4) return 0;
    uint32_t v;
    std::memcpy(&v, data_ + pos_, 4);
    return v;
  }

  std::string string(const std::string& what) {
    uint64_t len = get<uint64_t>(what + " length");
    need(len, what);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& file_;
};

// Smallest encoding of one value of `type`, to bound counts read from the file.
uint64_t min_value_bytes(uint32_t type) {
  switch (type) {
    case kVU8: case kVI8: case kVBool: return 1;
    case kVU16: case kVI16: return 2;
    case kVU32: case kVI32: case kVF32: return 4;
    case kVU64: case kVI64: case kVF64: case kVString: return 8;
    case kVArray: return 12;
    default: return 0;
  }
}

boost::json::value read_value(Reader& r, uint32_t type, const std::string& file,
                              const std::string& key, int depth) {
  switch (type) {
    case kVU8: return boost::json::value(static_cast<uint64_t>(r.get<uint8_t>(key)));
    case kVI8: return boost::json::value(static_cast<int64_t>(r.get<int8_t>(key)));
    case kVU16: return boost::json::value(static_cast<uint64_t>(r.get<uint16_t>(key)));
    case kVI16: return boost::json::value(static_cast<int64_t>(r.get<int16_t>(key)));
    case kVU32: return boost::json::value(static_cast<uint64_t>(r.get<uint32_t>(key)));
    case kVI32: return boost::json::value(static_cast<int64_t>(r.get<int32_t>(key)));
    case kVU64: return boost::json::value(r.get<uint64_t>(key));
    case kVI64: return boost::json::value(r.get<int64_t>(key));
    case kVF32: return boost::json::value(static_cast<double>(r.get<float>(key)));
    case kVF64: return boost::json::value(r.get<double>(key));
    case kVBool: {
      uint8_t b = r.get<uint8_t>(key);
      if (b > 1) throw bad(file, "key '" + key + "': bool value " + std::to_string(b));
      return boost::json::value(b != 0);
    }
    case kVString: {
      std::string s = r.string("key '" + key + "' string");
      return boost::json::value(boost::json::string_view(s.data(), s.size()));
    }
    case kVArray: {
      if (depth >= kMaxArrayDepth) throw bad(file, "key '" + key + "': arrays nested too deeply");
      uint32_t elem = r.get<uint32_t>("key '" + key + "' array type");
      uint64_t count = r.get<uint64_t>("key '" + key + "' array count");
      uint64_t min = min_value_bytes(elem);
      if (min == 0)
        throw bad(file, "key '" + key + "': unknown array element type " + std::to_string(elem));
      if (count > r.remaining() / min)
        throw bad(file, "key '" + key + "': array count " + std::to_string(count) +
                            " exceeds the file size");
      boost::json::array arr;
      arr.reserve(count);
      for (uint64_t i = 0; i < count; ++i) arr.push_back(read_value(r, elem, file, key, depth + 1));
      return arr;
    }
    default:
      throw bad(file, "key '" + key + "': unknown value type " + std::to_string(type));
  }
}

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// One parsed file (a whole model or one split).
struct Parsed {
  uint32_t version = 0;
  boost::json::object metadata;
  std::map<std::string, KeyType, std::less<>> key_types;
  std::vector<TensorInfo> tensors;
  uint32_t alignment = kDefaultAlignment;
};

uint32_t read_alignment(const boost::json::object& md, const std::string& file) {
  auto it = md.find("general.alignment");
  if (it == md.end()) return kDefaultAlignment;
  const auto& v = it->value();
  uint64_t a = 0;
  if (v.is_uint64()) {
    a = v.get_uint64();
  } else if (v.is_int64() && v.get_int64() > 0) {
    a = static_cast<uint64_t>(v.get_int64());
  } else {
    throw bad(file, "key 'general.alignment' is not an unsigned integer");
  }
  if (a == 0 || (a & (a - 1)) != 0 || a > (1u << 30))
    throw bad(file, "key 'general.alignment' = " + std::to_string(a) + " is not a power of two");
  return static_cast<uint32_t>(a);
}

Parsed parse_one(const uint8_t* data, size_t size, const std::string& file, uint32_t file_index) {
  Reader r(data, size, file);
  Parsed p;
  uint32_t magic = r.get<uint32_t>("magic");
  if (magic != kMagic) throw bad(file, "bad magic (not a GGUF file)");
  p.version = r.get<uint32_t>("version");
  if ((p.version & 0xffffu) == 0 && p.version != 0)
    throw Error(APH_ERR_UNSUPPORTED, "GGUF " + file + ": big-endian files are not supported");
  if (p.version != 2 && p.version != 3)
    throw bad(file, "unsupported version " + std::to_string(p.version) + " (need 2 or 3)");
  uint64_t n_tensors = r.get<uint64_t>("tensor count");
  uint64_t n_kv = r.get<uint64_t>("metadata count");
  // A key/value takes at least 8+4+1 bytes, a tensor info at least 8+4+4+8 bytes.
  if (n_kv > r.remaining() / 13)
    throw bad(file, "metadata count " + std::to_string(n_kv) + " exceeds the file size");
  if (n_tensors > r.remaining() / 24)
    throw bad(file, "tensor count " + std::to_string(n_tensors) + " exceeds the file size");

  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = r.string("key #" + std::to_string(i));
    if (p.metadata.contains(key)) throw bad(file, "duplicate key '" + key + "'");
    uint32_t type = r.get<uint32_t>("key '" + key + "' type");
    KeyType kt;
    kt.type = static_cast<ValueType>(type);
    if (type == kVArray) kt.element = static_cast<ValueType>(r.peek_u32());
    p.metadata.emplace(key, read_value(r, type, file, key, 0));
    p.key_types.emplace(key, kt);
  }
  p.alignment = read_alignment(p.metadata, file);

  std::unordered_map<std::string, size_t> seen;
  p.tensors.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    t.name = r.string("tensor #" + std::to_string(i) + " name");
    const std::string where = "tensor '" + t.name + "'";
    if (t.name.size() >= kMaxTensorName)
      throw bad(file, where + ": name longer than " + std::to_string(kMaxTensorName - 1) + " bytes");
    if (!seen.emplace(t.name, i).second) throw bad(file, "duplicate " + where);
    uint32_t n_dims = r.get<uint32_t>(where + " rank");
    if (n_dims > kMaxDims) throw bad(file, where + ": rank " + std::to_string(n_dims) + " > 4");
    uint64_t numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t ne = r.get<uint64_t>(where + " shape");
      if (ne > static_cast<uint64_t>(INT64_MAX) || (ne != 0 && numel > static_cast<uint64_t>(INT64_MAX) / ne))
        throw bad(file, where + ": element count overflows");
      numel *= ne;
      t.ne.push_back(ne);
    }
    t.type = r.get<uint32_t>(where + " type");
    auto traits = type_traits(t.type);
    if (!traits) throw bad(file, where + ": unknown ggml type " + std::to_string(t.type));
    uint64_t ne0 = t.ne.empty() ? 1 : t.ne[0];
    if (ne0 % traits->block_elems != 0)
      throw bad(file, where + ": ne[0]=" + std::to_string(ne0) + " is not a multiple of the " +
                          std::string(traits->name) + " block size " +
                          std::to_string(traits->block_elems));
    uint64_t blocks = numel / traits->block_elems;
    if (blocks > UINT64_MAX / traits->block_bytes) throw bad(file, where + ": byte size overflows");
    t.nbytes = blocks * traits->block_bytes;
    t.offset = r.get<uint64_t>(where + " offset");
    if (t.offset % p.alignment != 0)
      throw bad(file, where + ": offset " + std::to_string(t.offset) + " is not aligned to " +
                          std::to_string(p.alignment));
    t.file_index = file_index;
    p.tensors.push_back(std::move(t));
  }

  uint64_t data_start = align_up(r.pos(), p.alignment);
  // A file cut inside the padding before its data section: even an empty
  // tensor would point past the end.
  if (!p.tensors.empty() && data_start > size)
    throw bad(file, "the file ends at byte " + std::to_string(size) + ", before its data section (byte " +
                        std::to_string(data_start) + ")");
  uint64_t data_size = data_start <= size ? size - data_start : 0;
  std::vector<const TensorInfo*> by_offset;
  for (auto& t : p.tensors) {
    if (t.offset > data_size || t.nbytes > data_size - t.offset)
      throw bad(file, "tensor '" + t.name + "': data [" + std::to_string(t.offset) + ", +" +
                          std::to_string(t.nbytes) + ") lies outside the data section of " +
                          std::to_string(data_size) + " bytes");
    t.data = data + data_start + t.offset;
    by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo* prev = by_offset[i - 1];
    if (prev->offset + prev->nbytes > by_offset[i]->offset)
      throw bad(file, "tensor '" + by_offset[i]->name + "' overlaps tensor '" + prev->name + "'");
  }
  return p;
}

std::optional<uint64_t> uint_key(const boost::json::object& md, std::string_view key,
                                 const std::string& file) {
  auto it = md.find(key);
  if (it == md.end()) return std::nullopt;
  const auto& v = it->value();
  if (v.is_uint64()) return v.get_uint64();
  if (v.is_int64() && v.get_int64() >= 0) return static_cast<uint64_t>(v.get_int64());
  throw bad(file, "key '" + std::string(key) + "' is not a non-negative integer");
}

class GgufFileImpl final : public GgufFile {
 public:
  GgufFileImpl(std::string path, Parsed first) : path_(std::move(path)), p_(std::move(first)) {}

  void add_mapping(std::unique_ptr<MappedFile> m) { maps_.push_back(std::move(m)); }

  void add_split(Parsed split) {
    for (auto& t : split.tensors) p_.tensors.push_back(std::move(t));
  }

  void index(const std::string& file) {
    for (size_t i = 0; i < p_.tensors.size(); ++i)
      if (!by_name_.emplace(p_.tensors[i].name, i).second)
        throw bad(file, "tensor '" + p_.tensors[i].name + "' appears in two splits");
  }

  uint32_t version() const override { return p_.version; }
  const boost::json::object& metadata() const override { return p_.metadata; }
  const std::vector<TensorInfo>& tensors() const override { return p_.tensors; }
  const TensorInfo* find(std::string_view name) const override {
    auto it = by_name_.find(std::string(name));
    return it == by_name_.end() ? nullptr : &p_.tensors[it->second];
  }
  const KeyType* key_type(std::string_view key) const override {
    auto it = p_.key_types.find(key);
    return it == p_.key_types.end() ? nullptr : &it->second;
  }
  uint32_t alignment() const override { return p_.alignment; }
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  Parsed p_;
  std::vector<std::unique_ptr<MappedFile>> maps_;
  std::unordered_map<std::string, size_t> by_name_;
};

std::string split_path(const std::string& prefix, uint64_t no, uint64_t count) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "-%05llu-of-%05llu.gguf", static_cast<unsigned long long>(no),
                static_cast<unsigned long long>(count));
  return prefix + buf;
}

}  // namespace

std::unique_ptr<GgufFile> GgufFile::parse(const uint8_t* data, size_t size,
                                          const std::string& name) {
  auto f = std::make_unique<GgufFileImpl>(name, parse_one(data, size, name, 0));
  f->index(name);
  return f;
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
  auto map = std::make_unique<MappedFile>(path);
  Parsed first = parse_one(map->data(), map->size(), path, 0);
  uint64_t count = uint_key(first.metadata, "split.count", path).value_or(1);
  uint64_t no = uint_key(first.metadata, "split.no", path).value_or(0);
  std::optional<uint64_t> declared_tensors = uint_key(first.metadata, "split.tensors.count", path);
  auto f = std::make_unique<GgufFileImpl>(path, std::move(first));
  f->add_mapping(std::move(map));
  if (count > 1) {
    if (no != 0) throw bad(path, "is split " + std::to_string(no + 1) + " of " +
                                     std::to_string(count) + "; open the first split");
    static const std::regex kSplitName(R"((.*)-(\d{5})-of-(\d{5})\.gguf)");
    std::smatch m;
    if (!std::regex_match(path, m, kSplitName))
      throw bad(path, "split.count=" + std::to_string(count) +
                          " but the name does not follow <prefix>-00001-of-0000N.gguf");
    if (count > 9999 || std::stoull(m[3].str()) != count)
      throw bad(path, "split.count=" + std::to_string(count) + " disagrees with the file name");
    for (uint64_t i = 1; i < count; ++i) {
      std::string part = split_path(m[1].str(), i + 1, count);
      auto pm = std::make_unique<MappedFile>(part);
      Parsed sp = parse_one(pm->data(), pm->size(), part, static_cast<uint32_t>(i));
      if (uint_key(sp.metadata, "split.no", part).value_or(UINT64_MAX) != i)
        throw bad(part, "key 'split.no' should be " + std::to_string(i));
      if (uint_key(sp.metadata, "split.count", part).value_or(0) != count)
        throw bad(part, "key 'split.count' disagrees with the first split");
      f->add_split(std::move(sp));
      f->add_mapping(std::move(pm));
    }
  }
  f->index(path);
  if (declared_tensors && *declared_tensors != f->tensors().size())
    throw bad(path, "key 'split.tensors.count' = " + std::to_string(*declared_tensors) +
                        " but the splits hold " + std::to_string(f->tensors().size()) + " tensors");
  return f;
}

}  // namespace aph::gguf
