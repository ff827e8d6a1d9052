#include "plugins/quant-gguf/cpu/linear_cpu.hpp"

#include <algorithm>
#include <string>

#include "core/common/error.hpp"
#include "plugins/quant-gguf/container/ggml_types.hpp"
#include "plugins/quant-gguf/cpu/dequant.hpp"
#include "plugins/quant-gguf/cpu/dot.hpp"

namespace aph::gguf {

namespace {
// gguf_cpu_bench: the direct kernel costs about the same per activation row
// at any batch, the unpacked one pays the unpacking of eight rows once per
// batch; they cross near 128 rows (Q4_1, Q4_K and Q6_K alike, this machine).
constexpr int64_t kDirectMaxRows = 64;
}  // namespace

CpuLinear::CpuLinear(uint32_t ggml_type, int64_t k, int64_t n, const uint8_t* weight,
                     std::vector<float> bias, bool exact)
    : type_(ggml_type), k_(k), n_(n), bias_(std::move(bias)) {
  auto traits = type_traits(ggml_type);
  if (!traits || !cpu_supported(ggml_type))
    throw Error(APH_ERR_UNSUPPORTED, "ggml type " + (traits ? std::string(traits->name)
                                                             : std::to_string(ggml_type)) +
                                         " has no CPU kernel");
  if (k <= 0 || n <= 0 || k % traits->block_elems != 0)
    throw invalid_argument("in_features " + std::to_string(k) + " is not a multiple of the " +
                           std::string(traits->name) + " block size");
  if (!bias_.empty() && static_cast<int64_t>(bias_.size()) != n)
    throw invalid_argument("bias has " + std::to_string(bias_.size()) + " elements, expected " +
                           std::to_string(n));
  row_bytes_ = static_cast<uint64_t>(k / traits->block_elems) * traits->block_bytes;
  weight_.assign(weight, weight + row_bytes_ * n);
  integer_path_ = !exact && !is_float_type(ggml_type);
}

void CpuLinear::forward(const float* x, int64_t m, float* y, const ParallelRows& parallel) const {
  if (m <= 0) return;
  // Output rows split across threads: each weight row is still read once.
  auto rows = [&](int64_t j0, int64_t j1) {
    if (integer_path_)
      forward_int8(x, m, y, j0, j1);
    else
      forward_float(x, m, y, j0, j1);
  };
  if (parallel)
    parallel(n_, rows);
  else
    rows(0, n_);
  if (!bias_.empty())
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n_; ++j) y[i * n_ + j] += bias_[j];
}

void CpuLinear::forward_float(const float* x, int64_t m, float* y, int64_t j0, int64_t j1) const {
  const DotKernels& kern = dot_kernels();
  std::vector<float> row(k_);
  for (int64_t j = j0; j < j1; ++j) {
    const float* w = reinterpret_cast<const float*>(weight_.data() + j * row_bytes_);
    if (type_ != kF32) {
      dequantize_row(type_, weight_.data() + j * row_bytes_, row.data(), k_);
      w = row.data();
    }
    for (int64_t i = 0; i < m; ++i) y[i * n_ + j] = kern.dot_f32(w, x + i * k_, k_);
  }
}

void CpuLinear::forward_int8(const float* x, int64_t m, float* y, int64_t j0, int64_t j1) const {
  const DotKernels& kern = dot_kernels();
  // Quantize every activation row (cheap next to the weights; each chunk does
  // it for itself so chunks share nothing); then take the weight rows eight
  // at a time against all m activation rows, so they stream through the
  // cache once.
  thread_local std::vector<int8_t> xq;
  thread_local std::vector<float> xd, xs;
  thread_local std::vector<int32_t> xsum;
  xq.resize(m * k_);
  xd.resize(m * k_ / 32);
  xs.resize(m * k_ / 16);
  xsum.resize(m * k_ / 16);
  std::vector<ActQ8> acts(m);
  for (int64_t i = 0; i < m; ++i) {
    kern.quantize_act(x + i * k_, xq.data() + i * k_, xd.data() + i * k_ / 32, xs.data() + i * k_ / 16,
                      xsum.data() + i * k_ / 16, k_);
    acts[i] = {xq.data() + i * k_, xd.data() + i * k_ / 32, xs.data() + i * k_ / 16, xsum.data() + i * k_ / 16};
  }
  // Batches up to kDirectMaxRows of the hottest types read the blocks
  // directly; larger ones (prefill) unpack eight rows once for all of them.
  // Both give the same bits (dot.hpp).
  const auto direct = m <= kDirectMaxRows ? kern.rows8_direct(type_) : nullptr;
  const int group = unpack_group(type_);
  thread_local std::vector<float> out;
  thread_local std::vector<int8_t> q8;
  thread_local std::vector<float> ab8;
  out.resize(m * 8);
  for (int64_t j = j0; j < j1; j += 8) {
    const int64_t valid = std::min<int64_t>(8, j1 - j);
    const uint8_t* rows[8];
    for (int64_t i = 0; i < 8; ++i) rows[i] = weight_.data() + std::min(j + i, j1 - 1) * row_bytes_;
    // The next eight rows start streaming in while these compute: a decode
    // step otherwise waits on memory at its first touch of each block
    // (engine decode +14 % on the 135M model, docs/PERFORMANCE.md).
    for (int64_t i = j + 8; i < std::min(j + 16, j1); ++i)
      for (uint64_t at = 0; at < row_bytes_; at += 64) __builtin_prefetch(weight_.data() + i * row_bytes_ + at);
    if (direct) {
      direct(rows, acts.data(), m, k_, out.data());
    } else {
      const int64_t groups = k_ / group;
      q8.resize(k_ * 8);
      ab8.resize(groups * 16);
      unpack_rows8(type_, rows, k_, q8.data(), ab8.data(), ab8.data() + groups * 8);
      kern.rows8(Rows8{q8.data(), ab8.data(), ab8.data() + groups * 8, group}, acts.data(), m, k_, out.data());
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t r = 0; r < valid; ++r) y[i * n_ + j + r] = out[i * 8 + r];
  }
}

void CpuLinear::get_rows(const int32_t* ids, int64_t m, float* out) const {
  for (int64_t i = 0; i < m; ++i) {
    if (ids[i] < 0 || ids[i] >= n_)
      throw invalid_argument("get_rows: id " + std::to_string(ids[i]) + " outside [0, " +
                             std::to_string(n_) + ")");
    dequantize_row(type_, weight_.data() + ids[i] * row_bytes_, out + i * k_, k_);
  }
}

}  // namespace aph::gguf
