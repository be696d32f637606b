// aoti_torch_cuda_convolution (cuda/conv.cpp) against a double-precision
// reference on the host: NCHW, channels-last, a channel chunk of a
// channels-last tensor (the seed's hazard), groups, depthwise, stride,
// padding, dilation, transposed with output padding, 1-d and 3-d, bias, and
// the output layout ATen's cuDNN path chooses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cuda/library_ops.h"
#include "cuda/runtime.h"
#include "library_test_util.h"
#include "package/temp_dir.h"
#include "runtime/conv_tuning_file.h"

namespace aotrt::cuda_test {
namespace {

// Strides of a dense channels-last tensor (dims N, spatial..., C outermost first).
std::vector<int64_t> channels_last(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> s(sizes.size());
  int64_t r = 1;
  s[1] = r;
  r *= sizes[1];
  for (size_t d = sizes.size(); d-- > 2;) {
    s[d] = r;
    r *= sizes[d];
  }
  s[0] = r;
  return s;
}

ViewSpec dense(const std::vector<int64_t>& sizes) { return {sizes, contiguous(sizes), 0}; }
ViewSpec dense_cl(const std::vector<int64_t>& sizes) { return {sizes, channels_last(sizes), 0}; }

struct ConvCase {
  int32_t dtype = kF32;
  ViewSpec x, w;
  bool has_bias = false;
  ViewSpec bias;
  std::vector<int64_t> stride{1}, padding{0}, dilation{1}, output_padding{0};
  bool transposed = false;
  int64_t groups = 1;
  bool want_channels_last = false;  // the output layout ATen's cuDNN path picks
  int64_t expected_packs = 0;       // -1: report only (cuDNN may or may not take the view)
  std::string label;
};

// Index of a view of rank 2 + sp from (n, c) and the last sp of three spatial indices.
std::vector<int64_t> index(int64_t n, int64_t c, const int64_t (&s)[3], size_t sp) {
  std::vector<int64_t> idx{n, c};
  for (size_t i = 3 - sp; i < 3; ++i) idx.push_back(s[i]);
  return idx;
}

// A case's operands on the device, and what its output must be.
struct Prepared {
  std::unique_ptr<DeviceView> x, w, bias;
  std::vector<int64_t> out_sizes, want_strides;
  std::vector<double> want, tol;
};

Prepared prepare(const ConvCase& c) {
  Prepared p;
  Rng rng(std::hash<std::string>{}(c.label));
  p.x = std::make_unique<DeviceView>(c.dtype, c.x, extent(c.x), rng);
  p.w = std::make_unique<DeviceView>(c.dtype, c.w, extent(c.w), rng);
  if (c.has_bias) p.bias = std::make_unique<DeviceView>(c.dtype, c.bias, extent(c.bias), rng);
  const DeviceView& x = *p.x;
  const DeviceView& w = *p.w;
  const DeviceView* bias = p.bias.get();

  // Geometry, padded to three spatial dims (leading ones of size 1).
  const size_t sp = c.x.sizes.size() - 2;
  auto param = [&](const std::vector<int64_t>& p, size_t i, int64_t fill) {
    if (i < 3 - sp) return fill;
    return p.size() == 1 ? p[0] : p[i - (3 - sp)];
  };
  int64_t in[3], k[3], st[3], pd[3], dl[3], op[3], out_sp[3];
  for (size_t i = 0; i < 3; ++i) {
    in[i] = i < 3 - sp ? 1 : c.x.sizes[2 + i - (3 - sp)];
    k[i] = i < 3 - sp ? 1 : c.w.sizes[2 + i - (3 - sp)];
    st[i] = param(c.stride, i, 1);
    pd[i] = param(c.padding, i, 0);
    dl[i] = param(c.dilation, i, 1);
    op[i] = c.transposed ? param(c.output_padding, i, 0) : 0;
    out_sp[i] = c.transposed ? (in[i] - 1) * st[i] - 2 * pd[i] + dl[i] * (k[i] - 1) + op[i] + 1
                             : (in[i] + 2 * pd[i] - dl[i] * (k[i] - 1) - 1) / st[i] + 1;
  }
  const int64_t N = c.x.sizes[0], C = c.x.sizes[1], G = c.groups;
  const int64_t O = c.transposed ? c.w.sizes[1] * G : c.w.sizes[0];
  const int64_t Cig = C / G, Cog = O / G;
  std::vector<int64_t> out_sizes{N, O};
  for (size_t i = 3 - sp; i < 3; ++i) out_sizes.push_back(out_sp[i]);

  // The reference and, per output, the sum of |terms| its rounding scales with.
  const int64_t spatial_out = out_sp[0] * out_sp[1] * out_sp[2];
  std::vector<double> want(static_cast<size_t>(N * O * spatial_out), 0.0), scale(want.size(), 0.0);
  auto out_at = [&](int64_t n, int64_t o, int64_t a, int64_t b, int64_t cc) -> size_t {
    return static_cast<size_t>(((n * O + o) * out_sp[0] + a) * out_sp[1] * out_sp[2] +
                               b * out_sp[2] + cc);
  };
  if (!c.transposed) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < O; ++o)
        for (int64_t a = 0; a < out_sp[0]; ++a)
          for (int64_t b = 0; b < out_sp[1]; ++b)
            for (int64_t cc = 0; cc < out_sp[2]; ++cc) {
              double sum = 0, abs = 0;
              const int64_t g = o / Cog;
              for (int64_t ic = 0; ic < Cig; ++ic)
                for (int64_t ka = 0; ka < k[0]; ++ka)
                  for (int64_t kb = 0; kb < k[1]; ++kb)
                    for (int64_t kc = 0; kc < k[2]; ++kc) {
                      const int64_t ia = a * st[0] - pd[0] + ka * dl[0];
                      const int64_t ib = b * st[1] - pd[1] + kb * dl[1];
                      const int64_t icc = cc * st[2] - pd[2] + kc * dl[2];
                      if (ia < 0 || ia >= in[0] || ib < 0 || ib >= in[1] || icc < 0 ||
                          icc >= in[2])
                        continue;
                      const int64_t si[3] = {ia, ib, icc}, ki[3] = {ka, kb, kc};
                      const double t = x.at(index(n, g * Cig + ic, si, sp)) *
                                       w.at(index(o, ic, ki, sp));
                      sum += t;
                      abs += std::fabs(t);
                    }
              want[out_at(n, o, a, b, cc)] = sum;
              scale[out_at(n, o, a, b, cc)] = abs;
            }
  } else {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t ci = 0; ci < C; ++ci)
        for (int64_t a = 0; a < in[0]; ++a)
          for (int64_t b = 0; b < in[1]; ++b)
            for (int64_t cc = 0; cc < in[2]; ++cc) {
              const int64_t si[3] = {a, b, cc};
              const double xv = x.at(index(n, ci, si, sp));
              const int64_t g = ci / Cig;
              for (int64_t oc = 0; oc < Cog; ++oc)
                for (int64_t ka = 0; ka < k[0]; ++ka)
                  for (int64_t kb = 0; kb < k[1]; ++kb)
                    for (int64_t kc = 0; kc < k[2]; ++kc) {
                      const int64_t oa = a * st[0] - pd[0] + ka * dl[0];
                      const int64_t ob = b * st[1] - pd[1] + kb * dl[1];
                      const int64_t occ = cc * st[2] - pd[2] + kc * dl[2];
                      if (oa < 0 || oa >= out_sp[0] || ob < 0 || ob >= out_sp[1] || occ < 0 ||
                          occ >= out_sp[2])
                        continue;
                      const int64_t ki[3] = {ka, kb, kc};
                      const double t = xv * w.at(index(ci, oc, ki, sp));
                      want[out_at(n, g * Cog + oc, oa, ob, occ)] += t;
                      scale[out_at(n, g * Cog + oc, oa, ob, occ)] += std::fabs(t);
                    }
            }
  }
  if (bias) {
    for (size_t i = 0; i < want.size(); ++i) {
      const int64_t o = static_cast<int64_t>(i) / spatial_out % O;
      want[i] += bias->at({o});
      scale[i] += std::fabs(bias->at({o}));
    }
  }
  // fp32 convolutions may use TF32 (PyTorch's default for cuDNN): products
  // carry ~2^-11 relative error each. Half types add the output's rounding.
  std::vector<double> tol(want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const double rounding = c.dtype == kBF16 ? 1.0 / 128 : c.dtype == kF16 ? 1.0 / 512 : 0.0;
    tol[i] = 2e-3 * scale[i] + rounding * std::fabs(want[i]) + 1e-6;
  }

  std::vector<int64_t> want_strides;
  if (c.want_channels_last && sp == 1) {
    want_strides = {out_sizes[2] * O, 1, O};
  } else {
    want_strides = c.want_channels_last ? channels_last(out_sizes) : contiguous(out_sizes);
  }
  p.out_sizes = std::move(out_sizes);
  p.want_strides = std::move(want_strides);
  p.want = std::move(want);
  p.tol = std::move(tol);
  return p;
}

