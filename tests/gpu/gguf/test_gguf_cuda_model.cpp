// The built plugin .so on a CUDA device with the real SmolLM2 file: every
// linear at M in {1, 5, 40} (matvec, sliced matvec, dequantize + cuBLAS) in
// BF16 and F16 against the same plugin's CPU linear, and the quantized
// embedding's get_rows against the CPU rows.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "aphrodite/quant.h"
#include "core/common/half.hpp"
#include "tests/gpu/gguf/cuda_host.hpp"
#include "tests/gpu/tensor_view.hpp"

namespace {

const char* kModel = "models/SmolLM2-135M-Instruct.Q4_1.gguf";

uint16_t to_act(float v, bool bf16) { return bf16 ? aph::f32_to_bf16(v) : aph::f32_to_f16(v); }
float from_act(uint16_t h, bool bf16) { return bf16 ? aph::bf16_to_f32(h) : aph::f16_to_f32(h); }

}  // namespace

TEST(GgufCudaModel, EveryLinearMatchesCpu) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) GTEST_SKIP() << "no CUDA device";
  if (!std::filesystem::exists(kModel)) GTEST_SKIP() << "run scripts/fetch-default-model.sh";
  const char* dir = std::getenv("APH_PLUGIN_DIR");
  std::string path = std::string(dir ? dir : "build/plugins") + "/aph_quant_gguf.so";
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto entry = reinterpret_cast<aph_plugin_entry_fn>(dlsym(handle, APH_PLUGIN_ENTRY_SYMBOL));
  aph_version_offer offer{sizeof(offer), APH_ABI_MAJOR, 0, APH_ABI_MINOR};
  aph_plugin_info info{};
  aph_error err{};
  ASSERT_EQ(entry(&offer, &info, &err), APH_OK) << err.message;
  auto* vt = static_cast<const aph_quant_vtable*>(info.vtable);
  aph_host_services services = aph::gguf::test_gpu::cuda_services();
  void* state = nullptr;
  ASSERT_EQ(info.init(&services, &state, &err), APH_OK) << err.message;
  cudaStream_t stream;
  cudaStreamCreate(&stream);

  aph_checkpoint_desc d{sizeof(d), kModel, nullptr, nullptr};
  aph_model_source* src = nullptr;
  ASSERT_EQ(vt->source_open(state, &d, &src, &err), APH_OK) << err.message;
  int checked = 0;
  for (uint64_t ti = 0; ti < vt->source_tensor_count(src); ++ti) {
    aph_weight_info w{};
    w.size = sizeof(w);
    ASSERT_EQ(vt->source_tensor(src, ti, &w, &err), APH_OK);
    if (w.rank != 2) continue;
    const int64_t n = w.shape[0], k = w.shape[1];
    aph_linear_desc ld{};
    ld.size = sizeof(ld);
    ld.name = w.name;
    ld.in_features = k;
    ld.out_features = n;
    ld.n_parts = 1;
    ld.parts = &w;
    ld.device = APH_DEVICE_CPU;
    ld.act_dtype = APH_DTYPE_F32;
    aph_quant_linear* cpu = nullptr;
    ASSERT_EQ(vt->linear_create(state, &ld, &cpu, &err), APH_OK) << err.message;
    for (bool bf16 : {true, false}) {
      ld.device = 0;
      ld.act_dtype = bf16 ? APH_DTYPE_BF16 : APH_DTYPE_F16;
      ld.stream = stream;
      aph_quant_linear* gpu = nullptr;
      ASSERT_EQ(vt->linear_create(state, &ld, &gpu, &err), APH_OK) << w.name << ": " << err.message;
      EXPECT_GT(vt->linear_device_bytes(gpu), 0u);
      const bool embedding = n > 4096;
      for (int64_t m : {int64_t{1}, int64_t{5}, int64_t{40}}) {
        if (embedding && m > 1) break;  // the tied head: one decode step is enough
        std::vector<float> x(m * k), ycpu(m * n);
        std::vector<uint16_t> xh(m * k), yh(m * n);
        for (int64_t i = 0; i < m * k; ++i) {
          xh[i] = to_act(std::sin(0.013f * static_cast<float>(i) + static_cast<float>(ti)), bf16);
          x[i] = from_act(xh[i], bf16);
        }
        aph_tensor xc = aph::test::tensor_view(x.data(), APH_DTYPE_F32, APH_DEVICE_CPU, m, k);
        aph_tensor yc = aph::test::tensor_view(ycpu.data(), APH_DTYPE_F32, APH_DEVICE_CPU, m, n);
        ASSERT_EQ(vt->linear_forward(cpu, &xc, &yc, nullptr, &err), APH_OK) << err.message;
        void *xd = nullptr, *yd = nullptr;
        cudaMalloc(&xd, m * k * 2);
        cudaMalloc(&yd, m * n * 2);
        cudaMemcpy(xd, xh.data(), m * k * 2, cudaMemcpyHostToDevice);
        aph_tensor xg = aph::test::tensor_view(xd, ld.act_dtype, 0, m, k), yg = aph::test::tensor_view(yd, ld.act_dtype, 0, m, n);
        ASSERT_EQ(vt->linear_forward(gpu, &xg, &yg, stream, &err), APH_OK) << err.message;
        ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        cudaMemcpy(yh.data(), yd, m * n * 2, cudaMemcpyDeviceToHost);
        cudaFree(xd);
        cudaFree(yd);
        double num = 0, den = 0;
        for (int64_t i = 0; i < m * n; ++i) {
          const double diff = from_act(yh[i], bf16) - ycpu[i];
          num += diff * diff;
          den += double(ycpu[i]) * ycpu[i];
        }
        // Both sides quantize activations (int8) or round to F16/BF16.
        EXPECT_LT(std::sqrt(num / (den + 1e-30)), bf16 ? 2e-2 : 1.5e-2)
            << w.name << (bf16 ? " bf16" : " f16") << " m=" << m;
      }
      if (embedding) {
        std::vector<int32_t> ids = {0, 1, 49151, 1234, 2};
        const int64_t m = static_cast<int64_t>(ids.size());
        std::vector<float> rows(m * k);
        aph_tensor ic = aph::test::tensor_view(ids.data(), APH_DTYPE_I32, APH_DEVICE_CPU, m, 0);
        aph_tensor rc = aph::test::tensor_view(rows.data(), APH_DTYPE_F32, APH_DEVICE_CPU, m, k);
        ASSERT_EQ(vt->linear_get_rows(cpu, &ic, &rc, nullptr, &err), APH_OK) << err.message;
        void *idd = nullptr, *od = nullptr;
        cudaMalloc(&idd, m * 4);
        cudaMalloc(&od, m * k * 2);
        cudaMemcpy(idd, ids.data(), m * 4, cudaMemcpyHostToDevice);
        aph_tensor ig = aph::test::tensor_view(idd, APH_DTYPE_I32, 0, m, 0), og = aph::test::tensor_view(od, ld.act_dtype, 0, m, k);
        ASSERT_EQ(vt->linear_get_rows(gpu, &ig, &og, stream, &err), APH_OK) << err.message;
        ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        std::vector<uint16_t> out(m * k);
        cudaMemcpy(out.data(), od, m * k * 2, cudaMemcpyDeviceToHost);
        cudaFree(idd);
        cudaFree(od);
        for (int64_t i = 0; i < m * k; ++i) ASSERT_EQ(out[i], to_act(rows[i], bf16)) << "element " << i;
      }
      vt->linear_destroy(gpu);
    }
    vt->linear_destroy(cpu);
    ++checked;
  }
  EXPECT_EQ(checked, 211);
  vt->source_close(src);
  cudaStreamDestroy(stream);
  info.shutdown(state);
}
