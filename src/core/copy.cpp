#include "core/copy.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/view.h"
#include "cpu/cpu.h"
#include "cuda/cuda.h"

namespace aotrt {
namespace {

// Byte range [begin, end) of host or device addresses a view touches.
struct AddressRange {
  uintptr_t begin = 0, end = 0;
};

AddressRange address_range(const TensorImpl& t) {
  if (t.numel() == 0 || t.storage()->data() == nullptr) return {};
  const uintptr_t base = reinterpret_cast<uintptr_t>(t.storage()->data());
  const auto itemsize = static_cast<int64_t>(t.itemsize());
  const ViewSpan span = view_span(t.sizes(), t.strides(), t.storage_offset(), t.itemsize(),
                                  "address_range");
  return {base + static_cast<uintptr_t>(span.begin_elem * itemsize),
          base + static_cast<uintptr_t>(span.end_elem * itemsize)};
}

bool has_internal_overlap(const TensorImpl& t) {
  // ATen's has_internal_overlap says YES only for a stride-0 dim of size > 1.
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.strides()[d] == 0 && t.sizes()[d] > 1) return true;
  }
  return false;
}

// Strides that read src as if it had dst's sizes (numpy broadcasting).
std::vector<int64_t> broadcast_strides(const TensorImpl& dst, const TensorImpl& src,
                                       const char* what) {
  const int64_t nd = dst.dim(), ns = src.dim();
  AOTRT_CHECK(ns <= nd, kInvalidArgument, what, ": source of ", ns,
              " dims cannot be broadcast to a destination of ", nd, " dims");
  std::vector<int64_t> strides(nd, 0);
  for (int64_t i = 0; i < ns; ++i) {
    const int64_t sd = ns - 1 - i, dd = nd - 1 - i;
    const int64_t s = src.sizes()[sd];
    if (s == dst.sizes()[dd]) {
      strides[dd] = src.strides()[sd];
    } else {
      AOTRT_CHECK(s == 1, kInvalidArgument, what, ": source size ", s, " at dim ", sd,
                  " cannot be broadcast to destination size ", dst.sizes()[dd]);
      strides[dd] = 0;
    }
  }
  return strides;
}

void dispatch_copy(const StridedView& dst, const StridedView& src) {
  if (dst.device.is_cpu() && src.device.is_cpu()) {
    cpu::copy_strided(dst, src);
  } else {
    cuda::copy(dst, src);
  }
}

}  // namespace

// Note [Copy overlap]
// ATen refuses a copy_ whose destination has internal overlap (a stride-0
// dim of size > 1) and one whose source and destination are both
// non-overlapping-and-dense and partly overlap: their byte ranges meet but
// differ, or are the same with other strides. A source identical to the
// destination is a no-op. Any other overlap ATen allows without promising a
// result; aotrt then copies through a temporary, so the result is always as
// if the whole source had been read first.
void copy_tensor(const TensorImpl& dst, const TensorImpl& src, const char* what) {
  AOTRT_CHECK(dst.defined() && src.defined(), kInvalidArgument, what,
              ": copy between undefined tensors");
  std::vector<int64_t> src_strides = broadcast_strides(dst, src, what);
  if (dst.numel() == 0) return;
  AOTRT_CHECK(!has_internal_overlap(dst), kInvalidArgument, what,
              ": unsupported operation: more than one element of the written-to tensor "
              "refers to a single memory location");

  StridedView d = strided_view(dst);
  StridedView s{static_cast<char*>(src.data_ptr()), dst.sizes(), src_strides, src.dtype(),
                src.device()};

  bool overlap = false;
  if (dst.device() == src.device()) {
    const AddressRange a = address_range(dst), b = address_range(src);
    overlap = a.begin < b.end && b.begin < a.end;
    if (overlap) {
      const bool same_view = d.data == s.data && dst.dtype() == src.dtype() &&
                             std::equal(dst.sizes().begin(), dst.sizes().end(),
                                        src.sizes().begin(), src.sizes().end()) &&
                             std::equal(dst.strides().begin(), dst.strides().end(),
                                        src.strides().begin(), src.strides().end());
      if (same_view) return;
      const bool dense = is_non_overlapping_and_dense(dst.sizes(), dst.strides()) &&
                         is_non_overlapping_and_dense(src.sizes(), src.strides());
      // ATen: the same bytes with other strides (a transpose onto itself) is
      // a partial overlap, not a full one.
      const bool full = a.begin == b.begin && a.end == b.end &&
                        std::equal(dst.strides().begin(), dst.strides().end(),
                                   src.strides().begin(), src.strides().end());
      AOTRT_CHECK(!(dense && !full), kInvalidArgument, what,
                  ": unsupported operation: some elements of the input tensor and the "
                  "written-to tensor refer to a single memory location");
    }
  }
  if (!overlap) {
    dispatch_copy(d, s);
    return;
  }
  // Through a dense temporary of the source's dtype on the same device.
  const std::vector<int64_t> tmp_strides = contiguous_strides(dst.sizes());
  auto tmp = empty_strided(dst.sizes(), tmp_strides, src.dtype(), src.device(), what);
  StridedView t = strided_view(*tmp);
  dispatch_copy(t, s);
  dispatch_copy(d, t);
}

