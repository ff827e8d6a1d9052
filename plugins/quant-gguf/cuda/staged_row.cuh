// StagedRow<TYPE>: the copy plan of staged_copy.hpp for a ggml type, and
// chunk(copy, nb, s, c, Chunk&), which decodes chunk c (0-3) of step s from
// a row's copy in shared memory with the same decoders (decode.cuh) as
// every other path. Types without a plan have kOk false.
#pragma once

#include <stdint.h>

#include <type_traits>

#include "plugins/quant-gguf/cuda/decode.cuh"
#include "plugins/quant-gguf/cuda/staged_copy.hpp"

namespace aph::gguf::cuda {

template <int TYPE, typename = void>
struct StagedRow {
  static constexpr bool kOk = false;
};

template <int TYPE>
struct StagedRow<TYPE, std::enable_if_t<!IsSplit<Decoder<TYPE>>::value>>
    : WholeBlockCopy<Decoder<TYPE>::kBlock, Decoder<TYPE>::kStride> {
  using D = Decoder<TYPE>;
  using Plan = WholeBlockCopy<D::kBlock, D::kStride>;
  static constexpr int kChunksPerBlock = D::kBlock / 32;
  __device__ static void chunk(const uint8_t* copy, int, int s, int c, Chunk& ch) {
    const int cc = s * (kStagedStepK / 32) + c;  // the chunk's index in the row
    D::chunk(copy + (cc / kChunksPerBlock - Plan::first_block(s)) * D::kStride, cc % kChunksPerBlock, ch);
  }
};

template <>
struct StagedRow<14> : Q6KCopy {
  static_assert(Decoder<14>::kBlock == 2 * kStagedStepK, "a step is half a block");
  __device__ static void chunk(const uint8_t* copy, int nb, int s, int c, Chunk& ch) {
    const float d = ld_f16(copy + kCodes + 16 + d_in_piece(nb, s));
    Decoder<14>::chunk_at(copy, reinterpret_cast<const int8_t*>(copy + kCodes), d, (s % 2) * 4 + c, ch);
  }
};

}  // namespace aph::gguf::cuda
