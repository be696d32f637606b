// The FFT family's semantics: see Note [FFT layout and scaling].
#include "ops/fft.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dispatch.h"
#include "ops/views.h"

namespace aotrt::ops {
namespace {

using Dims = std::vector<int64_t>;

Dims wrap_dims(std::span<const int64_t> dim, int64_t ndim, const char* fn) {
  Dims out;
  for (int64_t d : dim) {
    AOTRT_CHECK(d >= -ndim && d < ndim, kInvalidArgument, fn, ": dimension ", d,
                " is out of range for a tensor of ", ndim, " dims");
    const int64_t w = d < 0 ? d + ndim : d;
    AOTRT_CHECK(std::find(out.begin(), out.end(), w) == out.end(), kInvalidArgument, fn,
                ": dims must be unique, got dim ", w, " twice");
    out.push_back(w);
  }
  return out;
}

// dims sorted by the input's strides, largest first (stable, as Python's
// sorted(..., reverse=True)); the last one kept in place when asked.
Dims sort_dims(const TensorImpl& t, Dims dims, bool exclude_last) {
  const auto end = dims.end() - (exclude_last && !dims.empty() ? 1 : 0);
  std::stable_sort(dims.begin(), end,
                   [&](int64_t a, int64_t b) { return t.strides()[a] > t.strides()[b]; });
  return dims;
}

// The meta functions' _exec_fft layout for an output of out_sizes made
// from an input of in_strides transformed along dims (in that order).
Dims exec_fft_strides(std::span<const int64_t> in_strides, const Dims& out_sizes,
                      const Dims& dims) {
  const int64_t ndim = static_cast<int64_t>(out_sizes.size());
  Dims batch;
  for (int64_t d = 0; d < ndim; ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) batch.push_back(d);
  }
  std::stable_sort(batch.begin(), batch.end(),
                   [&](int64_t a, int64_t b) { return in_strides[a] > in_strides[b]; });
  Dims strides(ndim, 0);
  int64_t step = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[dims[i]] = step;
    step = checked_mul(step, std::max<int64_t>(out_sizes[dims[i]], 1), "fft output strides");
  }
  // The batch: one dense dim outermost, innermost batch dim varying fastest.
  for (size_t i = batch.size(); i-- > 0;) {
    strides[batch[i]] = step;
    step = checked_mul(step, std::max<int64_t>(out_sizes[batch[i]], 1), "fft output strides");
  }
  return strides;
}

// Note [cuFFT output layouts]
// ATen's CUDA kernels (_fft_c2c_cufft, _fft_r2c_cufft, _fft_c2r_cufft) lay
// their outputs out differently from its CPU ones, and inductor's CUDA code
// reads them with the strides of the CUDA meta functions, which follow
// those kernels: their transforms run in passes of _exec_fft, each of at
// most three dims, and each pass re-strides its output (exec_fft_strides).
// c2c: the dims sorted by the strides of the tensor the pass reads (largest
// first), the last three transformed first, until none is left. r2c and c2r
// take one pass over `dim` as given (not sorted), c2r from a contiguous
// copy of its input, unless `dim` has more than three entries or starts
// with (0, 1) (ATen's "optimized path" test): r2c then transforms the last
// dim alone and the others in c2c passes, and a two-sided r2c of several
// dims ends contiguous; c2r transforms the others by c2c first and the last
// dim alone in one more pass. Values do not depend on the passes: the
// kernels compute what the CPU computes, into these layouts.
constexpr size_t kCufftMaxDims = 3;

bool cufft_one_pass(const Dims& dim) {
  return dim.size() <= kCufftMaxDims && !(dim.size() >= 2 && dim[0] == 0 && dim[1] == 1);
}

// The strides after c2c passes over `dims` of a tensor with `strides`.
Dims cufft_c2c_passes(Dims strides, const Dims& sizes, Dims dims) {
  while (!dims.empty()) {
    std::stable_sort(dims.begin(), dims.end(),
                     [&](int64_t a, int64_t b) { return strides[a] > strides[b]; });
    const size_t take = std::min(kCufftMaxDims, dims.size());
    const Dims pass(dims.end() - static_cast<std::ptrdiff_t>(take), dims.end());
    strides = exec_fft_strides(strides, sizes, pass);
    dims.resize(dims.size() - take);
  }
  return strides;
}

Dims cufft_c2c_strides(std::span<const int64_t> strides, const Dims& sizes, const Dims& dims) {
  return cufft_c2c_passes(Dims(strides.begin(), strides.end()), sizes, dims);
}

