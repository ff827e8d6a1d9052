// The pipelined tile GEMM's copy plan (plugins/quant-gguf/cuda/staged_copy.hpp)
// on the CPU: for every type it stages, each k step's 16-byte pieces are
// aligned, stay inside the device row that repack_rows built, and hold
// exactly the ggml bytes the step's elements decode from.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "plugins/quant-gguf/cuda/device_layout.hpp"
#include "plugins/quant-gguf/cuda/staged_copy.hpp"

using namespace aph::gguf;

namespace {

constexpr uint32_t kQ2_K = 10, kQ6_K = 14, kIQ4_XS = 23;

// Random bytes standing in for `rows` rows of ggml blocks (the plan moves
// bytes; their values do not matter).
std::vector<uint8_t> random_ggml(const DeviceLayout& l, int64_t rows, int64_t nb) {
  std::vector<uint8_t> v(static_cast<size_t>(rows * nb * l.block_bytes));
  std::mt19937 gen(11);
  for (auto& b : v) b = static_cast<uint8_t>(gen());
  return v;
}

// The copy of step s of device row `row` (nb blocks) as the kernel makes it:
// piece p of the plan at byte 16 p.
template <class Plan>
std::vector<uint8_t> stage(const uint8_t* row, uint64_t row_bytes, int nb, int s) {
  std::vector<uint8_t> copy(Plan::kBytes);
  for (int p = 0; p < Plan::kPieces; ++p) {
    const int at = Plan::base(nb, p) + Plan::step(nb, s, p);
    EXPECT_EQ(at % 16, 0) << "step " << s << " piece " << p;
    EXPECT_LE(static_cast<uint64_t>(at) + 16, row_bytes) << "step " << s << " piece " << p;
    if (at % 16 != 0 || static_cast<uint64_t>(at) + 16 > row_bytes) return {};
    std::memcpy(copy.data() + 16 * p, row + at, 16);
  }
  return copy;
}

struct Rows {
  DeviceLayout layout{};
  int nb = 0;
  std::vector<uint8_t> ggml, device;
  uint64_t row_bytes = 0;
};

Rows make_rows(uint32_t type, int64_t rows, int64_t k) {
  Rows r;
  EXPECT_TRUE(device_layout(type, &r.layout));
  r.nb = static_cast<int>(k / r.layout.block_elems);
  r.ggml = random_ggml(r.layout, rows, r.nb);
  r.row_bytes = device_row_bytes(r.layout, r.nb);
  r.device.resize(rows * r.row_bytes);
  repack_rows(r.layout, r.ggml.data(), rows, r.nb, r.device.data());
  return r;
}

// Whole-block types: the copy is the blocks that cover the step's 128
// elements, each as the device layout pads it.
template <int kBlock, int kStride>
void check_whole_blocks(uint32_t type) {
  using Plan = WholeBlockCopy<kBlock, kStride>;
  static_assert(Plan::kOk, "a staged type");
  for (int64_t k : {1024, 2304}) {
    if (k % kBlock != 0) continue;
    const int64_t rows = 3;
    const Rows r = make_rows(type, rows, k);
    ASSERT_EQ(r.layout.block_elems, static_cast<uint32_t>(kBlock)) << "type " << type;
    ASSERT_EQ(r.layout.stride, static_cast<uint32_t>(kStride)) << "type " << type;
    ASSERT_EQ(r.row_bytes % 16, 0u) << "type " << type << " k " << k;
    for (int64_t row = 0; row < rows; ++row) {
      for (int s = 0; s < k / kStagedStepK; ++s) {
        const auto copy = stage<Plan>(r.device.data() + row * r.row_bytes, r.row_bytes, r.nb, s);
        ASSERT_FALSE(copy.empty());
        const int first = Plan::first_block(s);
        ASSERT_LE(static_cast<int64_t>(first) * kBlock, s * kStagedStepK) << "type " << type << " step " << s;
        ASSERT_GE(static_cast<int64_t>(first + Plan::kBlocks) * kBlock, (s + 1) * kStagedStepK)
            << "type " << type << " step " << s;
        for (int b = 0; b < Plan::kBlocks; ++b) {
          const uint8_t* want = r.ggml.data() + (row * r.nb + first + b) * r.layout.block_bytes;
          ASSERT_EQ(0, std::memcmp(copy.data() + b * kStride + r.layout.front, want, r.layout.block_bytes))
              << "type " << type << " k " << k << " row " << row << " step " << s << " block " << b;
        }
      }
    }
  }
}

TEST(StagedCopy, WholeBlockTypesCopyTheStepsBlocks) {
  check_whole_blocks<32, 20>(2);     // Q4_0
  check_whole_blocks<32, 20>(3);     // Q4_1
  check_whole_blocks<32, 24>(6);     // Q5_0
  check_whole_blocks<32, 24>(7);     // Q5_1
  check_whole_blocks<32, 36>(8);     // Q8_0
  check_whole_blocks<256, 112>(11);  // Q3_K
  check_whole_blocks<256, 144>(12);  // Q4_K
  check_whole_blocks<256, 176>(13);  // Q5_K
  check_whole_blocks<32, 20>(20);    // IQ4_NL
}

// Q6_K's split rows: codes (ql, qh), scales and d of the step's block come
// from three regions of the row and land at 0, 192 and 208 + d_in_piece.
TEST(StagedCopy, Q6KGathersCodesScalesAndD) {
  for (int64_t k : {256, 2304, 4096}) {
    const int64_t rows = 3;
    const Rows r = make_rows(kQ6_K, rows, k);
    ASSERT_EQ(r.layout.stride, 0u);
    for (int64_t row = 0; row < rows; ++row) {
      for (int s = 0; s < k / kStagedStepK; ++s) {
        const auto copy = stage<Q6KCopy>(r.device.data() + row * r.row_bytes, r.row_bytes, r.nb, s);
        ASSERT_FALSE(copy.empty());
        const uint8_t* block = r.ggml.data() + (row * r.nb + s / 2) * r.layout.block_bytes;
        ASSERT_EQ(0, std::memcmp(copy.data(), block, 192)) << "k " << k << " row " << row << " step " << s;
        ASSERT_EQ(0, std::memcmp(copy.data() + 192, block + 192, 16)) << "k " << k << " row " << row << " step " << s;
        ASSERT_EQ(0, std::memcmp(copy.data() + 208 + Q6KCopy::d_in_piece(r.nb, s), block + 208, 2))
            << "k " << k << " row " << row << " step " << s;
      }
    }
  }
}

// The two layouts left to the other forms: their steps' bytes are not whole
// 16-byte pieces.
TEST(StagedCopy, UnalignedBlocksAreNotStaged) {
  DeviceLayout l{};
  ASSERT_TRUE(device_layout(kQ2_K, &l));
  EXPECT_FALSE((WholeBlockCopy<256, 84>::kOk));
  EXPECT_EQ(l.stride, 84u);
  ASSERT_TRUE(device_layout(kIQ4_XS, &l));
  EXPECT_FALSE((WholeBlockCopy<256, 136>::kOk));
  EXPECT_EQ(l.stride, 136u);
}

}  // namespace
