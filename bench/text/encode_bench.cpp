// Single-thread encode throughput on English prose, beside the 5 MB/s target.
//
//   text_encode_bench [GGUF ...]
//
// Without arguments: the default model (models/SmolLM2-135M-Instruct.Q4_1.gguf)
// when present and every vocabulary in ../shared/fixtures/vocab/. The text
// is the repository's Markdown documents, repeated to 8 MB and encoded one
// paragraph at a time (as prompts arrive), with the word cache cold at first.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/text/tokenizer.hpp"
#include "plugins/quant-gguf/container/gguf_file.hpp"

namespace fs = std::filesystem;

namespace {

constexpr double kTargetMBps = 5.0;
constexpr size_t kCorpusBytes = 8u << 20;

// CPU time of this thread: the machine may be shared, and the target is
// per core, so wall-clock time would measure the neighbours.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> english_paragraphs(const fs::path& root) {
  std::vector<fs::path> docs;
  for (const fs::path& dir : {root / "docs", root / ".." / "shared" / "docs"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".md") docs.push_back(e.path());
  }
  if (fs::exists(root / "README.md")) docs.push_back(root / "README.md");
  std::sort(docs.begin(), docs.end());
  std::vector<std::string> paragraphs;
  for (const auto& d : docs) {
    const std::string text = read_file(d);
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find("\n\n", pos);
      if (end == std::string::npos) end = text.size();
      if (end > pos) paragraphs.push_back(text.substr(pos, end - pos + 1));
      pos = end + 2;
    }
  }
  return paragraphs;
}

std::unique_ptr<aph::text::Tokenizer> load(const std::string& path) {
  auto file = aph::gguf::GgufFile::open(path);
  boost::json::object tok;
  for (const auto& kv : file->metadata())
    if (kv.key().starts_with("tokenizer.") && !kv.key().starts_with("tokenizer.chat_template"))
      tok.emplace(kv.key(), kv.value());
  return aph::text::Tokenizer::from_gguf_metadata(tok);
}

void bench(const std::string& path, const std::vector<std::string>& paragraphs) {
  auto tok = load(path);
  size_t bytes = 0;
  size_t tokens = 0;
  size_t rounds = 0;
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = thread_cpu_seconds();
  double cold_mbps = 0;
  while (bytes < kCorpusBytes) {
    for (const auto& p : paragraphs) {
      tokens += tok->encode(p, {}).size();
      bytes += p.size();
    }
    if (++rounds == 1) cold_mbps = static_cast<double>(bytes) / 1e6 / (thread_cpu_seconds() - cpu_start);
  }
  const double cpu = thread_cpu_seconds() - cpu_start;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double mbps = static_cast<double>(bytes) / 1e6 / cpu;
  const double wall_mbps = static_cast<double>(bytes) / 1e6 / wall;
  std::printf("%-34s %6.2f MB/s  %5.2f x target  (first pass, cold word cache: %.2f MB/s; wall clock %.2f MB/s)"
              "  %.1f MB, %zu rounds, %.2f bytes/token\n",
              fs::path(path).filename().c_str(), mbps, mbps / kTargetMBps, cold_mbps, wall_mbps,
              static_cast<double>(bytes) / 1e6, rounds, static_cast<double>(bytes) / static_cast<double>(tokens));
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path root = fs::current_path();
  const auto paragraphs = english_paragraphs(root);
  if (paragraphs.empty()) {
    std::fprintf(stderr, "no Markdown documents under %s/docs: run from the repository root\n", root.c_str());
    return 2;
  }
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) models.push_back(argv[i]);
  if (models.empty()) {
    if (fs::exists(root / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"))
      models.push_back((root / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf").string());
    std::error_code ec;
    std::vector<std::string> fixtures;
    for (const auto& e : fs::directory_iterator(root / ".." / "shared" / "fixtures" / "vocab", ec))
      if (e.path().extension() == ".gguf") fixtures.push_back(e.path().string());
    std::sort(fixtures.begin(), fixtures.end());
    models.insert(models.end(), fixtures.begin(), fixtures.end());
  }
  std::printf("encode throughput, one thread (thread CPU time), English Markdown (%zu paragraphs)\n"
              "repeated to %.0f MB; target %.0f MB/s per core\n",
              paragraphs.size(), static_cast<double>(kCorpusBytes) / 1e6, kTargetMBps);
  try {
    for (const auto& m : models) bench(m, paragraphs);
  } catch (const aph::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
