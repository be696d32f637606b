// aoti_torch_cpu_convolution, driven through the C ABI as generated code
// drives it, against a double-precision reference loop that reads the same
// views by their strides; plus the output strides eager ATen gives (see
// Note [Convolution output layout]) and a few outputs printed by torch 2.13
// (tests/unit/gen_cpu_conv_reference.py) for exact comparison.
//
// Tolerance: float32 results may differ from the double reference by 1e-5 of
// the sum of |products| (plus 1e-6); bfloat16 by 8e-3 of it (result and
// input rounding). Small-integer inputs make every float32 sum exact, so the
// torch cross-checks compare for equality.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <thread>
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

const int32_t kF32 = 6, kF64 = 7, kBF16 = 15;

struct ConvCase {
  Layout in, w;
  std::optional<Layout> bias;
  std::vector<int64_t> stride, padding, dilation;
  bool transposed = false;
  std::vector<int64_t> output_padding;
  int64_t groups = 1;
};

// The case with one entry per spatial dim in every list.
ConvCase expanded(ConvCase c) {
  const size_t k = c.in.sizes.size() - 2;
  for (auto* v : {&c.stride, &c.padding, &c.dilation, &c.output_padding}) {
    if (v->size() == 1) v->assign(k, (*v)[0]);
    if (v->empty()) v->assign(k, 0);
  }
  return c;
}

// Output sizes by ATen's formulas.
std::vector<int64_t> out_sizes(const ConvCase& cc) {
  const ConvCase c = expanded(cc);
  const size_t k = c.in.sizes.size() - 2;
  std::vector<int64_t> s{c.in.sizes[0], c.transposed ? c.w.sizes[1] * c.groups : c.w.sizes[0]};
  for (size_t i = 0; i < k; ++i) {
    const int64_t in = c.in.sizes[i + 2], ker = c.w.sizes[i + 2];
    const int64_t ext = c.dilation[i] * (ker - 1) + 1;
    s.push_back(c.transposed
                    ? (in - 1) * c.stride[i] - 2 * c.padding[i] + ext + c.output_padding[i]
                    : (in + 2 * c.padding[i] - ext) / c.stride[i] + 1);
  }
  return s;
}

struct Expected {
  std::vector<int64_t> sizes;
  std::vector<double> value, scale;  // dense row-major over sizes
};

// The convolution by its definition, one product at a time.
template <typename Read>
Expected reference(const ConvCase& cc, Read&& in, Read&& w, Read&& bias) {
  const ConvCase c = expanded(cc);
  Expected e;
  e.sizes = out_sizes(c);
  const auto os = e.sizes;
  const size_t k = os.size() - 2;
  const auto ostr = contiguous(os);
  const int64_t total = Layout{os, ostr, 0}.numel();
  e.value.assign(total, 0.0);
  e.scale.assign(total, 0.0);
  const int64_t c_in = c.in.sizes[1], c_out = os[1];
  const int64_t ig = c_in / c.groups, og = c_out / c.groups;
  std::vector<int64_t> kernel(c.w.sizes.begin() + 2, c.w.sizes.end());
  auto out_index = [&](int64_t n, int64_t oc, const std::vector<int64_t>& sp) {
    int64_t o = n * ostr[0] + oc * ostr[1];
    for (size_t i = 0; i < k; ++i) o += sp[i] * ostr[i + 2];
    return o;
  };
  auto with = [](std::vector<int64_t> head, const std::vector<int64_t>& tail) {
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  std::vector<int64_t> in_sp(c.in.sizes.begin() + 2, c.in.sizes.end());
  // Every (input position, kernel tap) pair lands on at most one output position.
  for (int64_t n = 0; n < os[0]; ++n)
    for (int64_t ic = 0; ic < c_in; ++ic) {
      const int64_t g = ic / ig, icl = ic % ig;
      for_each_index(in_sp, [&](const std::vector<int64_t>& ip) {
        const double x = in(with({n, ic}, ip));
        for_each_index(kernel, [&](const std::vector<int64_t>& kk) {
          std::vector<int64_t> op(k);
          for (size_t i = 0; i < k; ++i) {
            if (c.transposed) {
              op[i] = ip[i] * c.stride[i] - c.padding[i] + kk[i] * c.dilation[i];
              if (op[i] < 0 || op[i] >= os[i + 2]) return;
            } else {
              // ip = op * stride - padding + kk * dilation
              const int64_t num = ip[i] + c.padding[i] - kk[i] * c.dilation[i];
              if (num < 0 || num % c.stride[i] != 0) return;
              op[i] = num / c.stride[i];
              if (op[i] >= os[i + 2]) return;
            }
          }
          for (int64_t ocl = 0; ocl < og; ++ocl) {
            const int64_t oc = g * og + ocl;
            const double wv = c.transposed ? w(with({ic, ocl}, kk)) : w(with({oc, icl}, kk));
            const int64_t o = out_index(n, oc, op);
            e.value[o] += x * wv;
            e.scale[o] += std::fabs(x * wv);
          }
        });
      });
    }
  if (c.bias) {
    for_each_index(os, [&](const std::vector<int64_t>& idx) {
      const double b = bias({idx[1]});
      const int64_t o = Layout{os, ostr, 0}.at(idx);
      e.value[o] += b;
      e.scale[o] += std::fabs(b);
    });
  }
  return e;
}

// A float32 problem: buffers filled by `fill`, views by the case's layouts.
struct F32Problem {
  ConvCase c;
  HostBuffer<float> in, w, b;
  Handle hin, hw, hb;
  template <typename Fill>
  F32Problem(const ConvCase& cc, Fill&& fill)
      : c(cc),
        in(cc.in.extent() + 2, 0.f, kF32),
        w(cc.w.extent() + 2, 0.f, kF32),
        b(cc.bias ? cc.bias->extent() + 2 : 1, 0.f, kF32) {
    for (int64_t i = 0; i < in.size(); ++i) in[i] = fill(i);
    for (int64_t i = 0; i < w.size(); ++i) w[i] = fill(i + 1000);
    for (int64_t i = 0; i < b.size(); ++i) b[i] = fill(i + 2000);
    hin = in.view(c.in);
    hw = w.view(c.w);
    if (c.bias) hb = b.view(*c.bias);
  }
  Expected expected() const {
    auto rd = [](const HostBuffer<float>& buf, const Layout& l) {
      return [&buf, &l](const std::vector<int64_t>& idx) { return double(buf[l.at(idx)]); };
    };
    static const Layout none;
    return reference(c, std::function<double(const std::vector<int64_t>&)>(rd(in, c.in)),
                     std::function<double(const std::vector<int64_t>&)>(rd(w, c.w)),
                     std::function<double(const std::vector<int64_t>&)>(
                         rd(b, c.bias ? *c.bias : none)));
  }
};

// Runs the convolution; ret gets the result handle.
AOTITorchError run_conv(const ConvCase& c, AtenTensorHandle in, AtenTensorHandle w,
                        AtenTensorHandle* bias, Handle& ret) {
  return aoti_torch_cpu_convolution(
      in, w, bias, c.stride.data(), static_cast<int64_t>(c.stride.size()), c.padding.data(),
      static_cast<int64_t>(c.padding.size()), c.dilation.data(),
      static_cast<int64_t>(c.dilation.size()), c.transposed, c.output_padding.data(),
      static_cast<int64_t>(c.output_padding.size()), c.groups, ret.out());
}

// Compares a float32 result handle with e elementwise.
void expect_result(AtenTensorHandle out, const Expected& e, double rtol) {
  ASSERT_EQ(sizes_of(out), e.sizes);
  const std::vector<int64_t> strides = strides_of(out);
  void* data = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(out, &data), AOTI_TORCH_SUCCESS);
  int32_t dtype = -1;
  ASSERT_EQ(aoti_torch_get_dtype(out, &dtype), AOTI_TORCH_SUCCESS);
  const Layout l{e.sizes, strides, 0}, d = dense(e.sizes);
  int failures = 0;
  for_each_index(e.sizes, [&](const std::vector<int64_t>& idx) {
    double got;
    if (dtype == kBF16) {
      uint32_t u = static_cast<uint32_t>(static_cast<const uint16_t*>(data)[l.at(idx)]) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      got = f;
    } else {
      got = static_cast<const float*>(data)[l.at(idx)];
    }
    const int64_t n = d.at(idx);
    const double tol = rtol * e.scale[n] + 1e-6;
    if (!(std::fabs(got - e.value[n]) <= tol) && failures++ < 5) {
      std::string at;
      for (int64_t i : idx) at += std::to_string(i) + ",";
      ADD_FAILURE() << "out[" << at << "] = " << got << ", expected " << e.value[n];
    }
  });
  EXPECT_EQ(failures, 0);
}

