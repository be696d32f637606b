// oneDNN-blocked (_mkldnn) constants of freezing=True packages as the fused
// ops read them: Note [Opaque constants] (shim/tensor_shims.cpp), Note
// [Deferred storages] (core/storage.h) and Note [Opaque weights in place]
// (cpu/onednn.cpp). A constant is registered as generated code registers it
// (aoti_torch_create_tensor_from_blob_v2 with layout _mkldnn and a real or
// edited descriptor); the fused convolution and linear must give the values
// of the same op on the plain weight (small integers: every sum is exact, so
// results are compared for equality), read the blocked bytes without making
// the plain copy, and the copy, when something asks for the elements, must
// hold them in the plain layout.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/handles.h"
#include "core/storage.h"
#include "core/tensor.h"
#include "cpu_ops_testing.h"
#include "fused_ops_abi.h"
#include "onednn_blobs.h"

namespace aotrt::test {
namespace {

const int32_t kF32 = 6;

// Offsets of the descriptor's fields (Note [Serialized oneDNN descriptors]).
constexpr size_t kNdims = 4, kDims = 8, kPaddedDims = 112, kStrides = 320, kInnerNblks = 416,
                 kInnerBlks = 424, kInnerIdxs = 520;

// The real conv blob, rewritten to `dims` with outer `strides` and inner blocks
// `blks` over dims `idxs` (nothing else of it changes).
std::vector<uint8_t> edited_blob(const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& strides,
                                 const std::vector<int64_t>& blks,
                                 const std::vector<int64_t>& idxs) {
  auto blob = bytes_of(kConvBlob);
  put<int32_t>(blob, kNdims, static_cast<int32_t>(dims.size()));
  for (size_t i = 0; i < 12; ++i) {
    const int64_t d = i < dims.size() ? dims[i] : 0;
    put<int64_t>(blob, kDims + 8 * i, d);
    put<int64_t>(blob, kPaddedDims + 8 * i, d);
    put<int64_t>(blob, kStrides + 8 * i, i < strides.size() ? strides[i] : 0);
    put<int64_t>(blob, kInnerBlks + 8 * i, i < blks.size() ? blks[i] : 0);
    put<int64_t>(blob, kInnerIdxs + 8 * i, i < idxs.size() ? idxs[i] : 0);
  }
  put<int32_t>(blob, kInnerNblks, static_cast<int32_t>(blks.size()));
  return blob;
}

// A _mkldnn constant over `blocked`, registered as generated code does.
Handle opaque(std::vector<float>& blocked, const std::vector<uint8_t>& blob,
              const std::vector<int64_t>& sizes) {
  Handle h;
  const std::vector<int64_t> strides = contiguous(sizes);
  EXPECT_EQ(aoti_torch_create_tensor_from_blob_v2(
                blocked.data(), static_cast<int64_t>(sizes.size()), sizes.data(),
                strides.data(), 0, kF32, aoti_torch_device_type_cpu(), 0, h.out(),
                aoti_torch_layout__mkldnn(), blob.data(), static_cast<int64_t>(blob.size())),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  return h;
}

bool plain_copy_made(AtenTensorHandle h) {
  return handle_get(h, "test").storage()->pending_source() == nullptr;
}

// The weight's elements through aotrt's own reading (which makes the plain copy).
std::vector<float> plain_elements(AtenTensorHandle h, const std::vector<int64_t>& sizes) {
  const TensorImpl& t = handle_get(h, "test");
  const auto* data = static_cast<const float*>(t.data_ptr());
  const Layout l{sizes, std::vector<int64_t>(t.strides().begin(), t.strides().end()), 0};
  std::vector<float> out;
  for_each_index(sizes, [&](const std::vector<int64_t>& idx) { out.push_back(data[l.at(idx)]); });
  return out;
}

struct Conv {
  int64_t c_in, c_out, groups, size;  // square image and 3x3 kernel, padding 1
};

// conv2d of X [1, c_in, s, s] (channels-last) with W [c_out, c_in/groups, 3, 3]
// given by its elements in torch's order, plus bias, in double.
std::vector<double> reference_conv(const Conv& c, const std::vector<float>& x,
                                   const std::vector<float>& w, const std::vector<float>& b) {
  const int64_t s = c.size, cg = c.c_in / c.groups, og = c.c_out / c.groups;
  std::vector<double> out(static_cast<size_t>(c.c_out * s * s));
  for (int64_t o = 0; o < c.c_out; ++o)
    for (int64_t y = 0; y < s; ++y)
      for (int64_t xx = 0; xx < s; ++xx) {
        double acc = b[static_cast<size_t>(o)];
        for (int64_t i = 0; i < cg; ++i)
          for (int64_t kh = 0; kh < 3; ++kh)
            for (int64_t kw = 0; kw < 3; ++kw) {
              const int64_t iy = y + kh - 1, ix = xx + kw - 1;
              if (iy < 0 || iy >= s || ix < 0 || ix >= s) continue;
              const int64_t ci = o / og * cg + i;
              acc += double(x[static_cast<size_t>((iy * s + ix) * c.c_in + ci)]) *
                     w[static_cast<size_t>(((o * cg + i) * 3 + kh) * 3 + kw)];
            }
        out[static_cast<size_t>((o * s + y) * s + xx)] = acc;
      }
  return out;
}

// Runs the fused convolution on `weight` and checks it against the reference.
void expect_conv(const Conv& c, AtenTensorHandle weight, const std::vector<float>& w) {
  const int64_t s = c.size;
  HostBuffer<float> x(c.c_in * s * s, 0.f, kF32), b(c.c_out, 0.f, kF32);
  for (int64_t i = 0; i < x.size(); ++i) x[i] = small_int(i);
  for (int64_t i = 0; i < b.size(); ++i) b[i] = small_int(i + 5);
  Handle xv = x.view({{1, c.c_in, s, s}, {c.c_in * s * s, 1, s * c.c_in, c.c_in}, 0});
  Handle bv = b.view(dense({c.c_out}));
  AtenTensorHandle bh = bv.get();
  const int64_t one[] = {1, 1};
  Handle out;
  ASSERT_EQ(aoti_torch_cpu_mkldnn__convolution_pointwise(xv.get(), weight, &bh, one, 2, one, 2,
                                                         one, 2, c.groups, "none", nullptr, 0,
                                                         nullptr, out.out()),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  const std::vector<double> want = reference_conv(c, x.data(), w, b.data());
  void* data = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(out.get(), &data), AOTI_TORCH_SUCCESS);
  const Layout l{{1, c.c_out, s, s}, strides_of(out.get()), 0};
  for (int64_t o = 0; o < c.c_out; ++o)
    for (int64_t y = 0; y < s; ++y)
      for (int64_t xx = 0; xx < s; ++xx) {
        ASSERT_EQ(static_cast<const float*>(data)[l.at({0, o, y, xx})],
                  want[static_cast<size_t>((o * s + y) * s + xx)])
            << "o " << o << " y " << y << " x " << xx;
      }
}

// The real Ohwi8o blob of an 8x3x3x3 conv: element (o, i, h, w) at
// h*72 + w*24 + i*8 + o (test_onednn_md.cpp decodes it).
TEST(CpuOpaqueWeights, ConvolutionReadsTheBlockedBytesAndNeverMakesThePlainCopy) {
  std::vector<float> blocked(224, 0.f), w(216);
  for (int o = 0; o < 8; ++o)
    for (int i = 0; i < 3; ++i)
      for (int h = 0; h < 3; ++h)
        for (int k = 0; k < 3; ++k) {
          const int idx = ((o * 3 + i) * 3 + h) * 3 + k;
          w[idx] = small_int(idx + 1);
          blocked[h * 72 + k * 24 + i * 8 + o] = w[idx];
        }
  const std::vector<int64_t> sizes{8, 3, 3, 3};
  Handle weight = opaque(blocked, bytes_of(kConvBlob), sizes);
  // Registering it allocates nothing, and its address is its blocked bytes, as
  // torch's shim gives a _mkldnn tensor's (generated code reads it at load).
  EXPECT_FALSE(plain_copy_made(weight.get()));
  void* address = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(weight.get(), &address), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(address, blocked.data());
  EXPECT_FALSE(plain_copy_made(weight.get()));

  expect_conv({3, 8, 1, 6}, weight.get(), w);
  expect_conv({3, 8, 1, 6}, weight.get(), w);  // the cached weight
  EXPECT_FALSE(plain_copy_made(weight.get()));

  // Read as elements, it is the plain tensor, channels-last (Note [Opaque constants]).
  EXPECT_EQ(plain_elements(weight.get(), sizes), w);
  EXPECT_TRUE(plain_copy_made(weight.get()));
  EXPECT_EQ(strides_of(weight.get()), (std::vector<int64_t>{27, 1, 9, 3}));
  ASSERT_EQ(aoti_torch_get_data_ptr(weight.get(), &address), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(address, blocked.data());  // the address generated code holds does not move
  expect_conv({3, 8, 1, 6}, weight.get(), w);
}

// A layout no primitive picks (plain oihw, no inner blocks) is reordered from
// the blocked bytes into the primitive's, still without the plain copy.
TEST(CpuOpaqueWeights, ConvolutionReordersAnotherBlockedLayoutWithoutThePlainCopy) {
  std::vector<float> blocked(216), w(216);
  for (int k = 0; k < 216; ++k) blocked[k] = w[k] = small_int(3 * k + 2);
  const std::vector<int64_t> sizes{8, 3, 3, 3};
  Handle weight = opaque(blocked, edited_blob(sizes, {27, 9, 3, 1}, {}, {}), sizes);
  expect_conv({3, 8, 1, 6}, weight.get(), w);
  EXPECT_FALSE(plain_copy_made(weight.get()));
  EXPECT_EQ(plain_elements(weight.get(), sizes), w);
}

// The real Goihw8g blob of a depthwise conv (groups 8): element (g, h, w) at
// h*24 + w*8 + g; oneDNN's dims are [g, O/g, I/g, kh, kw] on both sides.
TEST(CpuOpaqueWeights, GroupedConvolutionReadsItsBlockedBytes) {
  std::vector<float> blocked(80, 0.f), w(72);
  for (int g = 0; g < 8; ++g)
    for (int h = 0; h < 3; ++h)
      for (int k = 0; k < 3; ++k) {
        w[g * 9 + h * 3 + k] = small_int(g * 9 + h * 3 + k + 4);
        blocked[h * 24 + k * 8 + g] = w[g * 9 + h * 3 + k];
      }
  const std::vector<int64_t> sizes{8, 1, 3, 3};
  Handle weight = opaque(blocked, bytes_of(kDepthwiseBlob), sizes);
  expect_conv({8, 8, 8, 5}, weight.get(), w);
  EXPECT_FALSE(plain_copy_made(weight.get()));
  EXPECT_EQ(plain_elements(weight.get(), sizes), w);
}

// A linear's W [N, K] is read as [K, N]: the blocked layout's dims are reversed
// for oneDNN. W in an 8-row-blocked layout (element (n, k) at n/8*64 + k*8 + n%8).
TEST(CpuOpaqueWeights, LinearReadsItsWeightThroughReversedDims) {
  const int64_t m = 3, k = 8, n = 16;
  std::vector<float> blocked(n * k), w(n * k);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) {
      w[r * k + c] = small_int(r * k + c + 7);
      blocked[r / 8 * 64 + c * 8 + r % 8] = w[r * k + c];
    }
  Handle weight = opaque(blocked, edited_blob({n, k}, {64, 8}, {8}, {0}), {n, k});
  HostBuffer<float> x(m * k, 0.f, kF32), b(n, 0.f, kF32);
  for (int64_t i = 0; i < x.size(); ++i) x[i] = small_int(2 * i + 1);
  for (int64_t i = 0; i < n; ++i) b[i] = small_int(i);
  Handle xv = x.view(dense({m, k})), bv = b.view(dense({n}));
  AtenTensorHandle bh = bv.get();
  for (int pass = 0; pass < 2; ++pass) {
    Handle out;
    ASSERT_EQ(aoti_torch_cpu__linear_pointwise(xv.get(), weight.get(), &bh, "none", nullptr, 0,
                                               nullptr, out.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    void* data = nullptr;
    ASSERT_EQ(aoti_torch_get_data_ptr(out.get(), &data), AOTI_TORCH_SUCCESS);
    const Layout l{{m, n}, strides_of(out.get()), 0};
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double want = b[c];
        for (int64_t j = 0; j < k; ++j) want += double(x[r * k + j]) * w[c * k + j];
        ASSERT_EQ(static_cast<const float*>(data)[l.at({r, c})], want) << r << ", " << c;
      }
  }
  EXPECT_FALSE(plain_copy_made(weight.get()));
  EXPECT_EQ(plain_elements(weight.get(), {n, k}), w);
}

}  // namespace
}  // namespace aotrt::test
