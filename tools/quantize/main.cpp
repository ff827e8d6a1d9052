// aphrodite-quantize: HF safetensors (llama, mistral, qwen2/3; F32/F16/BF16,
// single or sharded) -> GGUF v3 in F16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K or
// the Q4_K_M mix. Tensors are split into row ranges quantized on all cores and
// written in place with pwrite, so an 8B model takes minutes, not hours.
//
//   aphrodite-quantize [--type Q4_K_M] [--threads N] [--vocab-from F.gguf]
//                      [--pre NAME] [--name NAME] HF_DIR OUT.gguf
//
// The tokenizer comes from HF_DIR/tokenizer.json when present, else from
// --vocab-from (its tokenizer.* keys are copied), else a synthetic byte-level
// vocabulary of vocab_size tokens is written so random-weight benchmark
// models load (text then encodes one byte per token).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "core/common/error.hpp"
#include "core/common/half.hpp"
#include "core/weights/hf_checkpoint.hpp"
#include "plugins/quant-gguf/container/ggml_types.hpp"
#include "plugins/quant-gguf/cpu/quantize.hpp"
#include "tools/quantize/plan.hpp"
#include "tools/quantize/tokenizer_keys.hpp"

namespace fs = std::filesystem;
using namespace aph;
using namespace aph::quantize;

namespace {

struct Options {
  std::string type = "Q4_K_M";
  std::string in, out, name;
  TokenizerOptions tok;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "%s\nusage: aphrodite-quantize [--type F16|Q8_0|Q4_0|Q4_1|Q4_K|Q5_K|Q6_K|Q4_K_M] [--threads N]\n"
               "                          [--vocab-from FILE.gguf] [--pre NAME] [--name NAME] HF_DIR OUT.gguf\n",
               why.c_str());
  std::exit(2);
}

Options parse_args(int argc, char** argv) {
  Options o;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value for " + a);
      return argv[++i];
    };
    if (a == "--type") o.type = value();
    else if (a == "--threads") o.threads = static_cast<unsigned>(std::max(1, std::atoi(value().c_str())));
    else if (a == "--vocab-from") o.tok.vocab_from = value();
    else if (a == "--pre") o.tok.pre = value();
    else if (a == "--name") o.name = value();
    else if (a == "-h" || a == "--help") usage("");
    else if (a.rfind("--", 0) == 0) usage("unknown option " + a);
    else pos.push_back(a);
  }
  if (pos.size() != 2) usage("need HF_DIR and OUT.gguf");
  o.in = pos[0];
  o.out = pos[1];
  o.tok.hf_dir = pos[0];
  return o;
}

// token_embd, blk.0 .. blk.N in numeric order, then the rest.
int64_t order_key(const std::string& name) {
  if (name.rfind("token_embd", 0) == 0) return -1;
  if (name.rfind("blk.", 0) == 0) return std::stoll(name.substr(4));
  return INT64_MAX;
}

// n source elements from element `first` on, as fp32.
void to_float_row(const weights::StoredTensor& t, int64_t first, int64_t n, float* out) {
  if (t.dtype == APH_DTYPE_F32) {
    std::memcpy(out, t.data + 4 * first, 4 * n);
    return;
  }
  const uint8_t* p = t.data + 2 * first;
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    out[i] = t.dtype == APH_DTYPE_F16 ? f16_to_f32(h) : bf16_to_f32(h);
  }
}

struct WorkItem {
  size_t tensor;
  int64_t row_begin, row_end;
};

void write_all(int fd, const std::vector<uint8_t>& bytes, uint64_t offset, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n <= 0) throw Error(APH_ERR_IO, "cannot write " + path);
    done += static_cast<size_t>(n);
  }
}

void run(const Options& o) {
  const auto t0 = std::chrono::steady_clock::now();
  Scheme scheme = parse_scheme(o.type);
  weights::HfCheckpoint ck(o.in);
  const std::string arch = gguf_arch(ck.config(), o.in);
  std::vector<TensorPlan> plans = plan_tensors(ck, arch, scheme);
  std::stable_sort(plans.begin(), plans.end(), [](const TensorPlan& a, const TensorPlan& b) {
    return order_key(a.gguf_name) < order_key(b.gguf_name);
  });

  gguf::GgufWriter w;
  add_model_keys(w, ck.config(), arch, scheme,
                 o.name.empty() ? fs::path(o.in).filename().string() : o.name);
  std::string tok_source = add_tokenizer_keys(w, ck.config(), o.tok);
  for (const auto& p : plans) w.add_tensor(p.gguf_name, p.type, p.ne);
  const std::vector<uint8_t> header = w.header();

  int fd = ::open(o.out.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(APH_ERR_IO, "cannot create " + o.out);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::ftruncate(fd, static_cast<off_t>(header.size() + w.data_bytes())) != 0)
    throw Error(APH_ERR_IO, "cannot size " + o.out);
  write_all(fd, header, 0, o.out);

  // Row ranges of ~4 MB of fp32 input each keep all threads busy on few large
  // tensors as well as on many small ones.
  std::vector<WorkItem> items;
  for (size_t i = 0; i < plans.size(); ++i) {
    const int64_t step = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, plans[i].cols));
    for (int64_t r = 0; r < plans[i].rows; r += step) items.push_back({i, r, std::min(plans[i].rows, r + step)});
  }
  std::atomic<size_t> next{0};
  std::mutex error_mutex;
  std::string error;
  auto worker = [&] {
    std::vector<float> row;
    std::vector<uint8_t> out;
    for (size_t k; (k = next.fetch_add(1)) < items.size();) {
      try {
        const WorkItem& it = items[k];
        const TensorPlan& p = plans[it.tensor];
        const uint64_t row_bytes = gguf::tensor_nbytes(p.type, {uint64_t(p.cols)});
        out.resize(row_bytes * (it.row_end - it.row_begin));
        row.resize(p.cols);
        for (int64_t r = it.row_begin; r < it.row_end; ++r) {
          if (p.source) {
            to_float_row(*p.source, p.source_row(r) * p.cols, p.cols, row.data());
          } else {
            std::copy(p.generated.begin(), p.generated.end(), row.begin());
          }
          gguf::quantize_row(p.type, row.data(), out.data() + (r - it.row_begin) * row_bytes, p.cols);
        }
        write_all(fd, out, header.size() + w.tensor_offset(it.tensor) + it.row_begin * row_bytes, o.out);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (error.empty()) error = e.what();
        next = items.size();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < o.threads; ++i) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  if (!error.empty()) throw Error(APH_ERR_INTERNAL, error);

  std::map<std::string, int> counts;
  for (const auto& p : plans) counts[std::string(gguf::type_traits(p.type)->name)]++;
  std::string mix;
  for (const auto& [t, n] : counts) mix += " " + t + ":" + std::to_string(n);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("wrote %s: %s, %zu tensors (%s), %.2f GB in %.1f s with %u threads; tokenizer: %s\n",
              o.out.c_str(), scheme.name.c_str(), plans.size(), mix.substr(1).c_str(),
              (header.size() + w.data_bytes()) / 1e9, secs, o.threads, tok_source.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse_args(argc, argv);
  try {
    run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "aphrodite-quantize: %s\n", e.what());
    std::error_code ec;
    fs::remove(o.out, ec);
    return 1;
  }
  return 0;
}
