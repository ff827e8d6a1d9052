// The tile GEMM on Hopper's warpgroup MMA. A CTA is one warpgroup (four
// warps) and owns the same tile as tile_gemm.cu's: 64 W rows by 64 x rows,
// k steps of 128. What differs:
//
// - W never goes through shared memory. Each thread decodes exactly the W
//   values its A fragments hold: thread t of warp w takes chunk t % 4 (32
//   values) of the step for rows 16 w + t / 4 and + 8, and its packed pairs
//   2 kk and 2 kk + 1 are the fragment's two pairs of each k16 slice kk. The
//   mma.sync kernel decoded W into shared memory and read it back with
//   ldmatrix, because a fragment wants two values every 8 columns.
// - So the MMA's k slots hold the step's columns in another order (the
//   products' sum does not care), and x is laid out to match: x_slot_column
//   says which column each slot holds. A small kernel writes those images
//   of x (one per 64-row tile and k step, 16 KB, in the 8 x 16-byte core
//   matrices the tensor cores read) once per launch, shared by every W tile.
// - The tensor cores read x from shared memory themselves, once for the
//   warpgroup, where each of mma.sync's four warps read all of it; one
//   wgmma instruction does what 32 mma.sync and 40 ldmatrix did.
//
// Steps: the next step's image and W bytes (wgmma_w_stage.cuh) are copied
// (cp.async) while this one's W is decoded from shared memory and
// multiplied; the CTA waits for its MMAs at the end of a step. Four CTAs an
// SM (at most 128 registers, 48 KB of shared memory each).
#include "plugins/quant-gguf/cuda/tile_gemm_wgmma.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "core/common/cuda_async_copy.cuh"
#include "core/common/cuda_pdl.cuh"
#include "core/common/env_flag.hpp"
#include "plugins/quant-gguf/cuda/decode.cuh"
#include "plugins/quant-gguf/cuda/device_math.cuh"
#include "plugins/quant-gguf/cuda/wgmma.cuh"
#include "plugins/quant-gguf/cuda/wgmma_w_stage.cuh"

// wgmma exists only on sm_90a; CMake compiles this file for that target
// alone, and only where the build targets sm_90.
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "tile_gemm_wgmma.cu is sm_90a code only (plugins/quant-gguf/CMakeLists.txt)"
#endif

