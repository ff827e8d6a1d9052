// Launchers for the CUDA attention kernels; called from paged_attention.cpp
// after the arguments are checked. Plain header: no logging, no exceptions.
#pragma once

#include <cuda_runtime_api.h>

#include "core/attention/paged_attention.hpp"

namespace aph::attention::cuda {

// Stores this step's K/V (act dtype) into their cache slots; slots < 0 or past
// the cache are skipped (the host cannot check device-resident slot data).
cudaError_t launch_write_kv_cache(const PagedAttentionArgs& args, cudaStream_t stream);

// Flash-decoding for sequences with q_len == 1: `splits` CTAs per (sequence,
// head group) each cover a slice of the context computed on the device from
// context_lens; with splits > 1 a combine kernel merges their partials from
// args.workspace.
cudaError_t launch_decode(const PagedAttentionArgs& args, int splits, cudaStream_t stream);

// Flash-attention-style tiles for sequences with q_len > 1 (tensor cores).
cudaError_t launch_prefill(const PagedAttentionArgs& args, cudaStream_t stream);

}  // namespace aph::attention::cuda