AOTITorchError convolve(const ConvCase& c, const Prepared& p, Handle& out) {
  AtenTensorHandle bias_h = p.bias ? p.bias->get() : nullptr;
  return aoti_torch_cuda_convolution(
      p.x->get(), p.w->get(), p.bias ? &bias_h : nullptr, c.stride.data(),
      static_cast<int64_t>(c.stride.size()), c.padding.data(),
      static_cast<int64_t>(c.padding.size()), c.dilation.data(),
      static_cast<int64_t>(c.dilation.size()), c.transposed, c.output_padding.data(),
      static_cast<int64_t>(c.output_padding.size()), c.groups, out.out());
}

void verify(const ConvCase& c, const Prepared& p, AtenTensorHandle out) {
  ASSERT_EQ(sizes_of(out), p.out_sizes);
  EXPECT_EQ(strides_of(out), p.want_strides) << "output layout";
  expect_within(read(out), p.want, p.tol, c.label);
}

void check(const ConvCase& c) {
  SCOPED_TRACE(c.label);
  const Prepared p = prepare(c);
  const uint64_t packs_before = aotrt::cuda::pack_count();
  Handle out;
  AOTRT_OK(convolve(c, p, out));
  const uint64_t packs = aotrt::cuda::pack_count() - packs_before;
  if (c.expected_packs >= 0) {
    EXPECT_EQ(packs, static_cast<uint64_t>(c.expected_packs)) << "copies made around cuDNN";
  } else {
    std::printf("[ info     ] %s: cuDNN took the input %s (%llu copies)\n", c.label.c_str(),
                packs == 0 ? "in place" : "after packing", static_cast<unsigned long long>(packs));
  }
  verify(c, p, out.get());
}

