#include "cpu/sdpa.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "core/view.h"
#include "cpu/cpu.h"

namespace aotrt::cpu {
namespace {

// A dense float32 (or float64) copy of any view, read through cpu::copy_strided.
template <typename T>
std::vector<T> dense_copy(const TensorImpl& t, std::span<const int64_t> as_sizes,
                          std::span<const int64_t> as_strides) {
  std::vector<T> out(static_cast<size_t>(t.numel() == 0 ? 0 : std::accumulate(
      as_sizes.begin(), as_sizes.end(), int64_t{1}, std::multiplies<>())));
  if (out.empty()) return out;
  const std::vector<int64_t> dense = contiguous_strides(as_sizes);
  const ScalarType dt = std::is_same_v<T, double> ? ScalarType::Float64 : ScalarType::Float32;
  StridedView dst{reinterpret_cast<char*>(out.data()), as_sizes, dense, dt, cpu_device()};
  StridedView src{static_cast<char*>(t.data_ptr()), as_sizes, as_strides, t.dtype(), t.device()};
  copy_strided(dst, src);
  return out;
}

// Strides that read `t` as if broadcast to `sizes` (stride 0 where t has 1).
std::vector<int64_t> broadcast_to(const TensorImpl& t, std::span<const int64_t> sizes,
                                  const char* what) {
  const int64_t nd = static_cast<int64_t>(sizes.size());
  AOTRT_CHECK(t.dim() <= nd, kInvalidArgument, what, ": attn_mask of ", t.dim(),
              " dims cannot broadcast to ", nd, " dims");
  std::vector<int64_t> strides(nd, 0);
  for (int64_t i = 0; i < t.dim(); ++i) {
    const int64_t sd = t.dim() - 1 - i, dd = nd - 1 - i;
    if (t.sizes()[sd] == sizes[dd]) {
      strides[dd] = t.strides()[sd];
    } else {
      AOTRT_CHECK(t.sizes()[sd] == 1, kInvalidArgument, what, ": attn_mask size ",
                  t.sizes()[sd], " at dim ", sd, " does not broadcast to ", sizes[dd]);
    }
  }
  return strides;
}

// Dense strides laying dims out in the order of `like`'s strides (largest
// first; ties keep dim order), as ATen's CPU flash attention lays its output.
std::vector<int64_t> strides_in_order_of(std::span<const int64_t> sizes,
                                         std::span<const int64_t> like) {
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return like[a] > like[b]; });
  std::vector<int64_t> strides(sizes.size());
  int64_t running = 1;
  for (size_t i = order.size(); i-- > 0;) {
    strides[order[i]] = running;
    running *= std::max<int64_t>(sizes[order[i]], 1);
  }
  return strides;
}

template <typename T>
void attend(const std::vector<T>& q, const std::vector<T>& k, const std::vector<T>& v,
            const std::vector<T>* mask, int64_t B, int64_t H, int64_t Lq, int64_t Lk,
            int64_t E, int64_t Ev, bool causal, T scale, std::vector<T>& out,
            std::vector<float>& lse) {
  const int64_t rows = B * H * Lq;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = r % Lq, bh = r / Lq;
    const T* qi = q.data() + r * E;
    const T* kb = k.data() + bh * Lk * E;
    const T* vb = v.data() + bh * Lk * Ev;
    const T* mi = mask ? mask->data() + r * Lk : nullptr;
    std::vector<T> scores(static_cast<size_t>(Lk));
    T max = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < Lk; ++j) {
      T s;
      if (causal && j > i) {
        s = -std::numeric_limits<T>::infinity();
      } else {
        T dot = 0;
        for (int64_t e = 0; e < E; ++e) dot += qi[e] * kb[j * E + e];
        s = dot * scale + (mi ? mi[j] : T(0));
      }
      scores[j] = s;
      max = std::max(max, s);
    }
    T* oi = out.data() + r * Ev;
    std::fill(oi, oi + Ev, T(0));
    if (max == -std::numeric_limits<T>::infinity()) {  // every key masked: ATen gives NaN
      std::fill(oi, oi + Ev, std::numeric_limits<T>::quiet_NaN());
      lse[r] = -std::numeric_limits<float>::infinity();
      continue;
    }
    T sum = 0;
    for (int64_t j = 0; j < Lk; ++j) {
      const T p = std::exp(scores[j] - max);
      sum += p;
      if (p != T(0)) {
        for (int64_t e = 0; e < Ev; ++e) oi[e] += p * vb[j * Ev + e];
      }
    }
    for (int64_t e = 0; e < Ev; ++e) oi[e] /= sum;
    lse[r] = static_cast<float>(max + std::log(sum));
  }
}

}  // namespace

