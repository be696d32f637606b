// Tensor lifetime and creation shims: empty_strided[_pinned],
// create_tensor_from_blob[_v2], new_tensor_handle, new_uninitialized_tensor,
// delete_tensor_object. Storage sizes are torch 2.13's
// (aoti_torch_get_storage_size of the same calls into libtorch).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "conformance_backends.h"

using namespace aotrt::test;

namespace {

const Backend kCpu = built_backends()[0];

int64_t storage_size(AtenTensorHandle h) {
  int64_t n = -1;
  EXPECT_EQ(aoti_torch_get_storage_size(h, &n), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  return n;
}

TEST(ShimEmptyStrided, StorageIsTheViewsSpan) {
  struct Case {
    Dims sizes, strides;
    int32_t dtype;
    int64_t nbytes;
  };
  const Case cases[] = {{{2, 3}, {3, 1}, kF32, 24},  {{2, 3}, {1, 4}, kF32, 40},
                        {{0, 3}, {3, 1}, kF32, 0},   {{3}, {0}, kF32, 4},
                        {{}, {}, kF32, 4},           {{2, 2}, {2, 1}, kF64, 32},
                        {{5}, {3}, kI16, 26},        {{1, 1}, {100, 100}, kU8, 1}};
  for (const Case& c : cases) {
    const Counters before = counters(kCpu);
    Tensor t = empty(kCpu, c.sizes, c.strides, c.dtype);
    ASSERT_TRUE(t);
    EXPECT_EQ(storage_size(t.get()), c.nbytes);
    const Counters during = counters(kCpu);
    EXPECT_EQ(during.live_bytes, before.live_bytes + c.nbytes);
    EXPECT_EQ(during.handles, before.handles + 1);
    const Meta m = meta(t.get());
    EXPECT_EQ(m.sizes, c.sizes);
    EXPECT_EQ(m.strides, c.strides);
    EXPECT_EQ(m.offset, 0);
    EXPECT_EQ(m.dtype, c.dtype);
    t.reset();
    EXPECT_EQ(counters(kCpu), before);
  }
}

TEST(ShimEmptyStrided, PinnedIsHostMemory) {
  const Dims sizes{4}, strides{1};
  Tensor t;
  ASSERT_EQ(aoti_torch_empty_strided_pinned(1, sizes.data(), strides.data(), kF32, 0, 0, t.out()),
            AOTI_TORCH_SUCCESS);
  int32_t device = -1;
  ASSERT_EQ(aoti_torch_get_device_type(t.get(), &device), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(device, 0);
  EXPECT_EQ(storage_size(t.get()), 16);
}

TEST(ShimEmptyStrided, CpuIndexIsMinusOneWhateverWasPassed) {
  // torch reports cpu as device index -1 even when made with index 0.
  for (int32_t index : {-1, 0}) {
    const Dims sizes{2}, strides{1};
    Tensor t;
    ASSERT_EQ(aoti_torch_empty_strided(1, sizes.data(), strides.data(), kF32, 0, index, t.out()),
              AOTI_TORCH_SUCCESS);
    int32_t got = 7;
    ASSERT_EQ(aoti_torch_get_device_index(t.get(), &got), AOTI_TORCH_SUCCESS);
    EXPECT_EQ(got, -1);
  }
}

TEST(ShimEmptyStrided, ZeroDimsMayPassNullPointers) {
  Tensor t;
  ASSERT_EQ(aoti_torch_empty_strided(0, nullptr, nullptr, kF32, 0, 0, t.out()), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(storage_size(t.get()), 4);
  int64_t numel = 0;
  ASSERT_EQ(aoti_torch_get_numel(t.get(), &numel), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(numel, 1);
}

TEST(ShimEmptyStrided, OutOfMemoryIsRefusedWithoutStateChange) {
  const Dims sizes{int64_t{1} << 58}, strides{1};
  const Counters before = counters(kCpu);
  AtenTensorHandle out = reinterpret_cast<AtenTensorHandle>(0x1234);
  EXPECT_EQ(aoti_torch_empty_strided(1, sizes.data(), strides.data(), kF32, 0, 0, &out),
            AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"cannot allocate"}));
  EXPECT_EQ(out, reinterpret_cast<AtenTensorHandle>(0x1234));
  EXPECT_EQ(counters(kCpu), before);
}

TEST(ShimEmptyStrided, AllocatorLimitIsRefusedWithoutStateChange) {
  aotrt::Allocator& a = aotrt::allocator_for(aotrt::cpu_device());
  const Counters before = counters(kCpu);
  a.set_limit(before.live_bytes + 100);
  const Dims sizes{64}, strides{1};
  AtenTensorHandle out = nullptr;
  const AOTITorchError rc = aoti_torch_empty_strided(1, sizes.data(), strides.data(), kF32, 0, 0, &out);
  a.set_limit(0);
  EXPECT_EQ(rc, AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_empty_strided", "256 bytes", "limit"}));
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(counters(kCpu), before);
}

#ifndef AOTRT_WITH_CUDA
TEST(ShimEmptyStrided, CudaOfABuildWithoutCudaIsRefused) {
  const Dims sizes{2}, strides{1};
  const Counters before = counters(kCpu);
  AtenTensorHandle out = nullptr;
  EXPECT_EQ(aoti_torch_empty_strided(1, sizes.data(), strides.data(), kF32, 1, 0, &out),
            AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_empty_strided", "without CUDA"}));
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(counters(kCpu), before);
}
#endif

TEST(ShimFromBlob, StorageStartsAtDataAndCoversOffsetAndSpan) {
  // torch 2.13: storage size and data_ptr - data of libtorch's from_blob.
  struct Case {
    Dims sizes, strides;
    int64_t offset, nbytes, data_offset_bytes;
  };
  const Case cases[] = {{{2, 3}, {3, 1}, 0, 24, 0},  {{2, 3}, {3, 1}, 5, 44, 20},
                        {{3}, {0}, 2, 12, 8},         {{}, {}, 4, 20, 16},
                        {{2, 2}, {1, 2}, 1, 20, 4},   {{0, 3}, {3, 1}, 5, 20, -1},
                        {{0}, {1}, 7, 28, -1}};
  std::vector<float> buf(100, 0.f);
  for (const Case& c : cases) {
    const Counters before = counters(kCpu);
    Tensor t;
    ASSERT_EQ(aoti_torch_create_tensor_from_blob(buf.data(), static_cast<int64_t>(c.sizes.size()),
                                                 c.sizes.data(), c.strides.data(), c.offset,
                                                 kF32, 0, 0, t.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    EXPECT_EQ(storage_size(t.get()), c.nbytes);
    int64_t numel = 0;
    ASSERT_EQ(aoti_torch_get_storage_numel(t.get(), &numel), AOTI_TORCH_SUCCESS);
    EXPECT_EQ(numel, c.nbytes / 4);
    void* data = nullptr;
    ASSERT_EQ(aoti_torch_get_data_ptr(t.get(), &data), AOTI_TORCH_SUCCESS);
    if (c.data_offset_bytes < 0) {
      EXPECT_EQ(data, nullptr) << "torch's data_ptr of an empty tensor is null";
    } else {
      EXPECT_EQ(static_cast<char*>(data) - reinterpret_cast<char*>(buf.data()),
                c.data_offset_bytes);
    }
    EXPECT_EQ(meta(t.get()).offset, c.offset);
    EXPECT_EQ(counters(kCpu).live_bytes, before.live_bytes);  // borrowed: not counted
    t.reset();
    EXPECT_EQ(counters(kCpu), before);
  }
}

TEST(ShimFromBlob, MemoryStaysTheCallers) {
  std::vector<float> buf = iota(12);
  const Counters before = counters(kCpu);
  {
    const Dims sizes{3, 4}, strides{4, 1};
    Tensor t;
    ASSERT_EQ(aoti_torch_create_tensor_from_blob(buf.data(), 2, sizes.data(), strides.data(), 0,
                                                 kF32, 0, 0, t.out()),
              AOTI_TORCH_SUCCESS);
    Tensor alias = new_handle(t.get());
    Tensor view = reinterpret(alias.get(), {2}, {5}, 1);
    write<float>(view.get(), {-1.f, -2.f});
    EXPECT_EQ(buf[1], -1.f);
    EXPECT_EQ(buf[6], -2.f);
    EXPECT_EQ(counters(kCpu).live_bytes, before.live_bytes);
  }
  EXPECT_EQ(counters(kCpu), before);
  EXPECT_EQ(buf[0], 0.f);
  EXPECT_EQ(buf[11], 11.f);
}

TEST(ShimFromBlob, NullDataMakesNewMemory) {
  // libtorch falls back to empty_strided when data is null.
  const Dims sizes{2, 3}, strides{3, 1};
  const Counters before = counters(kCpu);
  Tensor t;
  ASSERT_EQ(aoti_torch_create_tensor_from_blob(nullptr, 2, sizes.data(), strides.data(), 0, kF32,
                                               0, 0, t.out()),
            AOTI_TORCH_SUCCESS);
  EXPECT_EQ(counters(kCpu).live_bytes, before.live_bytes + 24);
  t.reset();
  EXPECT_EQ(counters(kCpu), before);
}

TEST(ShimFromBlob, V2ServesStridedAndOnednnBlockedLayouts) {
  std::vector<float> buf(6);
  const Dims sizes{6}, strides{1};
  Tensor t;
  ASSERT_EQ(aoti_torch_create_tensor_from_blob_v2(buf.data(), 1, sizes.data(), strides.data(), 0,
                                                  kF32, 0, 0, t.out(), 0, nullptr, 0),
            AOTI_TORCH_SUCCESS);
  void* data = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(t.get(), &data), AOTI_TORCH_SUCCESS);
  EXPECT_EQ(data, buf.data());

  const Counters before = counters(kCpu);
  AtenTensorHandle out = nullptr;
  EXPECT_EQ(aoti_torch_create_tensor_from_blob_v2(buf.data(), 1, sizes.data(), strides.data(), 0,
                                                  kF32, 0, 0, &out, 2, nullptr, 0),
            AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_create_tensor_from_blob_v2", "layout 2"}));
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(counters(kCpu), before);

  // _mkldnn (layout 3, a oneDNN-blocked constant of a freezing=True export) is decoded
  // (Note [Opaque constants]); a descriptor it cannot read is refused before anything is
  // allocated. Real descriptors: test_onednn_md.cpp and tests/e2e/test_cpu_freezing.py.
  const uint8_t metadata[8] = {1, 0, 0, 0, 1, 0, 0, 0};
  EXPECT_EQ(aoti_torch_create_tensor_from_blob_v2(buf.data(), 1, sizes.data(), strides.data(), 0,
                                                  kF32, 0, 0, &out, aoti_torch_layout__mkldnn(),
                                                  metadata, sizeof(metadata)),
            AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_create_tensor_from_blob_v2", "_mkldnn constant",
                              "oneDNN descriptor has 8 bytes"}));
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(counters(kCpu), before);
}

TEST(ShimNewTensorHandle, SharesStorageAndOutlivesTheOriginal) {
  const Counters before = counters(kCpu);
  Tensor a = filled<float>(kCpu, iota(6), {2, 3});
  Tensor v = reinterpret(a.get(), {2, 2}, {1, 2}, 1);
  Tensor b = new_handle(v.get());
  const Meta mv = meta(v.get()), mb = meta(b.get());
  EXPECT_EQ(mb.sizes, mv.sizes);
  EXPECT_EQ(mb.strides, mv.strides);
  EXPECT_EQ(mb.offset, mv.offset);
  void *pv = nullptr, *pb = nullptr;
  aoti_torch_get_data_ptr(v.get(), &pv);
  aoti_torch_get_data_ptr(b.get(), &pb);
  EXPECT_EQ(pv, pb);
  const Counters all = counters(kCpu);
  EXPECT_EQ(all.handles, before.handles + 3);
  a.reset();
  v.reset();
  EXPECT_EQ(counters(kCpu).live_bytes, all.live_bytes);  // b still holds the storage
  EXPECT_EQ(read<float>(b.get()), (std::vector<float>{1, 3, 2, 4}));
  b.reset();
  EXPECT_EQ(counters(kCpu), before);
}

TEST(ShimNewUninitializedTensor, IsUndefinedUntilAssigned) {
  Tensor u;
  ASSERT_EQ(aoti_torch_new_uninitialized_tensor(u.out()), AOTI_TORCH_SUCCESS);
  bool defined = true;
  ASSERT_EQ(aoti_torch_is_defined(u.get(), &defined), AOTI_TORCH_SUCCESS);
  EXPECT_FALSE(defined);
  int64_t dim = 0;
  EXPECT_EQ(aoti_torch_get_dim(u.get(), &dim), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_get_dim", "undefined"}));
  // A copy of an undefined handle is undefined too.
  Tensor copy = new_handle(u.get());
  ASSERT_EQ(aoti_torch_is_defined(copy.get(), &defined), AOTI_TORCH_SUCCESS);
  EXPECT_FALSE(defined);
  Tensor src = filled<float>(kCpu, {7.f}, {1});
  ASSERT_EQ(aoti_torch_assign_tensors(src.get(), u.get()), AOTI_TORCH_SUCCESS);
  ASSERT_EQ(aoti_torch_is_defined(u.get(), &defined), AOTI_TORCH_SUCCESS);
  EXPECT_TRUE(defined);
  EXPECT_EQ(read<float>(u.get()), std::vector<float>{7.f});
}

TEST(ShimDelete, SecondDeleteAndNullAreRefused) {
  Tensor t = empty(kCpu, {2}, kF32);
  AtenTensorHandle h = t.release();
  ASSERT_EQ(aoti_torch_delete_tensor_object(h), AOTI_TORCH_SUCCESS);
  const Counters before = counters(kCpu);
  EXPECT_EQ(aoti_torch_delete_tensor_object(h), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_delete_tensor_object", "not a live tensor handle"}));
  EXPECT_EQ(aoti_torch_delete_tensor_object(nullptr), AOTI_TORCH_FAILURE);
  EXPECT_TRUE(error_mentions({"aoti_torch_delete_tensor_object", "null"}));
  EXPECT_EQ(counters(kCpu), before);
}

}  // namespace
