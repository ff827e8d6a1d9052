// Launchers for the CUDA attention kernels; called from paged_attention.cpp
// after the arguments are checked. Plain header: no logging, no exceptions.
#pragma once

#include <cuda_runtime_api.h>

#include "core/attention/paged_attention.hpp"

namespace aph::attention::cuda {

// Stores this step's K/V (act dtype) into their cache slots; slots < 0 or past
// the cache are skipped (the host cannot check device-resident slot data).
// Also zeroes the decode's n_counters split counters (none when null). With
// args.rope set it first rotates q into args.rope.q_rot and k on its way into
// the cache (RoPE fused into the write).
cudaError_t launch_write_kv_cache(const PagedAttentionArgs& args, int32_t* counters,
                                  int64_t n_counters, cudaStream_t stream);

// Flash-decoding for sequences with q_len == 1: `splits` CTAs per (sequence,
// head group) each cover a slice of the context computed on the device from
// context_lens; with splits > 1 they leave partials in args.workspace and the
// last CTA of each group to finish (counted in `counters`, zeroed by the KV
// write before) merges them and sets its counter back to zero.
cudaError_t launch_decode(const PagedAttentionArgs& args, int splits, int32_t* counters,
                          cudaStream_t stream);

// The same contract as launch_decode, by decode_stream.cu's kernel: each
// warp streams its own tokens with no CTA barrier until the end. With
// `clusters` (a short sequence at small batch, decode_uses_clusters) its
// splits merge inside a thread block cluster where the GPU places one.
cudaError_t launch_decode_stream(const PagedAttentionArgs& args, int splits, int32_t* counters, bool clusters,
                                 cudaStream_t stream);

// The same contract again, by decode_mma.cu's kernel: each warp streams its
// own 16-token steps and multiplies them on tensor cores. cudaErrorNotSupported
// (nothing launched) for what it does not take: a bf16 cache under f16
// activations, head sizes past 128 or not multiples of 16, blocks of fewer
// than 16 tokens, a GPU with too little shared memory a CTA
// (decode_mma_takes false).
cudaError_t launch_decode_mma(const PagedAttentionArgs& args, int splits, int32_t* counters, bool clusters,
                              cudaStream_t stream);
bool decode_mma_takes(const PagedAttentionArgs& args);

// Whether launch_decode gives this launch to the tensor-core kernel (its mode
// and decode_mma_takes), for the split plan's CTA target (split_plan.hpp).
bool decode_on_tensor_cores(const PagedAttentionArgs& args);

// Flash-attention-style tiles for sequences with q_len > 1 (tensor cores).
cudaError_t launch_prefill(const PagedAttentionArgs& args, cudaStream_t stream);

}  // namespace aph::attention::cuda
