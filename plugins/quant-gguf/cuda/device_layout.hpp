// How quantized blocks sit in GPU memory, in one of two ways:
//
// - Whole blocks: the ggml block is copied unchanged apart from padding,
//   `front` bytes before it and padding after it up to `stride`, so that
//   every 32-bit field the kernels read is 4-byte aligned (ggml's 18/34-byte
//   blocks only guarantee 2). Row r starts at r * blocks_per_row * stride.
// - Split rows (stride 0): each block is cut into `n_parts` byte ranges and
//   a row stores range p of all its blocks together (region p), regions in
//   order, the row padded to 16 bytes. Q6_K's 210-byte block cannot be both
//   unpadded and 16-byte aligned; split, its 192 bytes of codes, 16 of scales
//   and 2 of d each sit in arrays the matvec reads with 16-byte loads, at no
//   extra bytes (padding a whole block to 224 would cost 7% of bandwidth).
//
// Plain header: included by the .cu kernels and by host code. The decoders
// (decode.cuh) and fast matvecs (vecdot.cuh) hard-code the same offsets.
#pragma once

#include <cstdint>
#include <cstring>

namespace aph::gguf {

struct BlockPart {
  uint16_t offset, bytes;  // a byte range of the ggml block
};

struct DeviceLayout {
  uint32_t block_elems;
  uint32_t block_bytes;  // ggml size
  uint32_t front;        // whole blocks: padding before the block
  uint32_t stride;       // whole blocks: bytes per block on the device; 0: split rows
  uint32_t n_parts;      // split rows: regions per row
  BlockPart parts[3];
};

// false for types without CUDA kernels (float types are not repacked).
inline bool device_layout(uint32_t type, DeviceLayout* out) {
  switch (type) {
    case 2:
      *out = {32, 18, 2, 20, 0, {}};
      return true;  // Q4_0: d@2 qs@4
    case 3:
      *out = {32, 20, 0, 20, 0, {}};
      return true;  // Q4_1
    case 6:
      *out = {32, 22, 2, 24, 0, {}};
      return true;  // Q5_0: d@2 qh@4 qs@8
    case 7:
      *out = {32, 24, 0, 24, 0, {}};
      return true;  // Q5_1
    case 8:
      *out = {32, 34, 2, 36, 0, {}};
      return true;  // Q8_0: d@2 qs@4
    case 10:
      *out = {256, 84, 0, 84, 0, {}};
      return true;  // Q2_K
    case 11:
      *out = {256, 110, 0, 112, 0, {}};
      return true;  // Q3_K
    case 12:
      *out = {256, 144, 0, 144, 0, {}};
      return true;  // Q4_K
    case 13:
      *out = {256, 176, 0, 176, 0, {}};
      return true;  // Q5_K
    case 14:        // Q6_K: ql+qh (192) @0, scales (16) @nb*192, d (2) @nb*208
      *out = {256, 210, 0, 0, 3, {{0, 192}, {192, 16}, {208, 2}}};
      return true;
    case 20:
      *out = {32, 18, 2, 20, 0, {}};
      return true;  // IQ4_NL: d@2 qs@4
    case 23:
      *out = {256, 136, 0, 136, 0, {}};
      return true;  // IQ4_XS
    default:
      return false;
  }
}

// Device bytes of one row of `blocks` blocks (rows follow each other).
inline uint64_t device_row_bytes(const DeviceLayout& l, uint64_t blocks) {
  if (l.stride) return blocks * l.stride;
  return (blocks * l.block_bytes + 15) / 16 * 16;
}

// Copies `rows` rows of `blocks_per_row` ggml blocks into the device layout
// (host side); dst holds rows * device_row_bytes(l, blocks_per_row) bytes.
inline void repack_rows(const DeviceLayout& l, const uint8_t* src, uint64_t rows,
                        uint64_t blocks_per_row, uint8_t* dst) {
  const uint64_t row_bytes = device_row_bytes(l, blocks_per_row);
  std::memset(dst, 0, rows * row_bytes);
  for (uint64_t r = 0; r < rows; ++r) {
    const uint8_t* s = src + r * blocks_per_row * l.block_bytes;
    uint8_t* d = dst + r * row_bytes;
    if (l.stride) {
      for (uint64_t i = 0; i < blocks_per_row; ++i)
        std::memcpy(d + i * l.stride + l.front, s + i * l.block_bytes, l.block_bytes);
      continue;
    }
    uint64_t region = 0;
    for (uint32_t p = 0; p < l.n_parts; ++p) {
      const BlockPart part = l.parts[p];
      for (uint64_t i = 0; i < blocks_per_row; ++i)
        std::memcpy(d + region + i * part.bytes, s + i * l.block_bytes + part.offset, part.bytes);
      region += blocks_per_row * part.bytes;
    }
  }
}

}  // namespace aph::gguf
