// Conformance: what cannot be served is refused with a clear error (the
// function and the problem named) and NO state change: live handles and
// allocator bytes unchanged, the output pointer untouched. See the table in
// test_conformance.cpp.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <vector>

#include "conformance_backends.h"

namespace aotrt::test {
namespace {

class ConformanceRefusals : public ::testing::TestWithParam<Backend> {
 protected:
  // Runs call(&out) with out preset to a sentinel; it must fail, mention
  // every part of `mentions`, leave the counters alone and out untouched.
  void expect_refused(std::initializer_list<const char*> mentions,
                      const std::function<AOTITorchError(AtenTensorHandle*)>& call) {
    const Backend& b = GetParam();
    AtenTensorHandle sentinel = reinterpret_cast<AtenTensorHandle>(uintptr_t{0xdead0});
    AtenTensorHandle out = sentinel;
    const Counters before = counters(b);
    EXPECT_EQ(call(&out), AOTI_TORCH_FAILURE);
    EXPECT_TRUE(error_mentions(mentions));
    EXPECT_EQ(out, sentinel) << "a refused call wrote its output";
    EXPECT_EQ(counters(b), before) << "a refused call changed state";
  }
  int32_t dev() const { return GetParam().device_type; }
  int32_t idx() const { return GetParam().is_cpu() ? 0 : GetParam().device_index; }
};

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST_P(ConformanceRefusals, NegativeStrides) {
  Tensor base = empty(GetParam(), {16}, kF32);
  const Dims s{2, 2}, neg{-1, 1}, ok{2, 1};
  expect_refused({"aoti_torch__reinterpret_tensor", "stride -1", "negative"}, [&](auto* out) {
    return aoti_torch__reinterpret_tensor(base.get(), 2, s.data(), neg.data(), 4, out);
  });
  expect_refused({"aoti_torch_as_strided", "stride -1"}, [&](auto* out) {
    return aoti_torch_as_strided(base.get(), s.data(), neg.data(), out);
  });
  expect_refused({"aoti_torch_empty_strided", "stride -1"}, [&](auto* out) {
    return aoti_torch_empty_strided(2, s.data(), neg.data(), kF32, dev(), idx(), out);
  });
  expect_refused({"aoti_torch__alloc_from_pool", "stride -1"}, [&](auto* out) {
    return aoti_torch__alloc_from_pool(base.get(), 0, kF32, 2, s.data(), neg.data(), out);
  });
  const Dims negsize{2, -3};
  expect_refused({"aoti_torch__reinterpret_tensor", "size -3"}, [&](auto* out) {
    return aoti_torch__reinterpret_tensor(base.get(), 2, negsize.data(), ok.data(), 0, out);
  });
  void* data = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(base.get(), &data), AOTI_TORCH_SUCCESS);
  expect_refused({"aoti_torch_create_tensor_from_blob", "stride -1"}, [&](auto* out) {
    return aoti_torch_create_tensor_from_blob(data, 2, s.data(), neg.data(), 4, kF32, dev(), idx(), out);
  });
  expect_refused({"aoti_torch_create_tensor_from_blob", "storage offset -2"}, [&](auto* out) {
    return aoti_torch_create_tensor_from_blob(data, 2, s.data(), ok.data(), -2, kF32, dev(), idx(), out);
  });
}

TEST_P(ConformanceRefusals, ViewPastItsStorage) {
  Tensor base = empty(GetParam(), {4, 4}, kF32);  // 64 bytes
  Tensor view = reinterpret(base.get(), {2, 2}, {4, 1}, 8);
  const Dims s{2, 2}, st{4, 1}, far{8, 8};
  expect_refused({"aoti_torch__reinterpret_tensor", "68 bytes", "has 64"}, [&](auto* out) {
    return aoti_torch__reinterpret_tensor(base.get(), 2, s.data(), st.data(), 11, out);
  });
  // A view of a view is checked against the root storage, offset added.
  expect_refused({"aoti_torch__reinterpret_tensor", "68 bytes"}, [&](auto* out) {
    return aoti_torch__reinterpret_tensor(view.get(), 2, s.data(), st.data(), 3, out);
  });
  expect_refused({"aoti_torch_as_strided", "has 64"}, [&](auto* out) {
    return aoti_torch_as_strided(view.get(), s.data(), far.data(), out);
  });
  expect_refused({"aoti_torch__alloc_from_pool", "has 64"}, [&](auto* out) {
    return aoti_torch__alloc_from_pool(base.get(), 56, kF64, 2, s.data(), st.data(), out);
  });
  // Exactly at the end is fine (not a refusal).
  Tensor last = reinterpret(base.get(), s, st, 10);
  EXPECT_TRUE(last);
}

TEST_P(ConformanceRefusals, SpanOverflowingInt64) {
  Tensor base = empty(GetParam(), {4}, kF32);
  const Dims two{2}, huge_stride{kMax};
  expect_refused({"aoti_torch__reinterpret_tensor", "overflows int64"}, [&](auto* out) {
    return aoti_torch__reinterpret_tensor(base.get(), 1, two.data(), huge_stride.data(), 0, out);
  });
  const Dims sizes{int64_t{1} << 62, 4}, strides{4, 1};
  expect_refused({"aoti_torch_empty_strided", "overflows int64"}, [&](auto* out) {
    return aoti_torch_empty_strided(2, sizes.data(), strides.data(), kF32, dev(), idx(), out);
  });
  const Dims one{1};
  expect_refused({"aoti_torch__reinterpret_tensor", "overflows int64"}, [&](auto* out) {
    return aoti_torch__reinterpret_tensor(base.get(), 1, one.data(), one.data(), kMax, out);
  });
  // The span fits in elements but not in bytes.
  const Dims elems{kMax / 2};
  expect_refused({"aoti_torch_empty_strided", "overflows int64"}, [&](auto* out) {
    return aoti_torch_empty_strided(1, elems.data(), one.data(), kF64, dev(), idx(), out);
  });
  const Dims many{kMax, kMax}, ones{1, 1};
  expect_refused({"aoti_torch_empty_strided", "overflows int64"}, [&](auto* out) {
    return aoti_torch_empty_strided(2, many.data(), ones.data(), kU8, dev(), idx(), out);
  });
}

TEST_P(ConformanceRefusals, UnknownDtypeCodes) {
  Tensor base = empty(GetParam(), {4}, kF32);
  const Dims s{1}, st{1};
  for (int32_t code : {-1, 12, 13, 14, 16, 22, 30, 1000}) {
    SCOPED_TRACE(code);
    expect_refused({"aoti_torch_empty_strided", "is not a dtype"}, [&](auto* out) {
      return aoti_torch_empty_strided(1, s.data(), st.data(), code, dev(), idx(), out);
    });
    expect_refused({"aoti_torch__alloc_from_pool", "is not a dtype"}, [&](auto* out) {
      return aoti_torch__alloc_from_pool(base.get(), 0, code, 1, s.data(), st.data(), out);
    });
    void* data = nullptr;
    aoti_torch_get_data_ptr(base.get(), &data);
    expect_refused({"aoti_torch_create_tensor_from_blob", "is not a dtype"}, [&](auto* out) {
      return aoti_torch_create_tensor_from_blob(data, 1, s.data(), st.data(), 0, code, dev(), idx(), out);
    });
  }
}

TEST_P(ConformanceRefusals, UnknownDeviceCodes) {
  const Dims s{1}, st{1};
  for (int32_t type : {-1, 2, 12, 13, 14, 20, 99}) {
    SCOPED_TRACE(type);
    expect_refused({"aoti_torch_empty_strided", "device type"}, [&](auto* out) {
      return aoti_torch_empty_strided(1, s.data(), st.data(), kF32, type, 0, out);
    });
  }
  expect_refused({"aoti_torch_empty_strided", "device index -5"}, [&](auto* out) {
    return aoti_torch_empty_strided(1, s.data(), st.data(), kF32, dev(), -5, out);
  });
}

TEST_P(ConformanceRefusals, NullPointers) {
  Tensor base = empty(GetParam(), {4}, kF32);
  const Dims s{2}, st{1};
  expect_refused({"aoti_torch_empty_strided", "'sizes' is null"}, [&](auto* out) {
    return aoti_torch_empty_strided(1, nullptr, st.data(), kF32, dev(), idx(), out);
  });
  expect_refused({"aoti_torch_empty_strided", "'strides' is null"}, [&](auto* out) {
    return aoti_torch_empty_strided(1, s.data(), nullptr, kF32, dev(), idx(), out);
  });
  expect_refused({"aoti_torch__reinterpret_tensor", "null"}, [&](auto* out) {
    return aoti_torch__reinterpret_tensor(nullptr, 1, s.data(), st.data(), 0, out);
  });
  expect_refused({"aoti_torch__reinterpret_tensor", "'sizes' is null"}, [&](auto* out) {
    return aoti_torch__reinterpret_tensor(base.get(), 1, nullptr, st.data(), 0, out);
  });
  expect_refused({"aoti_torch_as_strided", "null"}, [&](auto* out) {
    return aoti_torch_as_strided(base.get(), s.data(), nullptr, out);
  });
  expect_refused({"aoti_torch_new_tensor_handle", "null"}, [&](auto* out) {
    return aoti_torch_new_tensor_handle(nullptr, out);
  });
  expect_refused({"aoti_torch_clone", "null"}, [&](auto* out) { return aoti_torch_clone(nullptr, out); });
  expect_refused({"aoti_torch_copy_", "null"}, [&](auto*) { return aoti_torch_copy_(base.get(), nullptr, 0); });
  expect_refused({"aoti_torch_copy_", "null"}, [&](auto*) { return aoti_torch_copy_(nullptr, base.get(), 0); });
  expect_refused({"aoti_torch_zero_", "null"}, [&](auto*) { return aoti_torch_zero_(nullptr); });
  // Null output arguments: nothing is made, nothing leaks.
  expect_refused({"aoti_torch_empty_strided", "output argument"}, [&](auto*) {
    return aoti_torch_empty_strided(1, s.data(), st.data(), kF32, dev(), idx(), nullptr);
  });
  expect_refused({"aoti_torch__reinterpret_tensor", "output argument"}, [&](auto*) {
    return aoti_torch__reinterpret_tensor(base.get(), 1, s.data(), st.data(), 0, nullptr);
  });
  expect_refused({"aoti_torch_new_tensor_handle", "output argument"}, [&](auto*) {
    return aoti_torch_new_tensor_handle(base.get(), nullptr);
  });
  expect_refused({"aoti_torch_clone", "output argument"}, [&](auto*) { return aoti_torch_clone(base.get(), nullptr); });
  expect_refused({"aoti_torch_clone_preserve_strides", "output argument"}, [&](auto*) {
    return aoti_torch_clone_preserve_strides(base.get(), nullptr);
  });
  expect_refused({"aoti_torch_assign_tensors_out", "output argument"}, [&](auto*) {
    return aoti_torch_assign_tensors_out(base.get(), nullptr);
  });
}

TEST_P(ConformanceRefusals, DeletedHandles) {
  // Nothing is made between the delete and the calls below, so the dead
  // address cannot have been reused by a new handle.
  Tensor other = empty(GetParam(), {4}, kF32);
  Tensor t = empty(GetParam(), {4}, kF32);
  AtenTensorHandle dead = t.release();
  ASSERT_EQ(aoti_torch_delete_tensor_object(dead), AOTI_TORCH_SUCCESS);
  const Dims s{2}, st{1};
  const char* live = "not a live tensor handle";
  expect_refused({"aoti_torch_delete_tensor_object", live}, [&](auto*) {
    return aoti_torch_delete_tensor_object(dead);
  });
  expect_refused({"aoti_torch__reinterpret_tensor", live}, [&](auto* out) {
    return aoti_torch__reinterpret_tensor(dead, 1, s.data(), st.data(), 0, out);
  });
  expect_refused({"aoti_torch_new_tensor_handle", live}, [&](auto* out) {
    return aoti_torch_new_tensor_handle(dead, out);
  });
  expect_refused({"aoti_torch_copy_", "'self'", live}, [&](auto*) { return aoti_torch_copy_(dead, other.get(), 0); });
  expect_refused({"aoti_torch_copy_", "'src'", live}, [&](auto*) { return aoti_torch_copy_(other.get(), dead, 0); });
  expect_refused({"aoti_torch_clone", live}, [&](auto* out) { return aoti_torch_clone(dead, out); });
  expect_refused({"aoti_torch_zero_", live}, [&](auto*) { return aoti_torch_zero_(dead); });
  expect_refused({"aoti_torch_assign_tensors", live}, [&](auto*) {
    return aoti_torch_assign_tensors(dead, other.get());
  });
  int64_t n = 77;
  expect_refused({"aoti_torch_get_numel", live}, [&](auto*) { return aoti_torch_get_numel(dead, &n); });
  EXPECT_EQ(n, 77);
  void* p = &n;
  expect_refused({"aoti_torch_get_data_ptr", live}, [&](auto*) { return aoti_torch_get_data_ptr(dead, &p); });
  EXPECT_EQ(p, &n);
}

TEST_P(ConformanceRefusals, UndefinedTensors) {
  Tensor u, other = empty(GetParam(), {2}, kF32);
  ASSERT_EQ(aoti_torch_new_uninitialized_tensor(u.out()), AOTI_TORCH_SUCCESS);
  const Dims s{1}, st{1};
  expect_refused({"aoti_torch__reinterpret_tensor", "undefined"}, [&](auto* out) {
    return aoti_torch__reinterpret_tensor(u.get(), 1, s.data(), st.data(), 0, out);
  });
  expect_refused({"aoti_torch_copy_", "undefined"}, [&](auto*) { return aoti_torch_copy_(other.get(), u.get(), 0); });
  expect_refused({"aoti_torch_clone", "undefined"}, [&](auto* out) { return aoti_torch_clone(u.get(), out); });
  expect_refused({"aoti_torch_zero_", "undefined"}, [&](auto*) { return aoti_torch_zero_(u.get()); });
}

TEST_P(ConformanceRefusals, OutOfMemory) {
  const Backend& b = GetParam();
  const Dims s{int64_t{1} << 56}, st{1};  // 256 PiB of float32
  expect_refused({"aoti_torch_empty_strided", "cannot allocate"}, [&](auto* out) {
    return aoti_torch_empty_strided(1, s.data(), st.data(), kF32, dev(), idx(), out);
  });
  // The allocator's own limit, as a deployment sharing a device would set it.
  Allocator& a = allocator_for(b.device());
  const Counters before = counters(b);
  a.set_limit(before.live_bytes + 4096);
  const Dims big{1 << 20};
  AtenTensorHandle out = nullptr;
  const AOTITorchError rc = aoti_torch_empty_strided(1, big.data(), st.data(), kF32, dev(), idx(), &out);
  const std::string err = aotrt_last_error();
  a.set_limit(0);
  EXPECT_EQ(rc, AOTI_TORCH_FAILURE);
  EXPECT_NE(err.find("aoti_torch_empty_strided"), std::string::npos) << err;
  EXPECT_NE(err.find("4194304"), std::string::npos) << err;  // the bytes asked for
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(counters(b), before);
}

INSTANTIATE_TEST_SUITE_P(Backends, ConformanceRefusals, ::testing::ValuesIn(built_backends()),
                         backend_name);

}  // namespace
}  // namespace aotrt::test