Dims cufft_r2c_strides(std::span<const int64_t> in_strides, const Dims& in_sizes,
                       const Dims& dim, bool onesided) {
  const int64_t last = dim.back();
  Dims half = in_sizes;
  half[last] = in_sizes[last] / 2 + 1;
  const Dims& out_sizes = onesided ? half : in_sizes;
  if (cufft_one_pass(dim)) return exec_fft_strides(in_strides, out_sizes, dim);
  const Dims first = exec_fft_strides(in_strides, dim.size() == 1 ? out_sizes : half, {last});
  const Dims strides = cufft_c2c_passes(first, half, Dims(dim.begin(), dim.end() - 1));
  if (!onesided && half[last] != in_sizes[last]) return contiguous_strides(in_sizes);
  return strides;
}

Dims cufft_c2r_strides(std::span<const int64_t> in_strides, const Dims& in_sizes,
                       const Dims& dim, int64_t last_dim_size) {
  Dims out_sizes = in_sizes;
  out_sizes[dim.back()] = last_dim_size;
  if (cufft_one_pass(dim)) return exec_fft_strides(contiguous_strides(in_sizes), out_sizes, dim);
  const Dims staged = dim.size() > 1 ? cufft_c2c_strides(in_strides, in_sizes,
                                                         Dims(dim.begin(), dim.end() - 1))
                                     : contiguous_strides(in_sizes);
  return exec_fft_strides(staged, out_sizes, {dim.back()});
}

double norm_scale(int64_t normalization, const Dims& sizes, const Dims& dims, const char* fn) {
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(sizes[d]);
  switch (normalization) {
    case 0: return 1.0;
    case 1: return 1.0 / std::sqrt(n);
    case 2: return 1.0 / n;
    default:
      AOTRT_FAIL(kInvalidArgument, fn, ": normalization ", normalization,
                 " is not one of ATen's fft_norm_mode values (0, 1, 2)");
  }
}

Dims sizes_of(const TensorImpl& t) { return Dims(t.sizes().begin(), t.sizes().end()); }

ScalarType complex_of(ScalarType t) {
  return t == ScalarType::Float64   ? ScalarType::Complex128
         : t == ScalarType::Float16 ? ScalarType::Complex32
                                    : ScalarType::Complex64;
}
ScalarType real_of(ScalarType t) {
  return t == ScalarType::Complex128  ? ScalarType::Float64
         : t == ScalarType::Complex32 ? ScalarType::Float16
                                      : ScalarType::Float32;
}

// float16 (complex32) on CUDA: cuFFT's half precision, as ATen's CUDA FFT
// serves it (powers of two only: check_half_sizes).
bool half_on_cuda(const TensorImpl& t, ScalarType half) {
  return t.dtype() == half && t.device().is_cuda();
}

void check_real(const TensorImpl& t, const char* fn) {
  AOTRT_CHECK(t.dtype() == ScalarType::Float32 || t.dtype() == ScalarType::Float64 ||
                  half_on_cuda(t, ScalarType::Float16),
              kUnsupported, fn, ": argument 'self' is ", dtype_name(t.dtype()), " on ",
              t.device().str(),
              "; aotrt's FFT serves float32 and float64, and float16 on CUDA (ATen's CPU FFT "
              "has no half types)");
}
void check_complex(const TensorImpl& t, const char* fn) {
  AOTRT_CHECK(t.dtype() == ScalarType::Complex64 || t.dtype() == ScalarType::Complex128 ||
                  half_on_cuda(t, ScalarType::Complex32),
              kUnsupported, fn, ": argument 'self' is ", dtype_name(t.dtype()), " on ",
              t.device().str(), "; expected complex64 or complex128 (or complex32 on CUDA)");
}

// ATen's CUDA check: cuFFT computes in half precision for powers of two only.
void check_half_sizes(const TensorImpl& t, const Dims& signal_sizes, const Dims& dims,
                      const char* fn) {
  if (t.dtype() != ScalarType::Float16 && t.dtype() != ScalarType::Complex32) return;
  for (int64_t d : dims) {
    const int64_t n = signal_sizes[d];
    AOTRT_CHECK(n > 0 && (n & (n - 1)) == 0, kUnsupported, fn,
                ": cuFFT only supports dimensions whose sizes are powers of two when computing "
                "in half precision, but got a signal size of ",
                n, " in dim ", d);
  }
}

}  // namespace

std::vector<int64_t> cuda_fft_strides(FftOp op, std::span<const int64_t> sizes,
                                      std::span<const int64_t> strides,
                                      std::span<const int64_t> dim, int64_t arg) {
  const Dims s(sizes.begin(), sizes.end()), d(dim.begin(), dim.end());
  switch (op) {
    case FftOp::kC2C: return cufft_c2c_strides(strides, s, d);
    case FftOp::kR2C: return cufft_r2c_strides(strides, s, d, arg != 0);
    case FftOp::kC2R: return cufft_c2r_strides(strides, s, d, arg);
  }
  return {};
}