TEST(CudaConv, Nchw3x3WithBias) {
  AOTRT_REQUIRE_GPU();
  ConvCase c;
  c.x = dense({2, 8, 13, 11});
  c.w = dense({6, 8, 3, 3});
  c.has_bias = true;
  c.bias = dense({6});
  c.padding = {1};
  c.label = "NCHW 3x3 pad 1";
  check(c);
}

TEST(CudaConv, ChannelsLastInOut) {
  AOTRT_REQUIRE_GPU();
  ConvCase c;
  c.x = dense_cl({2, 8, 13, 11});
  c.w = dense_cl({6, 8, 3, 3});
  c.has_bias = true;
  c.bias = dense({6});
  c.padding = {1};
  c.want_channels_last = true;
  c.label = "NHWC 3x3";
  check(c);
  // Either operand channels-last makes the output channels-last (ATen's
  // cudnn_conv_suggest_memory_format); the other one is used as it is.
  c.x = dense({2, 8, 13, 11});
  c.label = "NCHW input, channels-last weight";
  c.expected_packs = -1;  // cuDNN may want the input in the filter's layout
  check(c);
  c.x = dense_cl({2, 8, 13, 11});
  c.w = dense({6, 8, 3, 3});
  c.label = "channels-last input, NCHW weight";
  c.expected_packs = -1;  // cuDNN may want the filter in the input's layout
  check(c);
}