namespace aph::gguf::cuda {

namespace {

using tile::kBK;
using tile::kBM;
using tile::kBN;
using tile::kLdC;
using tile::kThreads;
using tile::TileTargets;

static_assert(kBM == 64 && kBN == 64 && kBK == 128 && kThreads == 128, "one warpgroup, m64n64k16 slices");

constexpr int kCoreBytes = 128;                           // 8 rows x 16 bytes
constexpr int kImageBytes = kBM * kBK * 2;                // one x tile of one step
constexpr uint32_t kLeadingBytes = kCoreBytes;            // next core matrix along k
constexpr uint32_t kStrideBytes = (kBK / 8) * kCoreBytes;  // next 8 rows of x
constexpr int kMinCtasPerSm = 4;

// The step column that k slot s (0..127) of the MMA holds. In slice
// kk = s / 16, slot t = s % 16 belongs to the fragment of thread q = t % 8 / 2
// (slots 2q, 2q + 1 its first pair, 2q + 8, 2q + 9 its second), and that
// thread's pairs of slice kk are columns 4 kk + 0, 1 and 4 kk + 2, 3 of its
// chunk q (step columns 32 q ..).
__host__ __device__ constexpr int x_slot_column(int s) {
  const int kk = s / 16, t = s % 16;
  return 32 * (t % 8 / 2) + 4 * kk + 2 * (t / 8) + t % 2;
}

// Every column of a step in exactly one slot (else a product would be lost
// or counted twice).
constexpr bool slots_are_a_permutation() {
  bool seen[kBK] = {};
  for (int s = 0; s < kBK; ++s) {
    const int c = x_slot_column(s);
    if (c < 0 || c >= kBK || seen[c]) return false;
    seen[c] = true;
  }
  return true;
}
static_assert(slots_are_a_permutation(), "x_slot_column must permute a step's columns");

// x [m, k] into images: image (tile mt, step s) holds x rows 64 mt .. and
// the columns of step s in slot order, as core matrices (row group g, slot
// group c) at (16 g + c) * 128 bytes, row r of one at + 16 r. Zeros past m
// and k. A thread per 16-byte piece (four column pairs; slot pairs are
// column pairs).
template <typename T>
__global__ void arrange_x_kernel(const T* __restrict__ x, int64_t m, int64_t k, int64_t steps, int64_t pieces,
                                 uint4* __restrict__ image) {
  // Launched as a dependent (wgmma_pdl()): the GEMM after it may launch at
  // once and copy its first W bytes while this runs.
  cuda_pdl::allow_dependents();
  cuda_pdl::wait_for_producer();
  const int64_t piece = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (piece >= pieces) return;
  constexpr int kPieces = kImageBytes / 16;
  const int64_t img = piece / kPieces;
  const int within = static_cast<int>(piece % kPieces);
  const int r = within % 8, c = within / 8 % 16, g = within / 128;
  const int64_t row = img / steps * kBM + 8 * g + r, col0 = img % steps * kBK;
  uint32_t v[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int64_t col = col0 + x_slot_column(8 * c + 2 * j);  // even; k is a multiple of 32
    v[j] = row < m && col < k ? *reinterpret_cast<const uint32_t*>(x + row * k + col) : 0u;
  }
  image[piece] = make_uint4(v[0], v[1], v[2], v[3]);
}

// What one warpgroup of a CTA computes: W rows n0 .. n0 + 63 of w (n rows),
// written to y (+ bias) or this split's partials.
template <typename T>
struct GroupTarget {
  const uint8_t* w;
  int64_t n, n0;
  const float* bias;
  T* y;
  float* partial;
};

// Bytes of one stage: x's image, then, with kStageW, the W bytes of the
// warpgroup's 64 rows (wgmma_w_stage.cuh).
template <int TYPE, bool kStageW>
constexpr int kStageBytes = kImageBytes + (kStageW ? kBN * wstage::kRowBytes<TYPE> : 0);

// kStageW (stage_w()): W decoded from the stage, else from global memory.
// One warpgroup a CTA: two sharing each step's x image (half the image
// copies a W row) lost on the H100, 8B Q4_K_M with 64 sequences, medians of
// 2 interleaved runs: 9335.0 against 9416.6 tok/s, and 9126.4 against
// 9170.5 (stop 40); removed at stop 42.
template <int TYPE, bool kStageW, typename T>
__device__ __forceinline__ void wgmma_tile_cta(const GroupTarget<T>& t, int64_t k, const uint8_t* __restrict__ images,
                                               int64_t m, int steps_per_split) {
  // Two stages (this step's, the next one's), in dynamic shared memory; the
  // fp32 results reuse them. This form (dynamic, addressed from one base)
  // measured faster than the static two-stage array it replaced, one
  // warpgroup a CTA both: H100, 8B Q4_K_M x64, medians of 3 interleaved
  // runs, 9413.4 against 9144.9 tok/s (stop 40; why was not profiled).
  constexpr int kStage = kStageBytes<TYPE, kStageW>;
  static_assert(sizeof(float) * kBM * kLdC <= 2 * kStage, "results must fit the stages");
  extern __shared__ __align__(128) uint8_t stage_s[];
  using D = Decoder<TYPE>;
  constexpr int kChunksPerBlock = D::kBlock / 32;
  // threadIdx.x % kThreads, not threadIdx.x, though a CTA is kThreads: with
  // the plain index the compiler emitted 64-bit index arithmetic and more
  // branches (SASS of the Q4_K kernel 1,416 instructions against 1,272).
  const int tid = threadIdx.x % kThreads, warp = tid / 32, lane = tid % 32, q = lane % 4;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kBM;
  const int64_t nb = k / D::kBlock, chunks = k / 32, rb = row_bytes<TYPE>(nb);
  const int64_t steps = (k + kBK - 1) / kBK;
  const int64_t s_begin = static_cast<int64_t>(blockIdx.z) * steps_per_split;
  const int64_t s_end = min(steps, s_begin + steps_per_split);
  // This thread's A rows (tile rows r_lo and r_lo + 8). Rows past n decode
  // row n - 1: their outputs are never written.
  const int r_lo = 16 * warp + lane / 4;
  const int64_t row = t.n0 + r_lo;
  const uint8_t* w_lo = t.w + min(row, t.n - 1) * rb;
  const uint8_t* w_hi = t.w + min(row + 8, t.n - 1) * rb;
  const uint8_t* my_images = images + static_cast<int64_t>(blockIdx.y) * steps * kImageBytes;
  constexpr int w_offset = kImageBytes;  // the W stage
  tile::Acc acc = {};

  auto stage = [&](int buf) { return stage_s + buf * kStage; };
  auto copy_image = [&](int64_t s, int buf) {
    const uint8_t* src = my_images + s * kImageBytes;
#pragma unroll
    for (int u = 0; u < kImageBytes / 16 / kThreads; ++u) {
      const int off = (u * kThreads + tid) * 16;
      cuda_async::cp_async_16(stage(buf) + off, src + off, 16);
    }
  };
  auto copy_w = [&](int64_t s, int buf) {
    if constexpr (kStageW)
      wstage::copy_step<TYPE, kThreads>(t.w, t.n, t.n0, rb, nb, s, stage(buf) + w_offset, tid);
  };
  // A: chunk q of the step for both rows, from global memory (a chunk past
  // k decodes the last one, which meets the image's zero columns) or, with
  // kStageW, from the stage (k-quant rows hold whole 256-value blocks, so
  // a step never passes k).
  auto decode_a = [&](int64_t s, int buf, Chunk& lo, Chunk& hi) {
    if constexpr (kStageW) {
      const uint8_t* w_s = stage(buf) + w_offset;
      wstage::decode<TYPE>(w_s + r_lo * wstage::kRowBytes<TYPE>, r_lo, s, q, lo);
      wstage::decode<TYPE>(w_s + (r_lo + 8) * wstage::kRowBytes<TYPE>, r_lo + 8, s, q, hi);
    } else {
      const int64_t c = min(s * 4 + q, chunks - 1);
      decode_chunk<TYPE>(w_lo, nb, c / kChunksPerBlock, static_cast<int>(c % kChunksPerBlock), lo);
      decode_chunk<TYPE>(w_hi, nb, c / kChunksPerBlock, static_cast<int>(c % kChunksPerBlock), hi);
    }
  };
  // W is no kernel's output: its first step's copies go out before the
  // wait for the kernel that wrote the images (launched as its dependent).
  if (s_begin < s_end) copy_w(s_begin, 0);
  cuda_pdl::wait_for_producer();
  if (s_begin < s_end) copy_image(s_begin, 0);
  cuda_async::cp_async_commit();

  for (int64_t s = s_begin; s < s_end; ++s) {
    const int buf = static_cast<int>((s - s_begin) & 1);
    Chunk lo, hi;
    // Unstaged, the decode's loads overlap the image's copy.
    if constexpr (!kStageW) decode_a(s, buf, lo, hi);
    cuda_async::cp_async_wait<0>();
    wgmma::fence_proxy_async();
    // Every thread's part of this stage has landed, and every thread is past
    // the previous step's MMAs and decode, which read the other buffer.
    __syncthreads();
    if (s + 1 < s_end) {
      copy_image(s + 1, buf ^ 1);
      copy_w(s + 1, buf ^ 1);
      cuda_async::cp_async_commit();
    }
    if constexpr (kStageW) decode_a(s, buf, lo, hi);

    // (Starting the MMAs of a step's first 64 columns before packing the
    // second half measured 8917.6 against 8904.0 tok/s, 8B Q4_K_M x64 on an
    // H100: noise.)
    uint32_t a_lo[16], a_hi[16];
    pack_chunk_for_gemm<TYPE, T>(lo, a_lo);
    pack_chunk_for_gemm<TYPE, T>(hi, a_hi);
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk) {
      // Pairs 2 kk, 2 kk + 1 of a chunk are the fragment's pairs of slice kk.
      const uint32_t a[4] = {a_lo[2 * kk], a_hi[2 * kk], a_lo[2 * kk + 1], a_hi[2 * kk + 1]};
      wgmma::mma_64x64x16<T>(acc, a,
                             wgmma::smem_desc(stage(buf) + 2 * kk * kCoreBytes, kLeadingBytes, kStrideBytes));
    }
    wgmma::commit_group();
    wgmma::wait_group<0>();
#pragma unroll
    for (int i = 0; i < 16; ++i) wgmma::keep(a_lo[i]), wgmma::keep(a_hi[i]);
#pragma unroll
    for (int j = 0; j < kBM / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) wgmma::keep(acc[j][e]);
  }
  // Only the results' write is left: a dependent next kernel may launch and
  // wait for them.
  cuda_pdl::allow_dependents();
  cuda_async::cp_async_wait<0>();
  __syncthreads();
  float* c_s = reinterpret_cast<float*>(stage_s);
  tile::stash_acc(acc, warp, lane, c_s);
  __syncthreads();
  tile::write_tile(c_s, m0, t.n0, m, t.n, t.bias, t.y, t.partial, tid, kThreads);
}

template <int TYPE, bool kStageW, typename T>
__global__ void __launch_bounds__(kThreads, kMinCtasPerSm)
    wgmma_tile_kernel(const uint8_t* __restrict__ w, int64_t n, int64_t k, const uint8_t* __restrict__ images,
                      int64_t m, const float* __restrict__ bias, T* __restrict__ y, float* __restrict__ partial,
                      int steps_per_split) {
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kBN;
  wgmma_tile_cta<TYPE, kStageW, T>({w, n, n0, bias, y, partial}, k, images, m, steps_per_split);
}

template <int TYPE, bool kStageW, typename T>
__global__ void __launch_bounds__(kThreads, kMinCtasPerSm)
    wgmma_tile_multi_kernel(const TileTargets targets, int64_t k, const uint8_t* __restrict__ images, int64_t m,
                            float* __restrict__ workspace, int steps_per_split) {
  int64_t n0 = 0;
  const int t = tile::target_of(targets, static_cast<int>(blockIdx.x), &n0);
  wgmma_tile_cta<TYPE, kStageW, T>(
      {targets.w[t], targets.n[t], n0, targets.bias[t], static_cast<T*>(targets.y[t]),
       workspace + targets.partial_off[t]},
      k, images, m, steps_per_split);
}

// Whether the W bytes go through the stage (APH_GGUF_WGMMA_STAGE_W, default
// 1; 0: each step decodes from global memory, test_gguf_cuda_wgmma_direct_w).
bool stage_w() {
  static const bool on = env_flag("APH_GGUF_WGMMA_STAGE_W", true);
  return on;
}

// f(kernel form): the kernel template's kStageW as chosen.
template <typename F>
cudaError_t dispatch_form(F&& f) {
  if (!stage_w()) return f(std::false_type{});
  return f(std::true_type{});
}

// The types with a wgmma form: the k-quants of the common GGUF mixes
// (Q4_K_M is Q4_K with Q6_K; Q5_K_M adds Q5_K).
template <typename F>
bool dispatch_wgmma_type(uint32_t type, F&& f) {
  switch (type) {
    case 12: f(TypeTag<12>{}); return true;
    case 13: f(TypeTag<13>{}); return true;
    case 14: f(TypeTag<14>{}); return true;
    default: return false;
  }
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The images' kernel and the GEMM go out as programmatic dependents
// (core/common/cuda_pdl.cuh) unless APH_GGUF_WGMMA_PDL=0: the GEMM's CTAs
// launch while the images are written and copy their first W bytes before
// they wait. 8B Q4_K_M x64, H100: 8949.7 against 8647.9 tok/s plain. (The
// split sums as dependents too measured 8949.2: they stay plain.)
bool wgmma_pdl() {
  static const bool on = env_flag("APH_GGUF_WGMMA_PDL", true);
  return on;
}

template <typename... Params, typename... Args>
cudaError_t launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, Args... args) {
  if (wgmma_pdl()) return cuda_pdl::launch_dependent(kernel, grid, block, smem, s, args...);
  kernel<<<grid, block, smem, s>>>(static_cast<Params>(args)...);
  return cudaGetLastError();
}

// A GEMM kernel of this form: its CTAs (grid.x counted in 64-row tiles) and
// its dynamic shared memory, opted into once where it passes 48 KB.
template <int TYPE, bool kStageW, typename Kernel, typename... Args>
cudaError_t launch_gemm(Kernel kernel, dim3 grid, cudaStream_t s, Args... args) {
  constexpr int kSmem = 2 * kStageBytes<TYPE, kStageW>;
  static const cudaError_t opted =
      kSmem > 48 * 1024 ? cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem)
                        : cudaSuccess;
  if (opted != cudaSuccess) return opted;
  return launch(kernel, grid, dim3(kThreads), kSmem, s, args...);
}

