#include "plugins/quant-gguf/cpu/linear_cpu.hpp"

#include <string>

#include "core/common/error.hpp"
#include "plugins/quant-gguf/container/ggml_types.hpp"
#include "plugins/quant-gguf/cpu/dequant.hpp"
#include "plugins/quant-gguf/cpu/dot.hpp"

namespace aph::gguf {

namespace {
constexpr int64_t kFusedMaxRows = 12;
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
  // it for itself so chunks share nothing); then unpack each weight row once
  // and dot it with all M rows, so the weights stream through the cache once.
  std::vector<int8_t> xq(m * k_);
  std::vector<float> xd(m * k_ / 32), xs(m * k_ / 16);
  for (int64_t i = 0; i < m; ++i)
    kern.quantize_act(x + i * k_, xq.data() + i * k_, xd.data() + i * k_ / 32,
                      xs.data() + i * k_ / 16, k_);
  // Small batches of the hottest types read the blocks directly. Unpacking a
  // row costs about six fused dot products (measured on the 135M model's
  // shapes), so the fused kernels win up to about a dozen rows.
  if (auto fused = kern.block_dot(type_); fused && m <= kFusedMaxRows) {
    for (int64_t j = j0; j < j1; ++j)
      for (int64_t i = 0; i < m; ++i) {
        ActQ8 act{xq.data() + i * k_, xd.data() + i * k_ / 32, xs.data() + i * k_ / 16};
        y[i * n_ + j] = fused(weight_.data() + j * row_bytes_, act, k_);
      }
    return;
  }
  const int group = unpack_group(type_);
  auto dot = group == 16 ? kern.dot_g16 : kern.dot_g32;
  std::vector<int8_t> wq(k_);
  std::vector<float> wa(k_ / group), wb(k_ / group);
  auto dot4 = group == 16 ? kern.dot4_g16 : kern.dot4_g32;
  auto act = [&](int64_t i) { return ActQ8{xq.data() + i * k_, xd.data() + i * k_ / 32, xs.data() + i * k_ / 16}; };
  for (int64_t j = j0; j < j1; ++j) {
    unpack_row_i8(type_, weight_.data() + j * row_bytes_, wq.data(), wa.data(), wb.data(), k_);
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
      const ActQ8 acts[4] = {act(i), act(i + 1), act(i + 2), act(i + 3)};
      float out[4];
      dot4(wq.data(), wa.data(), wb.data(), acts, k_, out);
      for (int r = 0; r < 4; ++r) y[(i + r) * n_ + j] = out[r];
    }
    for (; i < m; ++i) y[i * n_ + j] = dot(wq.data(), wa.data(), wb.data(), act(i), k_);
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