// The seed's hazard: half the channels of a channels-last tensor, at an
// offset, handed to a convolution as a view.
TEST(CudaConv, ChannelChunkOfChannelsLast) {
  AOTRT_REQUIRE_GPU();
  const int64_t C = 32, H = 9, W = 10;
  for (int64_t first : {int64_t{0}, int64_t{16}}) {
    ConvCase c;
    c.x = ViewSpec{{2, 16, H, W}, {C * H * W, 1, W * C, C}, first};
    c.w = dense_cl({8, 16, 1, 1});
    c.has_bias = true;
    c.bias = dense({8});
    c.want_channels_last = true;
    c.expected_packs = 0;  // Note [1x1 convolutions as GEMMs]: cuBLAS reads the chunk
    c.label = "1x1 conv of channels [" + std::to_string(first) + ", " +
              std::to_string(first + 16) + ") of a channels-last tensor";
    check(c);
    c.expected_packs = -1;
    c.w = dense_cl({8, 16, 3, 3});
    c.padding = {1};
    c.label = "3x3 conv of channels [" + std::to_string(first) + ", " +
              std::to_string(first + 16) + ")";
    check(c);
    // As the generated code passes it for batch 1: stride 0 on the batch.
    // c10 then calls the input contiguous, so with an NCHW weight the output
    // is contiguous; with a channels-last weight it is channels-last.
    c.x = ViewSpec{{1, 16, H, W}, {0, 1, W * C, C}, first};
    c.w = dense({8, 16, 3, 3});
    c.want_channels_last = false;
    c.label = "3x3 conv of a batch-1 chunk with batch stride 0, NCHW weight";
    check(c);
    c.w = dense_cl({8, 16, 3, 3});
    c.want_channels_last = true;
    c.label = "3x3 conv of a batch-1 chunk with batch stride 0, channels-last weight";
    check(c);
  }
}

TEST(CudaConv, PointwiseConvolutionsAreGemms) {
  AOTRT_REQUIRE_GPU();
  ConvCase c;
  c.x = dense({1, 24, 7, 9});  // NCHW batch 1: [pixels, C] column-major
  c.w = dense({10, 24, 1, 1});
  c.has_bias = true;
  c.bias = dense({10});
  c.label = "1x1 NCHW batch 1";
  check(c);
  c.x = dense({3, 24, 7, 9});  // NCHW batch 3: pixels do not merge, cuDNN
  c.label = "1x1 NCHW batch 3";
  check(c);
  c.x = dense_cl({3, 24, 7, 9});
  c.w = dense({10, 24, 1, 1});  // 1x1 NCHW and NHWC weights are the same memory
  c.want_channels_last = true;
  c.label = "1x1 NHWC";
  check(c);
  c.x = ViewSpec{{2, 12, 5}, {5 * 20, 1, 20}, 8};  // conv1d on a channel chunk of [N, L, C]
  c.w = ViewSpec{{10, 12, 1}, {12, 1, 1}, 0};
  c.want_channels_last = false;
  c.expected_packs = -1;
  c.label = "1x1 conv1d of a channel chunk";
  check(c);
}

TEST(CudaConv, GroupsAndDepthwise) {
  AOTRT_REQUIRE_GPU();
  ConvCase c;
  c.x = dense({2, 8, 10, 12});
  c.w = dense({6, 4, 3, 3});
  c.groups = 2;
  c.padding = {1};
  c.label = "groups 2";
  check(c);
  c.w = dense({8, 1, 3, 3});
  c.groups = 8;
  c.stride = {2};
  c.label = "depthwise stride 2";
  check(c);
  c.x = dense_cl({2, 8, 10, 12});
  c.w = dense_cl({8, 1, 3, 3});
  c.want_channels_last = true;
  c.label = "depthwise channels-last";
  check(c);
}