template <typename T>
cudaError_t arrange_x(const T* x, int64_t m, int64_t k, void* x_image, cudaStream_t s) {
  const int64_t steps = ceil_div(k, kBK);
  const int64_t pieces = ceil_div(m, kBM) * steps * (kImageBytes / 16);
  return launch(arrange_x_kernel<T>, dim3(static_cast<unsigned>(ceil_div(pieces, 256))), dim3(256), 0, s, x, m, k,
                steps, pieces, static_cast<uint4*>(x_image));
}

}  // namespace

uint64_t wgmma_x_image_bytes(int64_t k) {
  return static_cast<uint64_t>(ceil_div(kTileGemmMaxM, kBM)) * ceil_div(k, kBK) * kImageBytes;
}

bool wgmma_tile_gemm_takes(uint32_t ggml_type) {
  // Asked once: the plugin drives one device (CudaLinear), and sm_90a code
  // runs on compute capability 9.0 only.
  static const bool usable = [] {
    if (!env_flag("APH_GGUF_TILE_WGMMA", true)) return false;
    int device = 0, major = 0, minor = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
      return false;
    cudaFuncAttributes attr{};
    return major == 9 && minor == 0 &&
           cudaFuncGetAttributes(&attr, wgmma_tile_kernel<12, true, __nv_bfloat16>) == cudaSuccess;
  }();
  return usable && dispatch_wgmma_type(ggml_type, [](auto) {});
}