TensorPtr fft_c2c(const TensorImpl& self, std::span<const int64_t> dim, int64_t normalization,
                  bool forward, const char* fn) {
  check_complex(self, fn);
  const Dims wrapped = wrap_dims(dim, self.dim(), fn);
  const Dims dims = sort_dims(self, wrapped, false);
  if (dims.empty()) return clone_tensor(self, fn);
  const Dims sizes = sizes_of(self);
  check_half_sizes(self, sizes, dims, fn);
  const double scale = norm_scale(normalization, sizes, dims, fn);
  const Dims strides = self.device().is_cuda()
                           ? cuda_fft_strides(FftOp::kC2C, sizes, self.strides(), wrapped, 0)
                           : exec_fft_strides(self.strides(), sizes, dims);
  TensorPtr out = empty_strided(sizes, strides, self.dtype(), self.device(), fn);
  if (out->numel() > 0) {
    kernel(&FftKernels::c2c, self.device(), fn)(*out, self, dims, forward, scale);
  }
  return out;
}

TensorPtr fft_r2c(const TensorImpl& self, std::span<const int64_t> dim, int64_t normalization,
                  bool onesided, const char* fn) {
  check_real(self, fn);
  const Dims wrapped = wrap_dims(dim, self.dim(), fn);
  const Dims dims = sort_dims(self, wrapped, true);
  AOTRT_CHECK(!dims.empty(), kInvalidArgument, fn, ": 'dim' must name at least one dim");
  const int64_t last = dims.back();
  const Dims in_sizes = sizes_of(self);
  // A one-sided transform of zero points would still have one bin; ATen
  // refuses it (torch.fft.rfft: "Invalid number of data points (0)").
  AOTRT_CHECK(in_sizes[last] >= 1, kInvalidArgument, fn,
              ": Invalid number of data points (0) specified along dim ", last);
  Dims out_sizes = in_sizes;
  if (onesided) out_sizes[last] = in_sizes[last] / 2 + 1;
  check_half_sizes(self, in_sizes, dims, fn);
  const double scale = norm_scale(normalization, in_sizes, dims, fn);
  const Dims strides = self.device().is_cuda()
                           ? cuda_fft_strides(FftOp::kR2C, in_sizes, self.strides(), wrapped,
                                              onesided)
                           : exec_fft_strides(self.strides(), out_sizes, dims);
  TensorPtr out =
      empty_strided(out_sizes, strides, complex_of(self.dtype()), self.device(), fn);
  if (out->numel() == 0) return out;
  const auto c2c = kernel(&FftKernels::c2c, self.device(), fn);
  if (!onesided) {
    // Every bin: the complex transform of the real signal, copied into the
    // real parts of a zeroed complex tensor (a copy of one dtype, which
    // every device serves).
    auto as_complex = empty_strided(in_sizes, contiguous_strides(in_sizes), out->dtype(),
                                    self.device(), fn);
    zero_tensor(*as_complex, fn);
    const auto pairs = view_as_real(*as_complex, fn);
    const auto real_parts = squeeze_dim(*narrow(*pairs, self.dim(), 0, 1, fn), self.dim(), fn);
    copy_tensor(*real_parts, self, fn);
    c2c(*out, *as_complex, dims, true, scale);
    return out;
  }
  const Dims others(dims.begin(), dims.end() - 1);
  kernel(&FftKernels::r2c, self.device(), fn)(*out, self, last, others.empty() ? scale : 1.0);
  if (!others.empty()) c2c(*out, *out, others, true, scale);
  return out;
}

TensorPtr fft_c2r(const TensorImpl& self, std::span<const int64_t> dim, int64_t normalization,
                  int64_t last_dim_size, const char* fn) {
  check_complex(self, fn);
  const Dims dims = wrap_dims(dim, self.dim(), fn);
  AOTRT_CHECK(!dims.empty(), kInvalidArgument, fn, ": 'dim' must name at least one dim");
  AOTRT_CHECK(last_dim_size >= 1, kInvalidArgument, fn, ": Invalid number of data points (",
              last_dim_size, ") specified");
  const int64_t last = dims.back();
  Dims out_sizes = sizes_of(self);
  out_sizes[last] = last_dim_size;
  check_half_sizes(self, out_sizes, dims, fn);
  const double scale = norm_scale(normalization, out_sizes, dims, fn);
  // As ATen: the other dims first, by a c2c transform (its own layout).
  TensorPtr staged;
  const TensorImpl* input = &self;
  if (dims.size() > 1) {
    staged = fft_c2c(self, std::span<const int64_t>(dims.data(), dims.size() - 1), 0, false, fn);
    input = staged.get();
  }
  const Dims strides = self.device().is_cuda()
                           ? cuda_fft_strides(FftOp::kC2R, sizes_of(self), self.strides(), dims,
                                              last_dim_size)
                           : exec_fft_strides(input->strides(), out_sizes, {last});
  TensorPtr out = empty_strided(out_sizes, strides, real_of(self.dtype()), self.device(), fn);
  if (out->numel() > 0) kernel(&FftKernels::c2r, self.device(), fn)(*out, *input, last, scale);
  return out;
}

}  // namespace aotrt::ops
