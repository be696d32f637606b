#include "ops/matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "ops/dims.h"
#include "ops/dispatch.h"
#include "ops/views.h"

namespace aotrt::ops {

// The device of `out` picks the kernels; the backends refuse operands on
// another device, naming them.
void mm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
            const char* fn) {
  kernel(&MatmulKernels::mm_out, out.device(), fn)(out, self, mat2, fn);
}

void addmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat1,
               const TensorImpl& mat2, double beta, double alpha, const char* fn) {
  kernel(&MatmulKernels::addmm_out, out.device(), fn)(out, self, mat1, mat2, beta, alpha, fn);
}

void bmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2,
             const char* fn) {
  kernel(&MatmulKernels::bmm_out, out.device(), fn)(out, self, mat2, fn);
}

void baddbmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& batch1,
                 const TensorImpl& batch2, double beta, double alpha, const char* fn) {
  kernel(&MatmulKernels::baddbmm_out, out.device(), fn)(out, self, batch1, batch2, beta, alpha,
                                                         fn);
}

namespace {

// ATen's check_valid_strides_and_return_transposed: one of the last two dims
// has unit stride, the other at least its extent and a multiple of 16 bytes.
void check_grouped_operand(const TensorImpl& m, const char* fn) {
  const int64_t d = m.dim() - 1;
  const int64_t alignment = 16 / static_cast<int64_t>(m.itemsize());
  const auto sizes = m.sizes();
  const auto strides = m.strides();
  if (strides[d - 1] == 1 && strides[d] >= std::max<int64_t>(1, sizes[d - 1])) {
    AOTRT_CHECK(strides[d] % alignment == 0, kInvalidArgument, fn,
                ": strides should be multiple of 16 bytes");
  } else if (strides[d] == 1 && strides[d - 1] >= std::max<int64_t>(1, sizes[d])) {
    AOTRT_CHECK(strides[d - 1] % alignment == 0, kInvalidArgument, fn,
                ": strides should be multiple of 16 bytes");
  } else {
    AOTRT_FAIL(kInvalidArgument, fn, ": Invalid strides/sizes, got ", sizes_text(strides),
               " for strides and ", sizes_text(sizes), " for sizes");
  }
}

bool grouped_dtype(ScalarType t) {
  return t == ScalarType::BFloat16 || t == ScalarType::Float32 || t == ScalarType::Float16;
}

// The group ends of offs (int32, 1-d), read on the host.
std::vector<int64_t> group_ends(const TensorImpl& offs, const char* fn) {
  AOTRT_CHECK(offs.device().is_cpu(), kUnsupported, fn, ": offs on ", offs.device().str(),
              ": the grouped matmul reads its offsets on the host");
  std::vector<int64_t> ends(static_cast<size_t>(offs.sizes()[0]));
  const auto* base = static_cast<const char*>(offs.data_ptr());
  for (size_t g = 0; g < ends.size(); ++g) {
    int32_t v = 0;
    std::memcpy(&v, base + static_cast<int64_t>(g) * offs.strides()[0] * 4, sizeof v);
    ends[g] = v;
  }
  return ends;
}

std::unique_ptr<TensorImpl> select0(const TensorImpl& t, int64_t g, const char* fn) {
  return squeeze_dim(*narrow(t, 0, g, 1, fn), 0, fn);
}

}  // namespace