TEST(CudaConv, StrideDilationAsymmetricPadding) {
  AOTRT_REQUIRE_GPU();
  ConvCase c;
  c.x = dense({1, 3, 17, 14});
  c.w = dense({5, 3, 3, 2});
  c.stride = {2, 1};
  c.padding = {1, 2};
  c.dilation = {2, 1};
  c.has_bias = true;
  c.bias = ViewSpec{{5}, {3}, 1};  // a strided bias
  c.expected_packs = 1;            // the bias is packed (tiny)
  c.label = "stride (2,1) padding (1,2) dilation (2,1) kernel 3x2";
  check(c);
}

TEST(CudaConv, Transposed) {
  AOTRT_REQUIRE_GPU();
  for (int64_t groups : {int64_t{1}, int64_t{2}}) {
    ConvCase c;
    c.transposed = true;
    c.groups = groups;
    c.x = dense({2, 6, 7, 5});
    c.w = dense({6, 4 / groups, 3, 3});  // [C_in, C_out / groups, kh, kw]
    c.stride = {2};
    c.padding = {1};
    c.output_padding = {1};
    c.has_bias = true;
    c.bias = dense({4});
    c.label = "transposed stride 2 output_padding 1 groups " + std::to_string(groups);
    check(c);
    c.x = dense_cl({2, 6, 7, 5});
    c.w = dense_cl({6, 4 / groups, 3, 3});
    c.want_channels_last = true;
    c.label = "transposed channels-last groups " + std::to_string(groups);
    check(c);
  }
  ConvCase c;
  c.transposed = true;
  c.x = dense({1, 3, 6, 6});
  c.w = dense({3, 2, 2, 3});
  c.stride = {1, 2};
  c.dilation = {2, 1};
  c.output_padding = {1, 1};  // < dilation in H, < stride in W
  c.padding = {0, 1};
  c.expected_packs = 1;  // Note [Large output padding]: H is cropped from a temporary
  c.label = "transposed with output padding >= stride (H) and < stride (W)";
  check(c);
  c.padding = {1, 1};
  c.output_padding = {2, 1};  // H: >= stride 1 but < dilation 3, as ATen requires
  c.dilation = {3, 1};
  c.label = "transposed with output padding 2 in H, padding 1";
  check(c);
}

TEST(CudaConv, OneAndThreeSpatialDims) {
  AOTRT_REQUIRE_GPU();
  ConvCase c;
  c.x = dense({2, 5, 30});
  c.w = dense({7, 5, 4});
  c.stride = {2};
  c.padding = {1};
  c.has_bias = true;
  c.bias = dense({7});
  c.label = "conv1d";
  check(c);
  c.x = ViewSpec{{2, 5, 30}, {5, 1, 10}, 0};  // a transposed [N, L, C] input
  c.label = "conv1d of a [N, L, C] input viewed as [N, C, L]";
  c.expected_packs = -1;
  check(c);
  ConvCase d;
  d.x = dense({1, 3, 5, 6, 7});
  d.w = dense({4, 3, 3, 3, 3});
  d.padding = {1};
  d.has_bias = true;
  d.bias = dense({4});
  d.label = "conv3d";
  check(d);
  d.x = dense_cl({1, 3, 5, 6, 7});
  d.w = dense_cl({4, 3, 3, 3, 3});
  d.want_channels_last = true;
  d.label = "conv3d channels-last-3d";
  check(d);
}

TEST(CudaConv, HalfPrecisions) {
  AOTRT_REQUIRE_GPU();
  for (int32_t dt : {kBF16, kF16}) {
    ConvCase c;
    c.dtype = dt;
    c.x = dense_cl({2, 16, 12, 12});
    c.w = dense_cl({24, 16, 3, 3});
    c.padding = {1};
    c.has_bias = true;
    c.bias = dense({24});
    c.want_channels_last = true;
    c.label = std::string(dt == kBF16 ? "bf16" : "fp16") + " channels-last";
    check(c);
    c.x = dense({2, 16, 12, 12});
    c.w = dense({24, 16, 3, 3});
    c.want_channels_last = false;
    c.label = std::string(dt == kBF16 ? "bf16" : "fp16") + " NCHW";
    check(c);
  }
}