// Channels-last strides for [N, C, spatial...].
std::vector<int64_t> channels_last(const std::vector<int64_t>& s) {
  std::vector<int64_t> r(s.size());
  int64_t step = 1;
  r[1] = step;
  step *= s[1];
  for (size_t d = s.size() - 1; d >= 2; --d) {
    r[d] = step;
    step *= s[d];
  }
  r[0] = step;
  return r;
}
Layout cl(const std::vector<int64_t>& sizes) { return {sizes, channels_last(sizes), 0}; }

// Runs a float32 case and checks values and output strides.
void check(const ConvCase& c, const std::vector<int64_t>& want_strides) {
  F32Problem p(c, noise);
  Handle out;
  AtenTensorHandle bias = p.hb.get();
  ASSERT_EQ(run_conv(c, p.hin.get(), p.hw.get(), c.bias ? &bias : nullptr, out),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_EQ(strides_of(out.get()), want_strides);
  expect_result(out.get(), p.expected(), 1e-5);
}

ConvCase conv2d(Layout in, Layout w, std::optional<Layout> bias, std::vector<int64_t> stride,
                std::vector<int64_t> padding, std::vector<int64_t> dilation, int64_t groups = 1) {
  return {in, w, bias, stride, padding, dilation, false, {0, 0}, groups};
}

// --- Plain convolutions ------------------------------------------------------------

TEST(CpuConv, Nchw) {
  const ConvCase c = conv2d(dense({2, 3, 7, 6}), dense({4, 3, 3, 3}), dense({4}), {1, 1},
                            {1, 1}, {1, 1});
  check(c, contiguous({2, 4, 7, 6}));
}

TEST(CpuConv, ChannelsLastInputGivesChannelsLastOutput) {
  const ConvCase c = conv2d(cl({2, 8, 9, 7}), dense({5, 8, 3, 3}), dense({5}), {1, 1}, {1, 1},
                            {1, 1});
  check(c, channels_last({2, 5, 9, 7}));
}

TEST(CpuConv, ChannelsLastWeightGivesChannelsLastOutput) {
  const ConvCase c =
      conv2d(dense({1, 8, 6, 6}), cl({4, 8, 3, 3}), std::nullopt, {1, 1}, {0, 0}, {1, 1});
  check(c, channels_last({1, 4, 4, 4}));
}

TEST(CpuConv, NonPackedChannelsLastChunkAtOffset16) {
  // The seed: a chunk along C of a [1,32,40,40] channels-last buffer.
  // With the batch stride 0 that generated code passes, c10 does not call the
  // view channels-last (its N stride is below C*H*W), so ATen, and aotrt,
  // return a contiguous output; the same chunk with batch stride 51200 is
  // channels-last, and so is its output.
  const Layout chunk{{1, 16, 40, 40}, {0, 1, 1280, 32}, 16};
  check(conv2d(chunk, dense({8, 16, 1, 1}), dense({8}), {1, 1}, {0, 0}, {1, 1}),
        contiguous({1, 8, 40, 40}));
  const Layout chunk_n{{1, 16, 40, 40}, {51200, 1, 1280, 32}, 16};
  check(conv2d(chunk_n, dense({8, 16, 1, 1}), dense({8}), {1, 1}, {0, 0}, {1, 1}),
        channels_last({1, 8, 40, 40}));
  // A channels-last 3x3 weight makes the output channels-last either way.
  check(conv2d(chunk, cl({8, 16, 3, 3}), std::nullopt, {2, 2}, {1, 1}, {1, 1}),
        channels_last({1, 8, 20, 20}));
}

TEST(CpuConv, SizeOneDimsWithAnyStride) {
  // Dense channels-last and plain inputs whose size-1 dims carry strides 0 or
  // odd values (see Note [Strides of size-1 dims] in cpu/conv.cpp).
  check(conv2d({{1, 8, 6, 5}, {0, 1, 40, 8}, 0}, dense({4, 8, 3, 3}), dense({4}), {1, 1},
               {1, 1}, {1, 1}),
        contiguous({1, 4, 6, 5}));  // N stride 0: c10 calls it contiguous
  check(conv2d({{1, 8, 6, 5}, {0, 1, 40, 8}, 0}, cl({4, 8, 3, 3}), dense({4}), {1, 1}, {1, 1},
               {1, 1}),
        channels_last({1, 4, 6, 5}));
  check(conv2d({{2, 8, 1, 5}, {40, 1, 3, 8}, 0}, dense({4, 8, 1, 3}), dense({4}), {1, 1},
               {0, 1}, {1, 1}),
        contiguous({2, 4, 1, 5}));  // H stride 3 < W*C: c10 does not call it channels-last
  check(conv2d({{1, 8, 6, 5}, {7, 30, 5, 1}, 0}, dense({4, 8, 3, 3}), std::nullopt, {1, 1},
               {1, 1}, {1, 1}),
        contiguous({1, 4, 6, 5}));
}

TEST(CpuConv, OtherNonDenseInputs) {
  // A transposed H/W (not channels-last: contiguous output), a column slice,
  // and a stride-0 expanded input.
  check(conv2d({{2, 3, 6, 5}, {90, 30, 1, 6}, 0}, dense({4, 3, 3, 2}), dense({4}), {1, 1},
               {1, 0}, {1, 1}),
        contiguous({2, 4, 6, 4}));
  check(conv2d({{2, 3, 6, 5}, {200, 60, 10, 1}, 3}, dense({4, 3, 2, 2}), std::nullopt, {1, 1},
               {0, 0}, {1, 1}),
        contiguous({2, 4, 5, 4}));
  check(conv2d({{2, 3, 6, 5}, {0, 30, 5, 1}, 0}, dense({4, 3, 3, 3}), dense({4}), {1, 1},
               {1, 1}, {1, 1}),
        contiguous({2, 4, 6, 5}));
}

TEST(CpuConv, GroupsStrideDilationPadding) {
  check(conv2d(dense({2, 6, 11, 9}), dense({4, 3, 3, 2}), dense({4}), {2, 1}, {1, 2}, {2, 1},
               2),
        contiguous({2, 4, 5, 12}));
  // Depthwise, channels-last, with a strided bias.
  check(conv2d(cl({2, 8, 10, 10}), dense({8, 1, 3, 3}), Layout{{8}, {3}, 1}, {1, 1}, {1, 1},
               {1, 1}, 8),
        channels_last({2, 8, 10, 10}));
  // One int for every spatial dim, as aten.convolution also accepts.
  check(conv2d(dense({1, 4, 9, 9}), dense({6, 2, 3, 3}), std::nullopt, {2}, {1}, {2}, 2),
        contiguous({1, 6, 4, 4}));
}

TEST(CpuConv, Conv1d) {
  ConvCase c{dense({2, 4, 11}), dense({6, 2, 3}), dense({6}), {2}, {1}, {2}, false, {0}, 2};
  check(c, contiguous({2, 6, 5}));
  // A channels-last-like input does not change the layout (ATen makes it contiguous)...
  c.in = {{2, 4, 11}, {44, 1, 4}, 0};
  check(c, contiguous({2, 6, 5}));
  // ...a permuted weight does: strides [L*C, 1, C].
  c.w = {{6, 2, 3}, {6, 1, 2}, 0};
  check(c, {30, 1, 6});
  // So does an input contiguous already whose size-1 channel dim has stride 1: contiguous()
  // keeps its strides, and unsqueezed at dim 2 they suggest channels-last (eager, torch 2.13:
  // x [1, 1, 2] strides (2, 1, 1), w [2, 1, 1] -> out [1, 2, 2] strides (4, 1, 2)).
  check(ConvCase{{{1, 1, 2}, {2, 1, 1}, 0}, dense({2, 1, 1}), std::nullopt, {1}, {0}, {1}, false,
                 {0}, 1},
        {4, 1, 2});
  check(ConvCase{{{1, 1, 2}, {2, 2, 1}, 0}, dense({2, 1, 1}), std::nullopt, {1}, {0}, {1}, false,
                 {0}, 1},
        contiguous({1, 2, 2}));
}

TEST(CpuConv, Conv3d) {
  ConvCase c{dense({1, 2, 4, 5, 3}), dense({3, 2, 2, 3, 2}), dense({3}), {1, 2, 1}, {1, 0, 1},
             {1, 1, 2}, false, {0, 0, 0}, 1};
  check(c, contiguous({1, 3, 5, 2, 3}));
  // Channels-last-3d input: batch 1 with a small 3x3x3 kernel is ATen's slow
  // path (contiguous), batch 2 its mkldnn path (channels-last-3d).
  c = {Layout{{1, 4, 5, 6, 7}, {840, 1, 168, 28, 4}, 0}, dense({2, 4, 3, 3, 3}), std::nullopt,
       {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, false, {0, 0, 0}, 1};
  check(c, contiguous({1, 2, 5, 6, 7}));
  c.in = {{2, 4, 5, 6, 7}, {840, 1, 168, 28, 4}, 0};
  check(c, channels_last({2, 2, 5, 6, 7}));
}

// --- Transposed convolutions -----------------------------------------------------------

TEST(CpuConv, TransposedWithOutputPaddingAndGroups) {
  // weight [in, out/groups, kH, kW].
  ConvCase c{dense({2, 4, 5, 4}), dense({4, 3, 3, 3}), dense({6}), {2, 2}, {1, 1}, {1, 1},
             true, {1, 1}, 2};
  check(c, contiguous({2, 6, 10, 8}));
  // output_padding > padding: oneDNN's right padding is negative.
  c = {dense({1, 4, 4, 3}), dense({4, 2, 3, 3}), std::nullopt, {3, 3}, {0, 0}, {1, 1}, true,
       {2, 1}, 2};
  check(c, contiguous({1, 4, 14, 10}));
  // output_padding below the dilation but not the stride.
  c = {dense({1, 2, 5, 5}), dense({2, 3, 3, 3}), dense({3}), {1, 1}, {0, 1}, {2, 2}, true,
       {1, 1}, 1};
  check(c, contiguous({1, 3, 10, 8}));
  // Channels-last input.
  c = {cl({2, 4, 5, 4}), dense({4, 3, 3, 3}), dense({6}), {2, 2}, {1, 1}, {1, 1}, true, {1, 1},
       2};
  check(c, channels_last({2, 6, 10, 8}));
}

TEST(CpuConv, Transposed1d) {
  ConvCase c{dense({2, 3, 7}), dense({3, 2, 4}), dense({2}), {3}, {1}, {1}, true, {2}, 1};
  check(c, contiguous({2, 2, 22}));
}

// --- Bias forms, dtypes, empties, cache ---------------------------------------------------

TEST(CpuConv, BiasAbsentInEveryForm) {
  const ConvCase c = conv2d(dense({1, 2, 5, 5}), dense({3, 2, 3, 3}), std::nullopt, {1, 1},
                            {0, 0}, {1, 1});
  F32Problem p(c, noise);
  const Expected e = p.expected();
  Handle a, b, d, undefined;
  ASSERT_EQ(run_conv(c, p.hin.get(), p.hw.get(), nullptr, a), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  expect_result(a.get(), e, 1e-5);
  AtenTensorHandle null_handle = nullptr;
  ASSERT_EQ(run_conv(c, p.hin.get(), p.hw.get(), &null_handle, b), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  expect_result(b.get(), e, 1e-5);
  ASSERT_EQ(aoti_torch_new_uninitialized_tensor(undefined.out()), AOTI_TORCH_SUCCESS);
  AtenTensorHandle u = undefined.get();
  ASSERT_EQ(run_conv(c, p.hin.get(), p.hw.get(), &u, d), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  expect_result(d.get(), e, 1e-5);
}

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
float from_bf16(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(CpuConv, BFloat16ComputesInFloat32) {
  // Inputs are bfloat16-exact, so the float32 reference sees the same values.
  auto fill = [](int64_t i) { return from_bf16(to_bf16(noise(i))); };
  const ConvCase c = conv2d(cl({1, 6, 7, 7}), dense({4, 6, 3, 3}), dense({4}), {1, 1},
                            {1, 1}, {1, 1});
  F32Problem p(c, fill);
  HostBuffer<uint16_t> in(p.in.size(), 0, kBF16), w(p.w.size(), 0, kBF16),
      b(p.b.size(), 0, kBF16);
  for (int64_t i = 0; i < in.size(); ++i) in[i] = to_bf16(p.in[i]);
  for (int64_t i = 0; i < w.size(); ++i) w[i] = to_bf16(p.w[i]);
  for (int64_t i = 0; i < b.size(); ++i) b[i] = to_bf16(p.b[i]);
  Handle hin = in.view(c.in), hw = w.view(c.w), hb = b.view(*c.bias), out;
  AtenTensorHandle bias = hb.get();
  ASSERT_EQ(run_conv(c, hin.get(), hw.get(), &bias, out), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  int32_t dtype = -1;
  ASSERT_EQ(aoti_torch_get_dtype(out.get(), &dtype), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(dtype, kBF16);
  EXPECT_EQ(strides_of(out.get()), channels_last({1, 4, 7, 7}));
  expect_result(out.get(), p.expected(), 8e-3);
}

TEST(CpuConv, EmptyBatch) {
  const ConvCase c = conv2d(dense({0, 3, 5, 5}), cl({4, 3, 3, 3}), dense({4}), {1, 1}, {1, 1},
                            {1, 1});
  F32Problem p(c, noise);
  Handle out;
  AtenTensorHandle bias = p.hb.get();
  ASSERT_EQ(run_conv(c, p.hin.get(), p.hw.get(), &bias, out), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_EQ(sizes_of(out.get()), (std::vector<int64_t>{0, 4, 5, 5}));
  EXPECT_EQ(strides_of(out.get()), contiguous({0, 4, 5, 5}));  // ATen's empty backend
}

TEST(CpuConv, SteadyStateReusesPrimitives) {
  const ConvCase c = conv2d(cl({1, 5, 6, 6}), dense({3, 5, 3, 3}), dense({3}), {1, 1}, {1, 1},
                            {1, 1});
  check(c, channels_last({1, 3, 6, 6}));
  const cpu::ConvCacheStats before = cpu::conv_cache_stats();
  for (int i = 0; i < 3; ++i) check(c, channels_last({1, 3, 6, 6}));
  const cpu::ConvCacheStats after = cpu::conv_cache_stats();
  EXPECT_EQ(after.misses, before.misses);
  EXPECT_EQ(after.hits, before.hits + 3);
}

// 4 threads x 5 calls of a case with a channels-last result: how many
// results agreed with the reference.
int concurrent_agreeing_calls(const ConvCase& c, const F32Problem& p) {
  const Expected e = p.expected();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) {
        Handle out;
        AtenTensorHandle bias = p.hb.get();
        if (run_conv(c, p.hin.get(), p.hw.get(), &bias, out) != AOTI_TORCH_SUCCESS) return;
        void* data = nullptr;
        aoti_torch_get_data_ptr(out.get(), &data);
        const Layout l{e.sizes, channels_last(e.sizes), 0}, d = dense(e.sizes);
        bool same = true;
        for_each_index(e.sizes, [&](const std::vector<int64_t>& idx) {
          const double got = static_cast<const float*>(data)[l.at(idx)];
          same = same && std::fabs(got - e.value[d.at(idx)]) <= 1e-5 * e.scale[d.at(idx)] + 1e-6;
        });
        if (same) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  return ok.load();
}

TEST(CpuConv, ConcurrentCallsAgree) {
  const ConvCase c = conv2d(cl({2, 8, 12, 12}), dense({8, 8, 3, 3}), dense({8}), {1, 1},
                            {1, 1}, {1, 1});
  F32Problem p(c, noise);
  EXPECT_EQ(concurrent_agreeing_calls(c, p), 20);
}

// --- Constant weights (Note [Constant weights] in cpu/conv.cpp) -----------------------

// Marks the storage under weight handle w constant; returns its cache.
DerivedCache& mark_constant(AtenTensorHandle w) {
  Storage* s = handle_get(w, "test").storage().get();
  s->mark_constant();
  return *s->derived();
}

DerivedCache* cache_of(AtenTensorHandle w) { return handle_get(w, "test").storage()->derived(); }

// A new handle, on a new storage, over the memory of buf (as a model's
// update_constants copies new values into its blob and makes new handles).
Handle fresh_view(HostBuffer<float>& buf, const Layout& l) {
  Handle h;
  EXPECT_EQ(aoti_torch_create_tensor_from_blob(buf.data().data(), static_cast<int64_t>(l.sizes.size()),
                                               l.sizes.data(), l.strides.data(), l.offset, kF32,
                                               aoti_torch_device_type_cpu(), 0, h.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  return h;
}

Handle conv_of(const ConvCase& c, F32Problem& p, AtenTensorHandle w) {
  Handle out;
  AtenTensorHandle bias = p.hb.get();
  EXPECT_EQ(run_conv(c, p.hin.get(), w, c.bias ? &bias : nullptr, out), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  return out;
}

struct ConstantCase {
  const char* name;
  ConvCase c;
  size_t entries;  // cached weights: 0 where the chosen kernel reads the weight as it is
};

std::vector<ConstantCase> constant_cases() {
  return {
      // Dense NHWC: mode 2, the weight reordered to oneDNN's blocked layout.
      {"nhwc 3x3", conv2d(cl({1, 16, 10, 10}), cl({32, 16, 3, 3}), dense({32}), {1}, {1}, {1}), 1},
      {"nhwc 3x3 plain weight", conv2d(cl({2, 16, 9, 9}), dense({16, 16, 3, 3}), std::nullopt, {2},
                                       {1}, {1}), 1},
      // NCHW 3x3: mode 3 once the weight is constant.
      {"nchw 3x3", conv2d(dense({1, 16, 12, 12}), dense({16, 16, 3, 3}), dense({16}), {1}, {1},
                          {1}), 1},
      // NCHW 1x1: gemm reads the plain weight; nothing to cache.
      {"nchw 1x1", conv2d(dense({1, 16, 8, 8}), dense({24, 16, 1, 1}), dense({24}), {1}, {0},
                          {1}), 0},
      {"nchw depthwise 5x5", conv2d(dense({1, 16, 14, 14}), dense({16, 1, 5, 5}), dense({16}), {1},
                                    {2}, {1}, 16), 1},
      {"nhwc depthwise 3x3 s2", conv2d(cl({1, 16, 14, 14}), cl({16, 1, 3, 3}), dense({16}), {2},
                                       {1}, {1}, 16), 1},
      {"weight view at an offset", conv2d(cl({1, 16, 8, 8}), Layout{{16, 16, 3, 3},
                                                                    channels_last({16, 16, 3, 3}), 7},
                                          dense({16}), {1}, {1}, {1}), 1},
      // 1x1 on 1x1: an inner product on the weight in oneDNN's blocked layout
      // (Note [Convolutions as inner products]); a batch, a weight at an offset.
      {"1x1 on 1x1", conv2d(dense({2, 24, 1, 1}), dense({40, 24, 1, 1}), dense({40}), {1}, {0},
                            {1}), 1},
      {"1x1 on 1x1 weight at an offset", conv2d(cl({1, 16, 1, 1}), Layout{{8, 16, 1, 1},
                                                                          {16, 1, 16, 16}, 5},
                                                std::nullopt, {2}, {0}, {1}),
       // On AVX2 oneDNN 2.6 runs this one as gemm on the plain weight (Note [oneDNN's ISA]).
       cpu::onednn_avx512() ? size_t{1} : size_t{0}},
  };
}

TEST(CpuConvConstantWeights, SameValuesAsUncachedAndOneEntryPerWeight) {
  for (const ConstantCase& cc : constant_cases()) {
    SCOPED_TRACE(cc.name);
    F32Problem p(cc.c, noise);
    const Expected e = p.expected();
    ASSERT_EQ(cache_of(p.hw.get()), nullptr);
    expect_result(conv_of(cc.c, p, p.hw.get()).get(), e, 1e-5);  // not constant: no cache
    DerivedCache& cache = mark_constant(p.hw.get());
    for (int i = 0; i < 3; ++i) {  // the first call fills the cache, the others read it
      Handle out = conv_of(cc.c, p, p.hw.get());
      expect_result(out.get(), e, 1e-5);
      EXPECT_EQ(cache.size(), cc.entries);
    }
  }
}

TEST(CpuConvConstantWeights, UnmarkedWeightIsReadEveryCall) {
  for (const ConstantCase& cc : constant_cases()) {
    SCOPED_TRACE(cc.name);
    F32Problem p(cc.c, noise);
    expect_result(conv_of(cc.c, p, p.hw.get()).get(), p.expected(), 1e-5);
    for (int64_t i = 0; i < p.w.size(); ++i) p.w[i] = noise(i + 5000);  // new values in place
    expect_result(conv_of(cc.c, p, p.hw.get()).get(), p.expected(), 1e-5);
    EXPECT_EQ(cache_of(p.hw.get()), nullptr);
  }
}

// A constant replaced by new values at the same address (update_constants
// copies into the model's blob) comes on a new storage: its cache is its own.
TEST(CpuConvConstantWeights, NewStorageOverTheSameMemoryIsNotMistaken) {
  for (const ConstantCase& cc : constant_cases()) {
    SCOPED_TRACE(cc.name);
    F32Problem p(cc.c, noise);
    {
      Handle old = fresh_view(p.w, cc.c.w);
      mark_constant(old.get());
      expect_result(conv_of(cc.c, p, old.get()).get(), p.expected(), 1e-5);
      for (int64_t i = 0; i < p.w.size(); ++i) p.w[i] = noise(i + 7000);
      Handle replaced = fresh_view(p.w, cc.c.w);
      // While the old storage still lives (the container drops it after
      // making the new handle), and with or without a mark on the new one.
      expect_result(conv_of(cc.c, p, replaced.get()).get(), p.expected(), 1e-5);
      mark_constant(replaced.get());
      expect_result(conv_of(cc.c, p, replaced.get()).get(), p.expected(), 1e-5);
      EXPECT_EQ(cache_of(replaced.get())->size(), cc.entries);
    }
    for (int64_t i = 0; i < p.w.size(); ++i) p.w[i] = noise(i + 9000);
    Handle again = fresh_view(p.w, cc.c.w);
    mark_constant(again.get());
    expect_result(conv_of(cc.c, p, again.get()).get(), p.expected(), 1e-5);
  }
}

TEST(CpuConvConstantWeights, ThreadsShareOneCachedWeight) {
  const ConvCase c = conv2d(cl({1, 32, 14, 14}), cl({32, 32, 3, 3}), dense({32}), {1}, {1}, {1});
  F32Problem p(c, noise);
  DerivedCache& cache = mark_constant(p.hw.get());
  EXPECT_EQ(concurrent_agreeing_calls(c, p), 20);  // their first calls race to fill the cache
  EXPECT_EQ(cache.size(), 1u);
}

// A bfloat16 constant is converted to float32 on every call; only float32
// weights read in place are cached (nothing is kept for it).
TEST(CpuConvConstantWeights, HalfWeightIsNotCached) {
  HostBuffer<uint16_t> in(1 * 8 * 6 * 6, 0x3f80, kBF16), w(8 * 8 * 3 * 3, 0x3f80, kBF16);
  Handle hin = in.view(cl({1, 8, 6, 6})), hw = w.view(cl({8, 8, 3, 3}));
  DerivedCache& cache = mark_constant(hw.get());
  const ConvCase c = conv2d(cl({1, 8, 6, 6}), cl({8, 8, 3, 3}), std::nullopt, {1}, {1}, {1});
  Handle out;
  ASSERT_EQ(run_conv(c, hin.get(), hw.get(), nullptr, out), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_EQ(cache.size(), 0u);
}


// --- Fused convolutions (Note [Fused convolutions] in cpu/conv.cpp) ---------------------

// Checks a float32 result handle against want(index) (dense index n of e),
// each within the conv's tolerance scaled by `grow` (a binary mul/div or an
// activation can stretch the conv's error), plus oneDNN's approximations of
// the transcendental activations.
template <typename Want>
void expect_fused(AtenTensorHandle out, const Expected& e, double grow, Want&& want) {
  ASSERT_EQ(sizes_of(out), e.sizes);
  void* data = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(out, &data), AOTI_TORCH_SUCCESS);
  const Layout l{e.sizes, strides_of(out), 0}, d = dense(e.sizes);
  int failures = 0;
  for_each_index(e.sizes, [&](const std::vector<int64_t>& idx) {
    const int64_t n = d.at(idx);
    const double got = static_cast<const float*>(data)[l.at(idx)], w = want(idx, n);
    const double tol = grow * (1e-5 * e.scale[n] + 1e-6) + 1e-5 * std::fabs(w) + 1e-6;
    if (!(std::fabs(got - w) <= tol) && failures++ < 5) {
      std::string at;
      for (int64_t i : idx) at += std::to_string(i) + ",";
      ADD_FAILURE() << "out[" << at << "] = " << got << ", expected " << w;
    }
  });
  EXPECT_EQ(failures, 0);
}

AOTITorchError run_pointwise(const ConvCase& c, F32Problem& p, AtenTensorHandle w,
                             const Unary& u, Handle& ret) {
  UnaryArgs a(u);
  AtenTensorHandle bias = p.hb.get();
  return aoti_torch_cpu_mkldnn__convolution_pointwise(
      p.hin.get(), w, c.bias ? &bias : nullptr, c.padding.data(),
      static_cast<int64_t>(c.padding.size()), c.stride.data(),
      static_cast<int64_t>(c.stride.size()), c.dilation.data(),
      static_cast<int64_t>(c.dilation.size()), c.groups, u.attr.c_str(), a.scalars(), a.len(),
      a.algorithm(), ret.out());
}

AOTITorchError run_binary(const ConvCase& c, F32Problem& p, AtenTensorHandle other,
                          const std::string& binary, const Unary& u, bool in_place,
                          Handle& ret) {
  UnaryArgs a(u);
  AtenTensorHandle bias = p.hb.get();
  double alpha = 1.0;
  const char* ua = u.attr.c_str();
  auto* f = in_place ? aoti_torch_cpu_mkldnn__convolution_pointwise_binary_ : nullptr;
  const int64_t np = static_cast<int64_t>(c.padding.size()),
                ns = static_cast<int64_t>(c.stride.size()),
                nd = static_cast<int64_t>(c.dilation.size());
  if (in_place) {
    return f(other, p.hin.get(), p.hw.get(), c.bias ? &bias : nullptr, c.padding.data(), np,
             c.stride.data(), ns, c.dilation.data(), nd, c.groups, binary.c_str(), &alpha,
             u.attr == "none" ? nullptr : &ua, a.scalars(), a.len(), a.algorithm(), ret.out());
  }
  return aoti_torch_cpu_mkldnn__convolution_pointwise_binary(
      p.hin.get(), other, p.hw.get(), c.bias ? &bias : nullptr, c.padding.data(), np,
      c.stride.data(), ns, c.dilation.data(), nd, c.groups, binary.c_str(), &alpha,
      u.attr == "none" ? nullptr : &ua, a.scalars(), a.len(), a.algorithm(), ret.out());
}

int64_t fused_calls() { return cpu::conv_cache_stats().fused_calls; }

// Runs `c` with every activation as a fused post-op: one fused call each, a
// channels-last result, ATen's values.
void expect_every_activation_fused(const ConvCase& c, F32Problem& p, const Expected& e) {
  for (const Unary& u : every_unary()) {
    SCOPED_TRACE(u.attr + " " + u.algorithm);
    const int64_t before = fused_calls();
    Handle out;
    ASSERT_EQ(run_pointwise(c, p, p.hw.get(), u, out), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    // On AVX2 oneDNN 2.6 has only gemm for 3 input channels NCHW, and the unfused path
    // runs it (Note [oneDNN's ISA]).
    const bool fused = cpu::onednn_avx512() || c.in.sizes[1] != 3;
    EXPECT_EQ(fused_calls(), before + (fused ? 1 : 0));
    EXPECT_EQ(strides_of(out.get()), channels_last(e.sizes));
    expect_fused(out.get(), e, 1.2, [&](const std::vector<int64_t>&, int64_t n) {
      return activate(u, e.value[n]);
    });
  }
}

// Every activation is one primitive's post-op, with ATen's values, on a
// channels-last result.
TEST(CpuConvFused, EveryActivationIsFusedWithAtensValues) {
  const ConvCase c = conv2d(cl({2, 8, 7, 7}), cl({16, 8, 3, 3}), dense({16}), {1}, {1}, {1});
  F32Problem p(c, noise);
  const Expected e = p.expected();
  expect_every_activation_fused(c, p, e);
}

// The shapes a CNN has: a plain NCHW input (the result is channels-last all
// the same), stride 2 without bias, 1x1, depthwise, grouped, a 1-d conv.
TEST(CpuConvFused, ShapesOfACnn) {
  const std::vector<ConvCase> cases = {
      conv2d(dense({1, 3, 16, 16}), dense({8, 3, 7, 7}), dense({8}), {2}, {3}, {1}),
      conv2d(cl({1, 16, 9, 9}), cl({32, 16, 3, 3}), std::nullopt, {2}, {1}, {1}),
      conv2d(cl({1, 16, 8, 8}), cl({24, 16, 1, 1}), dense({24}), {1}, {0}, {1}),
      conv2d(cl({1, 16, 10, 10}), cl({16, 1, 5, 5}), dense({16}), {1}, {2}, {1}, 16),
      conv2d(cl({1, 16, 10, 10}), cl({32, 4, 3, 3}), dense({32}), {1}, {1}, {2}, 4),
      ConvCase{Layout{{2, 8, 12}, {96, 1, 8}, 0}, Layout{{4, 8, 3}, {24, 1, 8}, 0}, dense({4}),
               {1}, {1}, {1}, false, {0}, 1},
  };
  const Unary relu{"relu", {}, ""};
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(testing::PrintToString(c.in.sizes) + " * " + testing::PrintToString(c.w.sizes));
    F32Problem p(c, noise);
    const Expected e = p.expected();
    const int64_t before = fused_calls();
    Handle out;
    ASSERT_EQ(run_pointwise(c, p, p.hw.get(), relu, out), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    // On AVX2 oneDNN 2.6 has only gemm for 3 input channels NCHW, and the unfused path
    // runs it (Note [oneDNN's ISA]).
    const bool fused = cpu::onednn_avx512() || c.in.sizes[1] != 3;
    EXPECT_EQ(fused_calls(), before + (fused ? 1 : 0));
    EXPECT_EQ(strides_of(out.get()), channels_last(e.sizes));
    expect_fused(out.get(), e, 1, [&](const std::vector<int64_t>&, int64_t n) {
      return activate(relu, e.value[n]);
    });
  }
}

// other: the binary's operand, values in [0.5, 1.5) (so div is tame).
struct Other {
  HostBuffer<float> buf;
  Layout layout;
  Handle h;
  explicit Other(const Layout& l) : buf(l.extent(), 0.f, kF32), layout(l) {
    for (int64_t i = 0; i < buf.size(); ++i) buf[i] = 1.f + 0.5f * noise(i + 3000);
    h = buf.view(l);
  }
  double at(const std::vector<int64_t>& idx) const { return buf[layout.at(idx)]; }
};

// The out-of-place binary: a binary post-op reading other in place, then
// the activation; other in either layout.
TEST(CpuConvFused, BinaryWithOtherInEitherLayout) {
  const ConvCase c = conv2d(cl({2, 8, 7, 7}), cl({8, 8, 3, 3}), dense({8}), {1}, {1}, {1});
  F32Problem p(c, noise);
  const Expected e = p.expected();
  for (const std::string binary : {"add", "sub", "mul", "div"}) {
    for (const Layout& ol : {cl(e.sizes), dense(e.sizes)}) {
      for (const Unary& u : {Unary{"none", {}, ""}, Unary{"relu", {}, ""}}) {
        SCOPED_TRACE(binary + " " + u.attr + " other strides " + testing::PrintToString(ol.strides));
        Other other(ol);
        const std::vector<float> before_values = other.buf.data();
        const int64_t before = fused_calls();
        Handle out;
        ASSERT_EQ(run_binary(c, p, other.h.get(), binary, u, false, out), AOTI_TORCH_SUCCESS)
            << aotrt_last_error();
        // A plain other beside the channels-last result runs unfused (oneDNN
        // 2.6 misreads it as a post-op operand).
        EXPECT_EQ(fused_calls(), before + (ol.strides == channels_last(e.sizes) ? 1 : 0));
        EXPECT_EQ(strides_of(out.get()), channels_last(e.sizes));
        expect_fused(out.get(), e, 2.5, [&](const std::vector<int64_t>& idx, int64_t n) {
          return activate(u, combine(binary, e.value[n], other.at(idx)));
        });
        EXPECT_EQ(other.buf.data(), before_values);  // other is only read
      }
    }
  }
}

// The in-place binary_'s add is a sum post-op into other: no second buffer,
// no copy; the returned handle views other, in whichever layout it has.
TEST(CpuConvFused, InPlaceAddWritesIntoOther) {
  const ConvCase c = conv2d(cl({1, 8, 6, 6}), cl({8, 8, 3, 3}), dense({8}), {1}, {1}, {1});
  F32Problem p(c, noise);
  const Expected e = p.expected();
  for (const Layout& ol : {cl(e.sizes), dense(e.sizes)}) {
    SCOPED_TRACE("other strides " + testing::PrintToString(ol.strides));
    Other other(ol);
    const std::vector<float> old = other.buf.data();
    const Unary relu{"relu", {}, ""};
    const int64_t before = fused_calls();
    Handle out;
    ASSERT_EQ(run_binary(c, p, other.h.get(), "add", relu, true, out), AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    EXPECT_EQ(fused_calls(), before + 1);
    void *got = nullptr, *want = nullptr;
    ASSERT_EQ(aoti_torch_get_data_ptr(out.get(), &got), AOTI_TORCH_SUCCESS);
    ASSERT_EQ(aoti_torch_get_data_ptr(other.h.get(), &want), AOTI_TORCH_SUCCESS);
    EXPECT_EQ(got, want);
    EXPECT_EQ(strides_of(out.get()), strides_of(other.h.get()));
    expect_fused(other.h.get(), e, 1, [&](const std::vector<int64_t>& idx, int64_t n) {
      return activate(relu, e.value[n] + old[other.layout.at(idx)]);
    });
  }
}

// What the sum cannot serve runs unfused, with the same values: another
// binary, and an other that is the convolution's own input (written while
// it would be read).
TEST(CpuConvFused, InPlaceFallsBackWhereTheSumCannotServe) {
  const ConvCase c = conv2d(cl({1, 8, 6, 6}), cl({8, 8, 3, 3}), dense({8}), {1}, {1}, {1});
  {
    F32Problem p(c, noise);
    const Expected e = p.expected();
    Other other(cl(e.sizes));
    const std::vector<float> old = other.buf.data();
    const int64_t before = fused_calls();
    Handle out;
    ASSERT_EQ(run_binary(c, p, other.h.get(), "sub", Unary{"none", {}, ""}, true, out),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    EXPECT_EQ(fused_calls(), before + 1);  // the out-of-place fused op, then a copy
    expect_fused(other.h.get(), e, 1, [&](const std::vector<int64_t>& idx, int64_t n) {
      return e.value[n] - old[other.layout.at(idx)];
    });
  }
  {
    F32Problem p(c, noise);
    const Expected e = p.expected();  // from X before it is overwritten
    const std::vector<float> x = p.in.data();
    const int64_t before = fused_calls();
    Handle out;
    ASSERT_EQ(run_binary(c, p, p.hin.get(), "add", Unary{"none", {}, ""}, true, out),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    EXPECT_EQ(fused_calls(), before + 1);  // not into X: the out-of-place op, then a copy
    expect_fused(p.hin.get(), e, 1, [&](const std::vector<int64_t>& idx, int64_t n) {
      return e.value[n] + x[c.in.at(idx)];
    });
  }
}

// A constant weight (a freezing package's opaque constant is marked) is
// reordered for the fused primitive once.
TEST(CpuConvFused, ConstantWeightIsReorderedOnce) {
  const ConvCase c = conv2d(cl({1, 16, 10, 10}), cl({32, 16, 3, 3}), dense({32}), {1}, {1}, {1});
  F32Problem p(c, noise);
  const Expected e = p.expected();
  DerivedCache& cache = mark_constant(p.hw.get());
  const Unary relu{"relu", {}, ""};
  for (int i = 0; i < 3; ++i) {
    Handle out;
    ASSERT_EQ(run_pointwise(c, p, p.hw.get(), relu, out), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    expect_fused(out.get(), e, 1, [&](const std::vector<int64_t>&, int64_t n) {
      return activate(relu, e.value[n]);
    });
    EXPECT_EQ(cache.size(), 1u);
  }
}

// A 1x1 convolution of a 1x1 input with a constant weight (a squeeze-and-
// excitation block's) runs as a fused inner product (Note [Convolutions as
// inner products]): every activation, the binary reading other, the in-place
// sum into other, with the weight reordered once per primitive.
TEST(CpuConvFused, OneByOneOnOneByOneAsAnInnerProduct) {
  const ConvCase c = conv2d(cl({2, 24, 1, 1}), cl({40, 24, 1, 1}), dense({40}), {1}, {0}, {1});
  F32Problem p(c, noise);
  const Expected e = p.expected();
  DerivedCache& cache = mark_constant(p.hw.get());
  expect_every_activation_fused(c, p, e);
  for (const std::string binary : {"add", "mul"}) {
    SCOPED_TRACE(binary);
    Other other(cl(e.sizes));
    const int64_t before = fused_calls();
    Handle out;
    ASSERT_EQ(run_binary(c, p, other.h.get(), binary, Unary{"relu", {}, ""}, false, out),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    EXPECT_EQ(fused_calls(), before + 1);
    expect_fused(out.get(), e, 2.5, [&](const std::vector<int64_t>& idx, int64_t n) {
      return activate(Unary{"relu", {}, ""}, combine(binary, e.value[n], other.at(idx)));
    });
  }
  Other other(cl(e.sizes));
  const std::vector<float> old = other.buf.data();
  Handle out;
  ASSERT_EQ(run_binary(c, p, other.h.get(), "add", Unary{"none", {}, ""}, true, out),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  expect_fused(other.h.get(), e, 1, [&](const std::vector<int64_t>& idx, int64_t n) {
    return e.value[n] + old[other.layout.at(idx)];
  });
  // A copy per primitive (its key names the post-ops), made on its first call only.
  const size_t entries = cache.size();
  EXPECT_GE(entries, 1u);
  Handle again;
  ASSERT_EQ(run_pointwise(c, p, p.hw.get(), every_unary().front(), again), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_EQ(cache.size(), entries);
}

// --- Refusals ---------------------------------------------------------------------------

TEST(CpuConv, RefusesMismatchedChannelsAndParams) {
  const ConvCase c = conv2d(dense({1, 3, 5, 5}), dense({4, 2, 3, 3}), std::nullopt, {1, 1},
                            {0, 0}, {1, 1});
  F32Problem p(c, noise);
  Handle out;
  EXPECT_EQ(run_conv(c, p.hin.get(), p.hw.get(), nullptr, out), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("channels"), std::string::npos);

  ConvCase bad = conv2d(dense({1, 4, 5, 5}), dense({4, 2, 3, 3}), std::nullopt, {1, 1, 1},
                        {0, 0}, {1, 1}, 2);
  F32Problem q(bad, noise);
  EXPECT_EQ(run_conv(bad, q.hin.get(), q.hw.get(), nullptr, out), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("'stride'"), std::string::npos);

  bad.stride = {1, 1};
  bad.padding = {0, 0};
  bad.transposed = true;
  bad.output_padding = {1, 1};  // not below stride 1 or dilation 1
  EXPECT_EQ(run_conv(bad, q.hin.get(), q.hw.get(), nullptr, out), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("output_padding"), std::string::npos);

  // Kernel larger than the padded input.
  const ConvCase small = conv2d(dense({1, 2, 2, 2}), dense({4, 2, 3, 3}), std::nullopt, {1, 1},
                                {0, 0}, {1, 1});
  F32Problem r(small, noise);
  EXPECT_EQ(run_conv(small, r.hin.get(), r.hw.get(), nullptr, out), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("kernel"), std::string::npos);
  EXPECT_EQ(out.get(), nullptr);

  // A null ret0.
  EXPECT_EQ(aoti_torch_cpu_convolution(r.hin.get(), r.hw.get(), nullptr, c.stride.data(), 2,
                                       c.padding.data(), 2, c.dilation.data(), 2, 0,
                                       c.output_padding.data(), 2, 1, nullptr),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("ret0"), std::string::npos);
}

// --- Cross-checks against torch 2.13 (gen_cpu_conv_reference.py) ----------------------------

// Runs a case on small-integer buffers (buffer element i = small_int(i + seed))
// and returns the result in dense row-major order with its strides.
std::vector<float> run_small_int(const ConvCase& c, std::vector<int64_t>* strides) {
  F32Problem p(c, small_int);
  Handle out;
  AtenTensorHandle bias = p.hb.get();
  EXPECT_EQ(run_conv(c, p.hin.get(), p.hw.get(), c.bias ? &bias : nullptr, out),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  if (out.get() == nullptr) return {};
  *strides = strides_of(out.get());
  const std::vector<int64_t> sizes = sizes_of(out.get());
  void* data = nullptr;
  EXPECT_EQ(aoti_torch_get_data_ptr(out.get(), &data), AOTI_TORCH_SUCCESS);
  std::vector<float> r;
  const Layout l{sizes, *strides, 0};
  for_each_index(sizes, [&](const std::vector<int64_t>& idx) {
    r.push_back(static_cast<const float*>(data)[l.at(idx)]);
  });
  return r;
}

TEST(CpuConvTorchReference, TransposedGroupsOutputPaddingChannelsLast) {
  const ConvCase c{Layout{{1, 4, 3, 3}, {36, 1, 12, 4}, 0},
                  Layout{{4, 2, 3, 3}, {18, 9, 3, 1}, 0},
                  Layout{{4}, {1}, 0},
                  {2, 2}, {1, 1}, {1, 1}, true, {1, 1}, 2};
  std::vector<int64_t> strides;
  const std::vector<float> got = run_small_int(c, &strides);
  EXPECT_EQ(strides, (std::vector<int64_t>{144, 1, 24, 4}));
  const std::vector<float> want{
      11, -19, -17, 35, -12, 1, 1, 14, -33, -32, 10, -20, -18, 33, -13, -12, 14, -29, -35, -25,
      8, 6, 7, -14, -14, -14, 13, -15, -15, 7, -12, 22, 14, -36, -15, 7, -13, -33, 22, -7, 2,
      26, -41, 5, 18, 24, 33, -41, 26, -10, 6, 38, -25, -13, 15, 29, 30, -29, -32, 24, 10, 35,
      -21, -27, 14, 14, 12, 5, -20, 7, 14, -8, -9, 25, 17, -33, -12, 10, 10, 16, 7, -45, 4, -8,
      14, -28, -15, 35, 11, -23, 1, 9, -24, 36, -5, -8, -18, -15, -3, 15, -21, 10, -22, -13, 3,
      15, -27, 4, 15, 8, -17, 10, 17, -5, -2, -21, 0, 38, 2, -32, -15, 14, 19, 16, -13, 30, 4,
      2, 17, 28, 8, 27, 21, -2, 11, -33, 23, 10, 17, 0, 17, -33, 17, 4,
  };
  EXPECT_EQ(got, want);
}

TEST(CpuConvTorchReference, ChannelsLastChunkBatchStride0) {
  const ConvCase c{Layout{{1, 4, 5, 5}, {0, 1, 40, 8}, 4},
                  Layout{{3, 4, 3, 3}, {36, 9, 3, 1}, 0},
                  Layout{{3}, {1}, 0},
                  {1, 1}, {1, 1}, {1, 1}, false, {0, 0}, 1};
  std::vector<int64_t> strides;
  const std::vector<float> got = run_small_int(c, &strides);
  EXPECT_EQ(strides, (std::vector<int64_t>{75, 25, 5, 1}));
  const std::vector<float> want{
      -5, -71, 56, 62, 24, 36, -79, -19, -47, -35, -37, 12, -60, 66, 64, 55, 81, -79, -19, -13,
      -4, -91, 16, -20, 54, 41, -56, -19, 7, 22, 14, -73, 28, 41, 69, 63, -41, -83, -48, 26, 13,
      57, -73, 28, 60, 66, 59, -45, -50, -12, 10, -74, -17, 18, 42, 80, -34, -13, -80, 19, 9,
      -61, -73, -8, 76, 59, 66, -34, -13, -21, 26, 33, -51, -36, 10,
  };
  EXPECT_EQ(got, want);
}

TEST(CpuConvTorchReference, Conv1dPermutedWeight) {
  const ConvCase c{Layout{{2, 3, 6}, {18, 6, 1}, 0},
                  Layout{{4, 3, 2}, {6, 1, 3}, 0},
                  std::nullopt,
                  {1}, {0}, {1}, false, {0}, 1};
  std::vector<int64_t> strides;
  const std::vector<float> got = run_small_int(c, &strides);
  EXPECT_EQ(strides, (std::vector<int64_t>{20, 1, 4}));
  const std::vector<float> want{
      29, 1, 17, 22, -6, 13, -11, 31, 18, -6, -14, -1, -21, -19, -6, -30, -13, -7, -23, -6, -13,
      -30, -14, 24, 29, -1, -14, -16, 26, 13, -11, 13, 26, -16, -14, 1, 29, 24, -14, -30,
  };
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace aotrt::test
