// CPU reference ops (everything but the dense linear). Activations are F32;
// rows are split across the pool.
#include <cmath>
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/common/error.hpp"
#include "core/common/half.hpp"
#include "core/ops/backend.hpp"

namespace aph::ops::cpu {

namespace {

float load(const void* base, aph_dtype dtype, int64_t i) {
  switch (dtype) {
    case APH_DTYPE_F32: return static_cast<const float*>(base)[i];
    case APH_DTYPE_F16: return f16_to_f32(static_cast<const uint16_t*>(base)[i]);
    case APH_DTYPE_BF16: return bf16_to_f32(static_cast<const uint16_t*>(base)[i]);
    default: throw Error(APH_ERR_INTERNAL, "CPU op on unsupported dtype");
  }
}

void store(void* base, aph_dtype dtype, int64_t i, float v) {
  switch (dtype) {
    case APH_DTYPE_F32: static_cast<float*>(base)[i] = v; return;
    case APH_DTYPE_F16: static_cast<uint16_t*>(base)[i] = f32_to_f16(v); return;
    case APH_DTYPE_BF16: static_cast<uint16_t*>(base)[i] = f32_to_bf16(v); return;
    default: throw Error(APH_ERR_INTERNAL, "CPU op on unsupported dtype");
  }
}

void norm_row(const float* x, const float* w, float eps, int64_t h, float* out) {
  double ss = 0;
  for (int64_t i = 0; i < h; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(h) + eps));
  for (int64_t i = 0; i < h; ++i) out[i] = x[i] * inv * w[i];
}

}  // namespace

void embedding(const Exec& exec, const Tensor& table, const Tensor& ids, Tensor& out) {
  const int64_t v = table.dim(0), h = table.dim(1);
  const int32_t* id = ids.as<int32_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    if (id[i] < 0 || id[i] >= v) {
      throw invalid_argument("token id " + std::to_string(id[i]) + " outside the vocabulary of " + std::to_string(v));
    }
  }
  parallel_for(exec.pool, ids.numel(), 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t row = static_cast<int64_t>(id[i]) * h;
      float* dst = out.as<float>() + i * h;
      if (table.dtype() == APH_DTYPE_F32) {
        std::memcpy(dst, table.as<float>() + row, h * sizeof(float));
      } else {
        for (int64_t j = 0; j < h; ++j) dst[j] = load(table.data(), table.dtype(), row + j);
      }
    }
  });
}

void rms_norm(const Exec& exec, const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  const int64_t h = x.dim(-1), m = x.numel() / h;
  parallel_for(exec.pool, m, 8, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) norm_row(x.as<float>() + r * h, weight.as<float>(), eps, h, out.as<float>() + r * h);
  });
}

void add_rms_norm(const Exec& exec, const Tensor& residual, const Tensor& delta, const Tensor& weight, float eps,
                  Tensor& out, Tensor& residual_out) {
  const int64_t h = residual.dim(-1), m = residual.numel() / h;
  parallel_for(exec.pool, m, 8, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* res = residual.as<float>() + r * h;
      const float* d = delta.as<float>() + r * h;
      float* sum = residual_out.as<float>() + r * h;
      for (int64_t i = 0; i < h; ++i) sum[i] = res[i] + d[i];
      norm_row(sum, weight.as<float>(), eps, h, out.as<float>() + r * h);
    }
  });
}

void rope_qkv(const Exec& exec, const RopeParams& p, const QkvIn& in, const Tensor& positions,
              const Tensor& inv_freq, Tensor& q_out, Tensor& k_out, Tensor& v_out) {
  const int64_t t_count = positions.numel();
  const int d = p.head_dim, half = p.rotary_dim / 2;
  const int32_t* pos = positions.as<int32_t>();
  const float* freq = inv_freq.as<float>();
  parallel_for(exec.pool, t_count, 4, [&](int64_t b, int64_t e) {
    std::vector<float> cs(half), sn(half);
    for (int64_t t = b; t < e; ++t) {
      for (int i = 0; i < half; ++i) {
        // The angle in double: positions reach 10^5+ and fp32 products lose digits there.
        const double angle = static_cast<double>(pos[t]) * static_cast<double>(freq[i]);
        cs[i] = static_cast<float>(std::cos(angle)) * p.mscale;
        sn[i] = static_cast<float>(std::sin(angle)) * p.mscale;
      }
      auto rotate = [&](const float* src, float* dst, int heads) {
        for (int hd = 0; hd < heads; ++hd) {
          const float* s = src + static_cast<int64_t>(hd) * d;
          float* o = dst + static_cast<int64_t>(hd) * d;
          for (int i = 0; i < half; ++i) {
            const int a = p.interleaved ? 2 * i : i;
            const int c = p.interleaved ? 2 * i + 1 : i + half;
            const float x0 = s[a], x1 = s[c];
            o[a] = x0 * cs[i] - x1 * sn[i];
            o[c] = x1 * cs[i] + x0 * sn[i];
          }
          for (int i = p.rotary_dim; i < d; ++i) o[i] = s[i];
        }
      };
      rotate(static_cast<const float*>(in.q) + t * in.q_stride, q_out.as<float>() + t * p.num_heads * d, p.num_heads);
      rotate(static_cast<const float*>(in.k) + t * in.k_stride, k_out.as<float>() + t * p.num_kv_heads * d,
             p.num_kv_heads);
      const float* vs = static_cast<const float*>(in.v) + t * in.v_stride;
      float* vd = v_out.as<float>() + t * p.num_kv_heads * d;
      if (vs != vd) std::memmove(vd, vs, sizeof(float) * p.num_kv_heads * d);
    }
  });
}

void silu_mul(const Exec& exec, const void* gate, const void* up, int64_t in_stride, Tensor& out) {
  const int64_t n = out.dim(-1), m = out.numel() / n;
  parallel_for(exec.pool, m, 4, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* g = static_cast<const float*>(gate) + r * in_stride;
      const float* u = static_cast<const float*>(up) + r * in_stride;
      float* o = out.as<float>() + r * n;
      for (int64_t i = 0; i < n; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
    }
  });
}

void gather_rows(const Exec& exec, const Tensor& x, const Tensor& idx, Tensor& out) {
  const int64_t m = x.dim(0), row_bytes = x.nbytes() / std::max<int64_t>(m, 1);
  const int32_t* id = idx.as<int32_t>();
  for (int64_t i = 0; i < idx.numel(); ++i) {
    if (id[i] < 0 || id[i] >= m) throw Error(APH_ERR_INTERNAL, "gather_rows index " + std::to_string(id[i]) + " out of range");
    std::memcpy(static_cast<char*>(out.data()) + i * row_bytes, static_cast<const char*>(x.data()) + id[i] * row_bytes,
                row_bytes);
  }
}

void convert(const Exec& exec, const Tensor& in, Tensor& out) {
  parallel_for(exec.pool, in.numel(), 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) store(out.data(), out.dtype(), i, load(in.data(), in.dtype(), i));
  });
}

}  // namespace aph::ops::cpu
