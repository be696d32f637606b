// The fused oneDNN linears (aoti_torch_cpu__linear_pointwise and its _binary,
// Note [Fused linears] in cpu/linear.cpp), driven through the C ABI as
// generated code drives them, against a double-precision reference that reads
// the same views by their strides; whether a call took the fused primitive
// is read from cpu::linear_cache_stats().
//
// Tolerance: as test_cpu_conv.cpp's fused cases, float32 results within
// 1e-5 of the sum of |products| (plus 1e-6), grown for a binary or an
// activation, plus 1e-5 of the value for oneDNN's transcendental
// approximations; bfloat16 within 8e-3 of it (input and result rounding).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/derived_cache.h"
#include "core/handles.h"
#include "core/storage.h"
#include "core/tensor.h"
#include "cpu/ops.h"
#include "cpu_ops_testing.h"
#include "fused_ops_abi.h"

namespace aotrt::test {
namespace {

const int32_t kF32 = 6, kBF16 = 15;

cpu::LinearCacheStats stats() { return cpu::linear_cache_stats(); }
int64_t fused_calls() { return stats().fused_calls; }

uint16_t to_bf16(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
double from_bf16(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// One operand: a buffer of values and a view of it. T is float, or
// uint16_t for bfloat16 bits.
template <typename T>
struct Operand {
  HostBuffer<T> buf;
  Layout layout;
  Handle h;
  Operand(const Layout& l, int64_t seed, int32_t dtype, double lo = -1, double hi = 1)
      : buf(std::max<int64_t>(l.extent(), 1), T{}, dtype), layout(l) {
    for (int64_t i = 0; i < buf.size(); ++i) {
      const float v = static_cast<float>(lo + (hi - lo) * (noise(i + seed) + 1) / 2);
      if constexpr (std::is_same_v<T, float>) {
        buf[i] = v;
      } else {
        buf[i] = to_bf16(v);
      }
    }
    h = buf.view(l);
  }
  double at(const std::vector<int64_t>& idx) const {
    const T v = buf[layout.at(idx)];
    if constexpr (std::is_same_v<T, float>) {
      return v;
    } else {
      return from_bf16(v);
    }
  }
};

// x [..., K] @ W^T + bias: value and sum of |terms| per row-major output element.
struct Expected {
  std::vector<int64_t> sizes;  // [..., N]
  std::vector<double> value, scale;
};

template <typename T>
struct Linear {
  Operand<T> x, w;
  std::optional<Operand<T>> b;
  Linear(const Layout& xl, const Layout& wl, bool bias, int32_t dtype)
      : x(xl, 0, dtype), w(wl, 1000, dtype) {
    if (bias) b.emplace(dense({wl.sizes[0]}), 2000, dtype);
  }
  Expected expected() const {
    Expected e;
    e.sizes = x.layout.sizes;
    const int64_t k = e.sizes.back(), n = w.layout.sizes[0];
    e.sizes.back() = n;
    std::vector<int64_t> rows = x.layout.sizes;
    rows.pop_back();
    for_each_index(rows, [&](const std::vector<int64_t>& r) {
      std::vector<int64_t> xi = r;
      xi.push_back(0);
      for (int64_t j = 0; j < n; ++j) {
        double s = b ? b->at({j}) : 0, a = std::fabs(s);
        for (int64_t kk = 0; kk < k; ++kk) {
          xi.back() = kk;
          const double t = x.at(xi) * w.at({j, kk});
          s += t;
          a += std::fabs(t);
        }
        e.value.push_back(s);
        e.scale.push_back(a);
      }
    });
    return e;
  }
  AOTITorchError pointwise(const Unary& u, Handle& out) const {
    UnaryArgs a(u);
    AtenTensorHandle bh = b ? b->h.get() : nullptr;
    return aoti_torch_cpu__linear_pointwise(x.h.get(), w.h.get(), b ? &bh : nullptr,
                                            u.attr.c_str(), a.scalars(), a.len(), a.algorithm(),
                                            out.out());
  }
  AOTITorchError binary(AtenTensorHandle other, const std::string& attr, Handle& out) const {
    AtenTensorHandle bh = b ? b->h.get() : nullptr;
    return aoti_torch_cpu__linear_pointwise_binary(x.h.get(), other, w.h.get(),
                                                   b ? &bh : nullptr, attr.c_str(), out.out());
  }
};

// Checks a row-major result against want(index, n) (n: dense index of e).
template <typename Want>
void expect_linear(AtenTensorHandle out, const Expected& e, double grow, Want&& want,
                   bool bf16 = false) {
  ASSERT_EQ(sizes_of(out), e.sizes);
  EXPECT_EQ(strides_of(out), contiguous(e.sizes));
  void* data = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(out, &data), AOTI_TORCH_SUCCESS);
  int failures = 0;
  int64_t n = 0;
  for_each_index(e.sizes, [&](const std::vector<int64_t>& idx) {
    const double got = bf16 ? from_bf16(static_cast<const uint16_t*>(data)[n])
                            : static_cast<const float*>(data)[n];
    const double w = want(idx, n);
    const double rel = bf16 ? 8e-3 : 1e-5;
    const double tol = grow * (rel * e.scale[n] + 1e-6) + rel * std::fabs(w) + 1e-6;
    if (!(std::fabs(got - w) <= tol) && failures++ < 5) {
      std::string at;
      for (int64_t i : idx) at += std::to_string(i) + ",";
      ADD_FAILURE() << "out[" << at << "] = " << got << ", expected " << w;
    }
    ++n;
  });
  EXPECT_EQ(failures, 0);
}

const Unary kNone{"none", {}, ""}, kRelu{"relu", {}, ""};

// Marks the storage under handle h constant; returns its cache.
DerivedCache& mark_constant(AtenTensorHandle h) {
  Storage* s = handle_get(h, "test").storage().get();
  s->mark_constant();
  return *s->derived();
}

// --- Fused, with ATen's values ------------------------------------------------------

TEST(CpuLinearFused, PlainAndBias) {
  for (bool bias : {false, true}) {
    SCOPED_TRACE(bias ? "bias" : "no bias");
    const Linear<float> l(dense({4, 3, 64}), dense({48, 64}), bias, kF32);
    const Expected e = l.expected();
    const int64_t before = fused_calls();
    Handle out;
    ASSERT_EQ(l.pointwise(kNone, out), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    EXPECT_EQ(fused_calls(), before + 1);
    expect_linear(out.get(), e, 1, [&](const auto&, int64_t n) { return e.value[n]; });
  }
}

TEST(CpuLinearFused, EveryActivation) {
  const Linear<float> l(dense({32, 64}), dense({64, 64}), true, kF32);
  const Expected e = l.expected();
  for (const Unary& u : every_unary()) {
    SCOPED_TRACE(u.attr + " " + u.algorithm);
    const int64_t before = fused_calls();
    Handle out;
    ASSERT_EQ(l.pointwise(u, out), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    EXPECT_EQ(fused_calls(), before + 1);
    expect_linear(out.get(), e, 1.2, [&](const auto&, int64_t n) { return activate(u, e.value[n]); });
  }
}

// hardtanh with min > max is no oneDNN clip (eltwise_of): unfused. (ATen's
// own fused op refuses these scalars; the unfused kernel's values, min first,
// are what aotrt gave before.)
TEST(CpuLinearFused, HardtanhWithMinAboveMaxRunsUnfused) {
  const Linear<float> l(dense({8, 16}), dense({8, 16}), true, kF32);
  const Expected e = l.expected();
  const Unary u{"hardtanh", {0.5, -0.5}, ""};
  const int64_t before = fused_calls();
  Handle out;
  ASSERT_EQ(l.pointwise(u, out), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(fused_calls(), before);
  expect_linear(out.get(), e, 1, [&](const auto&, int64_t n) {
    const double x = e.value[n];
    return x < 0.5 ? 0.5 : (x > -0.5 ? -0.5 : x);
  });
}

// other: values in [0.5, 1.5), so div is tame.
TEST(CpuLinearFused, EveryBinary) {
  for (bool bias : {false, true}) {
    const Linear<float> l(dense({2, 16, 64}), dense({32, 64}), bias, kF32);
    const Expected e = l.expected();
    Operand<float> other(dense(e.sizes), 3000, kF32, 0.5, 1.5);
    for (const std::string binary : {"add", "sub", "mul", "div"}) {
      SCOPED_TRACE(binary + (bias ? " bias" : ""));
      const std::vector<float> other_before = other.buf.data();
      const int64_t before = fused_calls();
      Handle out;
      ASSERT_EQ(l.binary(other.h.get(), binary, out), AOTI_TORCH_SUCCESS) << aotrt_last_error();
      EXPECT_EQ(fused_calls(), before + 1);
      expect_linear(out.get(), e, 2.5, [&](const std::vector<int64_t>& idx, int64_t n) {
        return combine(binary, e.value[n], other.at(idx));
      });
      EXPECT_EQ(other.buf.data(), other_before);  // other is only read
    }
  }
}

// An other without the result's strides is not a post-op operand (Note
// [Fused linears]): unfused, same values.
TEST(CpuLinearFused, OtherInAnotherLayoutRunsUnfused) {
  const Linear<float> l(dense({16, 32}), dense({24, 32}), true, kF32);
  const Expected e = l.expected();
  const Operand<float> other(Layout{{16, 24}, {1, 16}, 0}, 3000, kF32, 0.5, 1.5);
  const int64_t before = fused_calls();
  Handle out;
  ASSERT_EQ(l.binary(other.h.get(), "mul", out), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(fused_calls(), before);
  expect_linear(out.get(), e, 2.5, [&](const std::vector<int64_t>& idx, int64_t n) {
    return e.value[n] * other.at(idx);
  });
}

// --- Views of x -----------------------------------------------------------------------

// Views oneDNN's matmul reads in place: fused, with the same values.
TEST(CpuLinearFused, StridedXIsReadInPlace) {
  const std::vector<Layout> views = {
      Layout{{12, 64}, {96, 1}, 8},           // a column slice of a [12, 96] buffer
      Layout{{12, 64}, {1, 12}, 0},           // the transpose of a [64, 12] buffer
      Layout{{2, 6, 64}, {6 * 80, 80, 1}, 0},  // rows with a gap, dims that collapse
  };
  for (const Layout& xl : views) {
    SCOPED_TRACE(testing::PrintToString(xl.strides));
    const Linear<float> l(xl, dense({16, 64}), true, kF32);
    const Expected e = l.expected();
    const int64_t before = fused_calls();
    Handle out;
    ASSERT_EQ(l.pointwise(kRelu, out), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    EXPECT_EQ(fused_calls(), before + 1);
    expect_linear(out.get(), e, 1, [&](const auto&, int64_t n) { return activate(kRelu, e.value[n]); });
  }
}

// Leading dims that do not collapse into one row stride: the fallback packs x.
TEST(CpuLinearFused, XWhoseRowsDoNotCollapseRunsUnfused) {
  const Linear<float> l(Layout{{2, 3, 16}, {4 * 16, 16, 1}, 0}, dense({8, 16}), true, kF32);
  const Expected e = l.expected();
  const int64_t before = fused_calls();
  Handle out;
  ASSERT_EQ(l.pointwise(kRelu, out), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(fused_calls(), before);
  expect_linear(out.get(), e, 1, [&](const auto&, int64_t n) { return activate(kRelu, e.value[n]); });
}

// A transposed weight view ([N, K] with strides (1, N)) is read in place too.
TEST(CpuLinearFused, TransposedWeightView) {
  const Linear<float> l(dense({8, 32}), Layout{{16, 32}, {1, 16}, 0}, true, kF32);
  const Expected e = l.expected();
  const int64_t before = fused_calls();
  Handle out;
  ASSERT_EQ(l.pointwise(kNone, out), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(fused_calls(), before + 1);
  expect_linear(out.get(), e, 1, [&](const auto&, int64_t n) { return e.value[n]; });
}

// --- Edge sizes -------------------------------------------------------------------------

TEST(CpuLinearFused, SingleRowAndSingleInner) {
  const std::vector<std::pair<Layout, Layout>> cases = {
      {dense({1, 64}), dense({32, 64})},                // M = 1
      {Layout{{1, 64}, {0, 1}, 0}, dense({32, 64})},    // M = 1 with generated code's stride 0
      {dense({64}), dense({32, 64})},                   // 1-d x
      {dense({5, 1}), dense({7, 1})},                   // K = 1
      {dense({3, 8}), dense({1, 8})},                   // N = 1
  };
  for (const auto& [xl, wl] : cases) {
    SCOPED_TRACE(testing::PrintToString(xl.sizes) + " * " + testing::PrintToString(wl.sizes));
    const Linear<float> l(xl, wl, true, kF32);
    const Expected e = l.expected();
    const int64_t before = fused_calls();
    Handle out;
    ASSERT_EQ(l.pointwise(kRelu, out), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    EXPECT_EQ(fused_calls(), before + 1);
    expect_linear(out.get(), e, 1, [&](const auto&, int64_t n) { return activate(kRelu, e.value[n]); });
  }
}

// Nothing for oneDNN to compute: the unfused path gives the empty result.
TEST(CpuLinearFused, EmptyRowsRunUnfused) {
  const Linear<float> l(dense({0, 16}), dense({8, 16}), true, kF32);
  const int64_t before = fused_calls();
  Handle out;
  ASSERT_EQ(l.pointwise(kRelu, out), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  EXPECT_EQ(fused_calls(), before);
  EXPECT_EQ(sizes_of(out.get()), (std::vector<int64_t>{0, 8}));
}

// --- The primitive cache and constant weights -------------------------------------------

TEST(CpuLinearFused, SecondCallOfAShapeHitsTheCache) {
  const Linear<float> l(dense({24, 40}), dense({56, 40}), true, kF32);  // a shape of its own
  const Expected e = l.expected();
  Handle first;
  const cpu::LinearCacheStats s0 = stats();
  ASSERT_EQ(l.pointwise(kRelu, first), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const cpu::LinearCacheStats s1 = stats();
  EXPECT_EQ(s1.misses, s0.misses + 1);
  for (int i = 0; i < 3; ++i) {
    Handle again;
    ASSERT_EQ(l.pointwise(kRelu, again), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    expect_linear(again.get(), e, 1, [&](const auto&, int64_t n) { return activate(kRelu, e.value[n]); });
  }
  const cpu::LinearCacheStats s2 = stats();
  EXPECT_EQ(s2.misses, s1.misses);
  EXPECT_EQ(s2.hits, s1.hits + 3);
  EXPECT_EQ(s2.fused_calls, s1.fused_calls + 3);
}

// A weight not known to be constant is read where it is, every call; a
// constant one is reordered to oneDNN's layout once, kept with its storage.
TEST(CpuLinearFused, ConstantWeightIsReorderedOnce) {
  for (bool constant : {false, true}) {
    SCOPED_TRACE(constant ? "constant" : "not constant");
    const Linear<float> l(dense({32, 128}), dense({64, 128}), true, kF32);
    const Expected e = l.expected();
    DerivedCache* cache = constant ? &mark_constant(l.w.h.get()) : nullptr;
    const int64_t cached_before = stats().weights_cached;
    for (int i = 0; i < 3; ++i) {
      const int64_t before = fused_calls();
      Handle out;
      ASSERT_EQ(l.pointwise(kRelu, out), AOTI_TORCH_SUCCESS) << aotrt_last_error();
      EXPECT_EQ(fused_calls(), before + 1);
      expect_linear(out.get(), e, 1, [&](const auto&, int64_t n) { return activate(kRelu, e.value[n]); });
    }
    const int64_t cached = stats().weights_cached - cached_before;
    if (constant) {
      EXPECT_EQ(cached, 1);
      EXPECT_EQ(cache->size(), 1u);
    } else {
      EXPECT_EQ(cached, 0);
    }
  }
}

// --- bfloat16 --------------------------------------------------------------------------

// As ATen's mkldnn linear: bf16 operands, float accumulation and post-ops,
// one rounding of the result.
TEST(CpuLinearFused, BFloat16) {
  const Linear<uint16_t> l(dense({16, 64}), dense({32, 64}), true, kBF16);
  const Expected e = l.expected();
  const Operand<uint16_t> other(dense(e.sizes), 3000, kBF16, 0.5, 1.5);
  const int64_t before = fused_calls();
  Handle out;
  ASSERT_EQ(l.binary(other.h.get(), "add", out), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  // oneDNN 2.6 has bf16 matmuls from AVX-512 on; on AVX2 the unfused path serves it
  // (Note [oneDNN's ISA]), with the same values.
  EXPECT_EQ(fused_calls(), before + (cpu::onednn_avx512() ? 1 : 0));
  expect_linear(
      out.get(), e, 1.5,
      [&](const std::vector<int64_t>& idx, int64_t n) { return e.value[n] + other.at(idx); },
      /*bf16=*/true);
}

}  // namespace
}  // namespace aotrt::test