namespace {

// x's images, then the GEMM: launch_gemm(TypeTag<TYPE>, images) for the
// launch's type.
template <typename T, typename F>
cudaError_t arrange_and_launch(uint32_t type, const T* x, int64_t m, int64_t k, void* x_image, cudaStream_t s,
                               F&& launch_gemm) {
  cudaError_t rc = arrange_x(x, m, k, x_image, s);
  if (rc != cudaSuccess) return rc;
  rc = cudaErrorInvalidValue;
  dispatch_wgmma_type(type, [&](auto tag) { rc = launch_gemm(tag, static_cast<const uint8_t*>(x_image)); });
  return rc;
}

}  // namespace

template <typename T>
cudaError_t launch_wgmma_tile_gemm(uint32_t type, const uint8_t* w, int64_t n, int64_t k, const T* x, int64_t m,
                                   const float* bias, T* y, float* partials, void* x_image, dim3 grid,
                                   int steps_per_split, cudaStream_t s) {
  return arrange_and_launch(type, x, m, k, x_image, s, [&](auto tag, const uint8_t* images) {
    constexpr int kType = decltype(tag)::value;
    return dispatch_form([&](auto staged) {
      constexpr bool kStaged = decltype(staged)::value;
      return launch_gemm<kType, kStaged>(wgmma_tile_kernel<kType, kStaged, T>, grid, s, w, n, k, images, m, bias, y,
                                         partials, steps_per_split);
    });
  });
}

