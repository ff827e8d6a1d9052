// Pins the layout of what the samplers appended to sampler.h (ABI 1.0):
// appended fields only ever grow a struct at its end.
#include <gtest/gtest.h>

#include <cstddef>

#include "aphrodite/sampler.h"

TEST(SamplerAbi, VocabAndSetVocabOffsets) {
  static_assert(sizeof(void*) == 8, "offsets pinned for 64-bit hosts");
  EXPECT_EQ(offsetof(aph_sampler_vocab, size), 0u);
  EXPECT_EQ(offsetof(aph_sampler_vocab, n_tokens), 4u);
  EXPECT_EQ(offsetof(aph_sampler_vocab, token_bytes), 8u);
  EXPECT_EQ(offsetof(aph_sampler_vocab, token_lengths), 16u);
  EXPECT_EQ(offsetof(aph_sampler_vocab, eos_token_id), 24u);
  EXPECT_EQ(offsetof(aph_sampler_vocab, n_eog), 28u);
  EXPECT_EQ(offsetof(aph_sampler_vocab, eog_token_ids), 32u);
  EXPECT_EQ(sizeof(aph_sampler_vocab), 40u);
  EXPECT_EQ(offsetof(aph_sampler_vtable, stages), 8u);
  EXPECT_EQ(offsetof(aph_sampler_vtable, set_vocab), 16u);
  EXPECT_EQ(sizeof(aph_sampler_vtable), 24u);
  EXPECT_EQ(APH_SAMPLER_FIXED_POSITION, 8);
}