SdpaResult scaled_dot_product_attention(const TensorImpl& q, const TensorImpl& k,
                                        const TensorImpl& v, const TensorImpl* mask,
                                        bool is_causal, std::optional<double> scale,
                                        const char* what) {
  AOTRT_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, kUnsupported, what,
              ": query, key and value must be 4-d [batch, heads, length, embed]; got ",
              q.dim(), ", ", k.dim(), ", ", v.dim(), " dims");
  AOTRT_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), kInvalidArgument, what,
              ": query, key and value must have one dtype");
  AOTRT_CHECK(is_floating(q.dtype()) && element_size(q.dtype()) >= 2, kUnsupported, what,
              ": dtype ", dtype_name(q.dtype()), " is not served");
  const int64_t B = q.sizes()[0], H = q.sizes()[1], Lq = q.sizes()[2], E = q.sizes()[3];
  const int64_t Lk = k.sizes()[2], Ev = v.sizes()[3];
  AOTRT_CHECK(k.sizes()[0] == B && v.sizes()[0] == B && k.sizes()[1] == H &&
                  v.sizes()[1] == H && k.sizes()[3] == E && v.sizes()[2] == Lk,
              kInvalidArgument, what, ": query, key and value shapes do not agree");
  if (mask != nullptr) {
    AOTRT_CHECK(mask->dtype() == q.dtype(), kUnsupported, what,
                ": attn_mask must have the query's dtype (an additive mask), as ATen's "
                "CPU flash attention requires");
  }
  const std::vector<int64_t> out_sizes = {B, H, Lq, Ev};
  const std::vector<int64_t> out_strides = strides_in_order_of(out_sizes, q.strides());
  SdpaResult result;
  result.output = empty_strided(out_sizes, out_strides, q.dtype(), cpu_device(), what);
  const std::vector<int64_t> lse_sizes = {B, H, Lq}, lse_strides = {Lq * H, 1, H};
  result.logsumexp = empty_strided(lse_sizes, lse_strides, ScalarType::Float32, cpu_device(), what);
  if (B * H * Lq == 0 || Ev == 0) return result;

  const double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(E)));
  const std::vector<int64_t> mask_sizes = {B, H, Lq, Lk};
  std::vector<float> lse(static_cast<size_t>(B * H * Lq));
  auto run = [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> qd = dense_copy<T>(q, q.sizes(), q.strides());
    std::vector<T> kd = dense_copy<T>(k, k.sizes(), k.strides());
    std::vector<T> vd = dense_copy<T>(v, v.sizes(), v.strides());
    std::vector<T> md;
    if (mask != nullptr) md = dense_copy<T>(*mask, mask_sizes, broadcast_to(*mask, mask_sizes, what));
    std::vector<T> out(static_cast<size_t>(B * H * Lq * Ev));
    attend<T>(qd, kd, vd, mask ? &md : nullptr, B, H, Lq, Lk, E, Ev, is_causal,
              static_cast<T>(s), out, lse);
    const std::vector<int64_t> dense = contiguous_strides(out_sizes);
    const ScalarType dt = std::is_same_v<T, double> ? ScalarType::Float64 : ScalarType::Float32;
    copy_strided(strided_view(*result.output),
                 StridedView{reinterpret_cast<char*>(out.data()), out_sizes, dense, dt, cpu_device()});
  };
  if (q.dtype() == ScalarType::Float64) {
    run(double{});
  } else {
    run(float{});  // float32, and float16/bfloat16 computed in float32
  }
  const std::vector<int64_t> lse_dense = contiguous_strides(lse_sizes);
  copy_strided(strided_view(*result.logsumexp),
               StridedView{reinterpret_cast<char*>(lse.data()), lse_sizes, lse_dense,
                           ScalarType::Float32, cpu_device()});
  return result;
}

}  // namespace aotrt::cpu
