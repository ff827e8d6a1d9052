// The CPU implementation of paged_attention: the reference every other
// backend is compared against, and what a machine without a GPU runs.
#pragma once

#include "core/attention/paged_attention.hpp"

namespace aph::attention {

// Both expect arguments already checked by paged_attention (shapes, dtypes);
// they check the index data (slots, block tables, lengths) themselves.
void write_kv_cache_cpu(const PagedAttentionArgs& args);
void attention_cpu(const PagedAttentionArgs& args);

// How a call's key splits (kSplitKeys positions each) become work items. The
// result is the same bits either way (the tests check it); kAuto takes
// separate items only when there are too few (sequence, KV head) units to
// fill the threads, as in a decode of a few sequences.
enum class CpuSplitWork { kAuto, kApart, kInOrder };
void attention_cpu(const PagedAttentionArgs& args, CpuSplitWork work);

}  // namespace aph::attention