TEST(CudaConv, RefusesWhatItCannotServe) {
  AOTRT_REQUIRE_GPU();
  Rng rng(5);
  DeviceView x(kF32, dense({1, 4, 8, 8}), 256, rng);
  DeviceView w16(kF16, dense({2, 4, 3, 3}), 72, rng);
  DeviceView w(kF32, dense({2, 3, 3, 3}), 54, rng);
  const int64_t one[] = {1}, zero[] = {0}, three[] = {1, 1, 1};
  AtenTensorHandle out = nullptr;
  EXPECT_EQ(aoti_torch_cuda_convolution(x.get(), w16.get(), nullptr, one, 1, zero, 1, one, 1, 0,
                                        zero, 1, 1, &out),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("should be the same"), std::string::npos)
      << aotrt_last_error();
  EXPECT_EQ(aoti_torch_cuda_convolution(x.get(), w.get(), nullptr, one, 1, zero, 1, one, 1, 0,
                                        zero, 1, 1, &out),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("expects input with 3 channels, but got 4"),
            std::string::npos)
      << aotrt_last_error();
  EXPECT_EQ(aoti_torch_cuda_convolution(x.get(), w.get(), nullptr, three, 3, zero, 1, one, 1, 0,
                                        zero, 1, 1, &out),
            AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("'stride' has 3 values for 2 spatial dims"),
            std::string::npos)
      << aotrt_last_error();
  EXPECT_EQ(aoti_torch_cuda_convolution(x.get(), w.get(), nullptr, one, 1, zero, 1, one, 1, 0,
                                        zero, 1, 1, nullptr),
            AOTI_TORCH_FAILURE);
  EXPECT_EQ(out, nullptr);
}


// --- Autotuning (Note [Convolution autotuning], Note [Convolution tuning file]) ----------

using aotrt::cuda::ConvTuningCounters;
using aotrt::cuda::conv_tuning_counters;
using aotrt::cuda::reset_conv_tuning_for_testing;

// Four configurations cuDNN serves in place: fp32 NCHW with bias,
// channels-last, transposed, fp16.
std::vector<ConvCase> tuning_cases() {
  std::vector<ConvCase> cases(4);
  cases[0].x = dense({2, 16, 14, 14});
  cases[0].w = dense({32, 16, 3, 3});
  cases[0].padding = {1};
  cases[0].has_bias = true;
  cases[0].bias = dense({32});
  cases[0].label = "tuning: NCHW 3x3";
  cases[1].x = dense_cl({2, 16, 14, 14});
  cases[1].w = dense_cl({32, 16, 3, 3});
  cases[1].padding = {1};
  cases[1].stride = {2};
  cases[1].want_channels_last = true;
  cases[1].label = "tuning: NHWC 3x3 stride 2";
  cases[2].transposed = true;
  cases[2].x = dense({2, 16, 7, 7});
  cases[2].w = dense({16, 8, 3, 3});
  cases[2].stride = {2};
  cases[2].padding = {1};
  cases[2].output_padding = {1};
  cases[2].label = "tuning: transposed stride 2";
  cases[3].dtype = kF16;
  cases[3].x = dense_cl({2, 16, 12, 12});
  cases[3].w = dense_cl({24, 16, 3, 3});
  cases[3].padding = {1};
  cases[3].want_channels_last = true;
  cases[3].label = "tuning: fp16 channels-last";
  return cases;
}

ConvTuningCounters since(const ConvTuningCounters& before) {
  ConvTuningCounters now = conv_tuning_counters();
  now.tuned -= before.tuned;
  now.candidates_timed -= before.candidates_timed;
  now.loaded -= before.loaded;
  now.heuristic -= before.heuristic;
  return now;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream s(text);
  for (std::string line; std::getline(s, line);) lines.push_back(line);
  return lines;
}

// Each test starts as a new process would and leaves tuning on, in memory
// only: later tests write no file.
class CudaConvTuning : public ::testing::Test {
 protected:
  void TearDown() override { reset_conv_tuning_for_testing(true, ""); }
  aotrt::package::TempDir dir_;
  std::string file_ = dir_.path() + "/tuning.txt";
};

