// The CPU linear layer y[M,N] = x[M,K] · W[N,K]ᵀ (+ b) over ggml-typed weights.
// Quantized weights take the integer path (activations quantized to int8 per
// 32, as llama.cpp does) unless exact mode asks for the fp32 path, which
// dequantizes each weight row and runs fp32 dot products.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace aph::gguf {

// Splits [0, n) into chunks and runs body(begin, end) on each, possibly in
// parallel (the host's parallel_for); empty = one chunk on this thread.
using ParallelRows = std::function<void(int64_t n, const std::function<void(int64_t, int64_t)>& body)>;

class CpuLinear {
 public:
  // Copies `weight` (n rows of row_bytes each). bias may be empty.
  CpuLinear(uint32_t ggml_type, int64_t k, int64_t n, const uint8_t* weight,
            std::vector<float> bias, bool exact);

  void forward(const float* x, int64_t m, float* y, const ParallelRows& parallel = {}) const;
  // out[i,:] = W[ids[i],:] dequantized; ids are validated.
  void get_rows(const int32_t* ids, int64_t m, float* out) const;

  uint32_t type() const { return type_; }
  int64_t in_features() const { return k_; }
  int64_t out_features() const { return n_; }
  uint64_t row_bytes() const { return row_bytes_; }
  const uint8_t* weight() const { return weight_.data(); }

 private:
  void forward_float(const float* x, int64_t m, float* y, int64_t j0, int64_t j1) const;
  void forward_int8(const float* x, int64_t m, float* y, int64_t j0, int64_t j1) const;

  uint32_t type_;
  int64_t k_, n_;
  uint64_t row_bytes_;
  std::vector<uint8_t> weight_;
  std::vector<float> bias_;
  bool integer_path_;
};

}  // namespace aph::gguf