// See Note [Grouped matmul].
std::unique_ptr<TensorImpl> grouped_mm(const TensorImpl& mat_a, const TensorImpl& mat_b,
                                       const TensorImpl* offs, const TensorImpl* bias,
                                       std::optional<ScalarType> out_dtype, const char* fn) {
  AOTRT_CHECK(grouped_dtype(mat_a.dtype()), kInvalidArgument, fn,
              ": Expected mat_a to be Float32, BFloat16 or Float16 matrix, got ",
              dtype_name(mat_a.dtype()));
  AOTRT_CHECK(grouped_dtype(mat_b.dtype()), kInvalidArgument, fn,
              ": Expected mat_b to be Float32, BFloat16 or Float16 matrix, got ",
              dtype_name(mat_b.dtype()));
  AOTRT_CHECK(mat_a.dim() == 2 || mat_a.dim() == 3, kInvalidArgument, fn, ": mat_a has to be 2 or 3d");
  AOTRT_CHECK(mat_b.dim() == 2 || mat_b.dim() == 3, kInvalidArgument, fn, ": mat_b has to be 2 or 3d");
  const bool a2 = mat_a.dim() == 2, b2 = mat_b.dim() == 2;
  if (!a2 || !b2) {
    AOTRT_CHECK(mat_a.sizes().back() == mat_b.sizes()[mat_b.dim() - 2], kInvalidArgument, fn,
                ": contraction dimension of mat_a and mat_b must match");
  }
  check_grouped_operand(mat_a, fn);
  check_grouped_operand(mat_b, fn);
  AOTRT_CHECK((offs != nullptr) == (a2 || b2), kInvalidArgument, fn,
              ": Have to provide offsets if there is a 2d matrix, or no offset if both matrices "
              "are 3d");
  if (offs != nullptr) {
    AOTRT_CHECK(offs->dim() == 1, kInvalidArgument, fn, ": offs has to be 1D");
    AOTRT_CHECK(offs->dtype() == ScalarType::Int32, kInvalidArgument, fn,
                ": Offsets have to be int32");
  }
  AOTRT_CHECK(bias == nullptr, kInvalidArgument, fn, ": Bias not supported yet");
  const ScalarType dtype = out_dtype.value_or(mat_a.dtype());
  AOTRT_CHECK(dtype == mat_a.dtype(), kInvalidArgument, fn,
              ": Grouped gemm output dtype must match `mat_a` dtype");
  AOTRT_CHECK(mat_b.dtype() == mat_a.dtype(), kInvalidArgument, fn,
              ": expected mat_a and mat_b to have the same dtype, but got: ",
              dtype_name(mat_a.dtype()), " != ", dtype_name(mat_b.dtype()));

  // ATen's create_grouped_gemm_output_tensor: sizes, and strides padded to 16 bytes.
  const int64_t groups = offs != nullptr ? offs->sizes()[0] : 0;
  std::vector<int64_t> sizes;
  if (a2 && b2) {
    sizes = {groups, mat_a.sizes()[0], mat_b.sizes()[1]};
  } else if (a2) {
    AOTRT_CHECK(groups == mat_b.sizes()[0], kInvalidArgument, fn, ": matrix batch sizes have to match");
    sizes = {mat_a.sizes()[0], mat_b.sizes().back()};
  } else if (b2) {
    AOTRT_CHECK(groups == mat_a.sizes()[0], kInvalidArgument, fn, ": matrix batch sizes have to match");
    sizes = {mat_a.sizes()[1], mat_b.sizes()[1]};
  } else {
    AOTRT_CHECK(mat_a.sizes()[0] == mat_b.sizes()[0], kInvalidArgument, fn,
                ": batched dimension has to match");
    sizes = {mat_a.sizes()[0], mat_a.sizes()[1], mat_b.sizes().back()};
  }
  const int64_t alignment = 16 / static_cast<int64_t>(element_size(dtype));
  const int64_t padded = (sizes.back() + alignment - 1) / alignment * alignment;
  const std::vector<int64_t> strides =
      sizes.size() == 2 ? std::vector<int64_t>{padded, 1}
                        : std::vector<int64_t>{sizes[1] * padded, padded, 1};
  auto out = empty_strided(sizes, strides, dtype, mat_a.device(), fn);
  zero_tensor(*out, fn);
  if (!a2 && !b2) {
    bmm_out(*out, mat_a, mat_b, fn);
    return out;
  }
  const std::vector<int64_t> ends = group_ends(*offs, fn);
  int64_t start = 0;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t end = ends[static_cast<size_t>(g)];
    if (a2 && !b2) {
      mm_out(*slice(*out, 0, start, end, 1, fn), *slice(mat_a, 0, start, end, 1, fn),
             *select0(mat_b, g, fn), fn);
    } else if (b2 && !a2) {
      mm_out(*slice(*out, 1, start, end, 1, fn), *select0(mat_a, g, fn),
             *slice(mat_b, 1, start, end, 1, fn), fn);
    } else {
      mm_out(*select0(*out, g, fn), *slice(mat_a, 1, start, end, 1, fn),
             *slice(mat_b, 0, start, end, 1, fn), fn);
    }
    start = end;
  }
  return out;
}

}  // namespace aotrt::ops