TEST_F(CudaConvTuning, TunedAndUntunedBothMatchTheReference) {
  AOTRT_REQUIRE_GPU();
  const auto cases = tuning_cases();
  reset_conv_tuning_for_testing(true, "");
  ConvTuningCounters before = conv_tuning_counters();
  for (const ConvCase& c : cases) check(c);
  ConvTuningCounters d = since(before);
  EXPECT_EQ(d.tuned, 4);
  EXPECT_GE(d.candidates_timed, 2) << "at least one configuration had engines to time";
  EXPECT_EQ(d.loaded, 0);
  EXPECT_EQ(d.heuristic, 0);
  std::printf("[ info     ] tuning timed %lld candidate plans for 4 configurations\n",
              static_cast<long long>(d.candidates_timed));

  // Calls after the first run the chosen plan: nothing is chosen again.
  before = conv_tuning_counters();
  for (const ConvCase& c : cases) check(c);
  d = since(before);
  EXPECT_EQ(d.tuned + d.loaded + d.heuristic, 0);

  reset_conv_tuning_for_testing(false, "");  // AOTRT_CUDNN_BENCHMARK=0
  before = conv_tuning_counters();
  for (const ConvCase& c : cases) check(c);
  d = since(before);
  EXPECT_EQ(d.heuristic, 4);
  EXPECT_EQ(d.tuned, 0);
  EXPECT_EQ(d.candidates_timed, 0) << "tuning off times nothing";
  EXPECT_EQ(d.loaded, 0);
}

TEST_F(CudaConvTuning, ChoicesPersistAndASecondProcessTimesNothing) {
  AOTRT_REQUIRE_GPU();
  const auto cases = tuning_cases();
  reset_conv_tuning_for_testing(true, file_);
  ConvTuningCounters before = conv_tuning_counters();
  for (const ConvCase& c : cases) check(c);
  ConvTuningCounters d = since(before);
  EXPECT_EQ(d.tuned, 4);
  EXPECT_EQ(d.loaded, 0);

  const std::string text = slurp(file_);
  const auto lines = lines_of(text);
  ASSERT_EQ(lines.size(), 5u) << "the header and one line per configuration:\n" << text;
  EXPECT_EQ(lines[0], aotrt::runtime::kConvTuningHeader);
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto entry = aotrt::runtime::parse_conv_tuning_line(lines[i]);
    ASSERT_TRUE(entry.has_value()) << lines[i];
    // "cudnn<version>.sm<cc>.<device name>:<configuration>"
    EXPECT_EQ(entry->first.rfind("cudnn", 0), 0u) << lines[i];
    EXPECT_NE(entry->first.find(".sm"), std::string::npos) << lines[i];
    EXPECT_GE(entry->second.engine, 0);
  }

  // A new process: the table is read from the file and nothing is timed.
  reset_conv_tuning_for_testing(true, file_);
  before = conv_tuning_counters();
  for (const ConvCase& c : cases) check(c);
  d = since(before);
  EXPECT_EQ(d.loaded, 4);
  EXPECT_EQ(d.tuned, 0);
  EXPECT_EQ(d.candidates_timed, 0);
  EXPECT_EQ(d.heuristic, 0);
  EXPECT_EQ(slurp(file_), text) << "nothing new to write";

  // Tuning off neither reads nor writes the file.
  const std::string untouched = dir_.path() + "/off/tuning.txt";
  reset_conv_tuning_for_testing(false, untouched);
  before = conv_tuning_counters();
  check(cases[0]);
  EXPECT_EQ(since(before).heuristic, 1);
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/off"));
}

