// How quantized blocks sit in GPU memory. The ggml block is copied unchanged
// apart from padding: `front` bytes before it and padding after it up to
// `stride`, so that every 32-bit field the kernels read is 4-byte aligned
// (ggml's 18/34/210-byte blocks only guarantee 2). Plain header: included by
// the .cu kernels and by host code.
#pragma once

#include <cstdint>
#include <cstring>

namespace aph::gguf {

struct DeviceLayout {
  uint32_t block_elems;
  uint32_t block_bytes;  // ggml size
  uint32_t front;        // padding before the block
  uint32_t stride;       // bytes per block on the device
};

// false for types without CUDA kernels (float types are not repacked).
inline bool device_layout(uint32_t type, DeviceLayout* out) {
  switch (type) {
    case 2: *out = {32, 18, 2, 20}; return true;     // Q4_0: d@2 qs@4
    case 3: *out = {32, 20, 0, 20}; return true;     // Q4_1
    case 6: *out = {32, 22, 2, 24}; return true;     // Q5_0: d@2 qh@4 qs@8
    case 7: *out = {32, 24, 0, 24}; return true;     // Q5_1
    case 8: *out = {32, 34, 2, 36}; return true;     // Q8_0: d@2 qs@4
    case 10: *out = {256, 84, 0, 84}; return true;   // Q2_K
    case 11: *out = {256, 110, 0, 112}; return true; // Q3_K
    case 12: *out = {256, 144, 0, 144}; return true; // Q4_K
    case 13: *out = {256, 176, 0, 176}; return true; // Q5_K
    case 14: *out = {256, 210, 0, 212}; return true; // Q6_K
    case 20: *out = {32, 18, 2, 20}; return true;    // IQ4_NL: d@2 qs@4
    case 23: *out = {256, 136, 0, 136}; return true; // IQ4_XS
    default: return false;
  }
}

// Copies n_blocks ggml blocks into the device layout (host side).
inline void repack_blocks(const DeviceLayout& l, const uint8_t* src, uint64_t n_blocks, uint8_t* dst) {
  for (uint64_t i = 0; i < n_blocks; ++i) {
    uint8_t* d = dst + i * l.stride;
    std::memset(d, 0, l.stride);
    std::memcpy(d + l.front, src + i * l.block_bytes, l.block_bytes);
  }
}

}  // namespace aph::gguf