template <typename T>
cudaError_t launch_wgmma_tile_gemm_multi(uint32_t type, const TileTargets& targets, int64_t k, const T* x, int64_t m,
                                         float* workspace, void* x_image, dim3 grid, int steps_per_split,
                                         cudaStream_t s) {
  return arrange_and_launch(type, x, m, k, x_image, s, [&](auto tag, const uint8_t* images) {
    constexpr int kType = decltype(tag)::value;
    return dispatch_form([&](auto staged) {
      constexpr bool kStaged = decltype(staged)::value;
      return launch_gemm<kType, kStaged>(wgmma_tile_multi_kernel<kType, kStaged, T>, grid, s, targets, k, images,
                                         m, workspace, steps_per_split);
    });
  });
}

template cudaError_t launch_wgmma_tile_gemm<__half>(uint32_t, const uint8_t*, int64_t, int64_t, const __half*,
                                                    int64_t, const float*, __half*, float*, void*, dim3, int,
                                                    cudaStream_t);
template cudaError_t launch_wgmma_tile_gemm<__nv_bfloat16>(uint32_t, const uint8_t*, int64_t, int64_t,
                                                           const __nv_bfloat16*, int64_t, const float*,
                                                           __nv_bfloat16*, float*, void*, dim3, int, cudaStream_t);
template cudaError_t launch_wgmma_tile_gemm_multi<__half>(uint32_t, const TileTargets&, int64_t, const __half*,
                                                          int64_t, float*, void*, dim3, int, cudaStream_t);
template cudaError_t launch_wgmma_tile_gemm_multi<__nv_bfloat16>(uint32_t, const TileTargets&, int64_t,
                                                                 const __nv_bfloat16*, int64_t, float*, void*, dim3,
                                                                 int, cudaStream_t);

}  // namespace aph::gguf::cuda