TEST_F(CudaConvTuning, ACorruptOrStaleFileIsIgnored) {
  AOTRT_REQUIRE_GPU();
  const auto cases = tuning_cases();
  // A file that is not a tuning file: read as empty, never written.
  const char raw[] = "\x00\x01 not a tuning file\nk 1 -\n";
  const std::string garbage(raw, sizeof raw - 1);
  {
    std::ofstream out(file_, std::ios::binary);
    out << garbage;
  }
  reset_conv_tuning_for_testing(true, file_);
  ConvTuningCounters before = conv_tuning_counters();
  check(cases[0]);
  EXPECT_EQ(since(before).tuned, 1);
  EXPECT_EQ(slurp(file_), garbage);

  // A tuning file whose lines are corrupt or name an engine this cuDNN does
  // not have: the configuration is tuned again and its line replaced.
  const std::string good = dir_.path() + "/good.txt";
  reset_conv_tuning_for_testing(true, good);
  check(cases[0]);
  const auto lines = lines_of(slurp(good));
  ASSERT_EQ(lines.size(), 2u);
  const auto entry = aotrt::runtime::parse_conv_tuning_line(lines[1]);
  ASSERT_TRUE(entry.has_value());
  {
    std::ofstream out(file_, std::ios::binary | std::ios::trunc);
    out << aotrt::runtime::kConvTuningHeader << "\n"
        << entry->first << " 999999 -\n"
        << "garbage line\n"
        << entry->first << "x 1 2:\n";
  }
  reset_conv_tuning_for_testing(true, file_);
  before = conv_tuning_counters();
  check(cases[0]);
  const ConvTuningCounters d = since(before);
  EXPECT_EQ(d.tuned, 1) << "a stored engine that does not finalize is tuned again";
  EXPECT_EQ(d.loaded, 0);
  const auto rewritten = lines_of(slurp(file_));
  ASSERT_EQ(rewritten.size(), 2u) << slurp(file_);
  const auto replaced = aotrt::runtime::parse_conv_tuning_line(rewritten[1]);
  ASSERT_TRUE(replaced.has_value());
  EXPECT_EQ(replaced->first, entry->first);
  EXPECT_NE(replaced->second.engine, 999999);
}

// Note [CUDA graph mode]: a configuration first met while the stream captures
// is not timed (no host wait); the heuristic's choice is captured and replays
// correctly.
TEST_F(CudaConvTuning, NothingIsTimedWhileTheStreamCaptures) {
  AOTRT_REQUIRE_GPU();
  const ConvCase c = tuning_cases()[0];
  SCOPED_TRACE(c.label);
  const Prepared p = prepare(c);  // inputs on the default stream
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // A private stream, as graph mode captures on (Note [Private pools for
  // graph capture]); undone however the test ends.
  struct CaptureStream {
    cudaStream_t stream = nullptr;
    CaptureStream() {
      EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
      aotrt::cuda::set_private_pool(0, stream, true);
      aotrt::cuda::set_current_cuda_stream(0, stream);
    }
    ~CaptureStream() {
      EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      aotrt::cuda::set_current_cuda_stream(0, nullptr);
      aotrt::cuda::set_private_pool(0, stream, false);
      aotrt::cuda::forget_stream(0, stream);  // Note [A stream that goes away]
      EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
    }
  };
  CaptureStream guard;
  Handle out;  // destroyed before the guard: no live block is left in the pool
  cudaStream_t stream = guard.stream;
  {
    // Untuned, uncaptured: leaves the blocks the call needs in the stream's pool.
    reset_conv_tuning_for_testing(false, "");
    Handle warm;
    EXPECT_EQ(convolve(c, p, warm), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    verify(c, p, warm.get());
  }
  reset_conv_tuning_for_testing(true, "");
  const ConvTuningCounters before = conv_tuning_counters();
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const AOTITorchError status = convolve(c, p, out);
  const std::string error = status == AOTI_TORCH_SUCCESS ? "" : aotrt_last_error();
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  const ConvTuningCounters d = since(before);
  EXPECT_EQ(status, AOTI_TORCH_SUCCESS) << error;
  EXPECT_EQ(ended, cudaSuccess) << cudaGetErrorString(ended);
  EXPECT_EQ(d.tuned, 0);
  EXPECT_EQ(d.candidates_timed, 0);
  EXPECT_EQ(d.heuristic, 1);
  if (status == AOTI_TORCH_SUCCESS && ended == cudaSuccess) {
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    verify(c, p, out.get());
    EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  }
  if (graph != nullptr) EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  out.reset();
}

}  // namespace
}  // namespace aotrt::cuda_test