std::unique_ptr<TensorImpl> clone_tensor(const TensorImpl& src, const char* what) {
  AOTRT_CHECK(src.defined(), kInvalidArgument, what, ": clone of an undefined tensor");
  const std::vector<int64_t> strides = preserve_format_strides(src.sizes(), src.strides());
  auto out = empty_strided(src.sizes(), strides, src.dtype(), src.device(), what);
  copy_tensor(*out, src, what);
  return out;
}

std::unique_ptr<TensorImpl> clone_preserve_strides(const TensorImpl& src, const char* what) {
  AOTRT_CHECK(src.defined(), kInvalidArgument, what, ": clone of an undefined tensor");
  if (is_non_overlapping_and_dense(src.sizes(), src.strides())) return clone_tensor(src, what);
  // Copy the flat span the view covers, then view it with the same strides.
  const ViewSpan span = view_span(src.sizes(), src.strides(), 0, src.itemsize(), what);
  const int64_t length = span.end_elem;  // elements from the view's first one
  const int64_t one = 1;
  StorageRef storage = Storage::allocate(src.device(), static_cast<size_t>(span.end_byte));
  auto flat_dst = make_tensor(storage, std::span(&length, 1), std::span(&one, 1), 0,
                              src.dtype(), what);
  auto flat_src = make_tensor(src.storage(), std::span(&length, 1), std::span(&one, 1),
                              src.storage_offset(), src.dtype(), what);
  copy_tensor(*flat_dst, *flat_src, what);
  return make_tensor(std::move(storage), src.sizes(), src.strides(), 0, src.dtype(), what);
}

void zero_tensor(const TensorImpl& t, const char* what) {
  AOTRT_CHECK(t.defined(), kInvalidArgument, what, ": zero_ of an undefined tensor");
  if (t.numel() == 0) return;
  const StridedView v = strided_view(t);
  if (t.device().is_cpu()) {
    cpu::fill_zero(v);
  } else {
    cuda::fill_zero(v);
  }
}

void fill_tensor(const TensorImpl& t, double value, const char* what) {
  AOTRT_CHECK(t.defined(), kInvalidArgument, what, ": fill_ of an undefined tensor");
  if (t.numel() == 0) return;
  AOTRT_CHECK(!has_internal_overlap(t), kInvalidArgument, what,
              ": unsupported operation: more than one element of the written-to tensor "
              "refers to a single memory location");
  const StridedView v = strided_view(t);
  const StridedView scalar{reinterpret_cast<char*>(&value), {}, {}, ScalarType::Float64,
                           cpu_device()};
  if (t.device().is_cpu()) {
    std::vector<int64_t> zero(v.sizes.size(), 0);
    cpu::copy_strided(v, StridedView{scalar.data, v.sizes, zero, ScalarType::Float64,
                                     cpu_device()});
    return;
  }
  alignas(16) unsigned char element[16] = {};
  cpu::copy_strided(StridedView{reinterpret_cast<char*>(element), {}, {}, t.dtype(),
                                cpu_device()},
                    scalar);
  cuda::fill(v, element);
}

void read_item(const TensorImpl& t, ScalarType as, void* out, const char* what) {
  AOTRT_CHECK(t.defined(), kInvalidArgument, what, ": item of an undefined tensor");
  AOTRT_CHECK(t.numel() == 1, kInvalidArgument, what,
              ": a Tensor with ", t.numel(), " elements cannot be converted to Scalar");
  std::vector<int64_t> ones(t.dim(), 1), zeros(t.dim(), 0);
  StridedView dst{static_cast<char*>(out), ones, zeros, as, cpu_device()};
  StridedView src = strided_view(t);
  AOTRT_CHECK(cpu::can_convert(as, t.dtype()), kUnsupported, what, ": cannot read a ",
              dtype_name(t.dtype()), " element as ", dtype_name(as));
  dispatch_copy(dst, src);
}

}  // namespace aotrt
