// The CPU's FFT kernels, on KISS FFT (Debian's libkissfft-dev, BSD-3-Clause:
// its header-only C++ template serves float and double alike, any length,
// mixed radix). Chosen over FFTW, the faster library, for its licence:
// FFTW is GPL-2+, which would bind every program linking libaotrt.so; and
// pocketfft, what torch itself ships, has no Debian 12 package. KISS FFT's
// cost for a length with large prime factors is O(n * p) per factor p
// (no Bluestein), which one-op models' lengths do not reach.
// Each 1-D transform gathers one line of the strided input
// into a buffer, transforms it and scatters it to the output, so inputs and
// outputs may be any view and the output may be the input (in place).
// Lines run in parallel.
#include <kissfft/kissfft.hh>

#include <complex>
#include <vector>

#include "core/error.h"
#include "ops/dispatch.h"
#include "ops/fft.h"

namespace aotrt::cpu {
namespace {
using ops::FftKernels;

// Element offsets of line `line` (every dim but `along`, row-major).
struct Lines {
  std::vector<int64_t> sizes;
  int64_t along = 0;
  int64_t count = 1;

  Lines(std::span<const int64_t> s, int64_t dim) : sizes(s.begin(), s.end()), along(dim) {
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (static_cast<int64_t>(d) != along) count *= sizes[d];
    }
  }
  int64_t offset(int64_t line, std::span<const int64_t> strides) const {
    int64_t off = 0;
    for (size_t d = sizes.size(); d-- > 0;) {
      if (static_cast<int64_t>(d) == along) continue;
      off += (line % sizes[d]) * strides[d];
      line /= sizes[d];
    }
    return off;
  }
};

template <class T>
void c2c_dim(std::complex<T>* out, std::span<const int64_t> out_strides,
             const std::complex<T>* in, std::span<const int64_t> in_strides,
             std::span<const int64_t> sizes, int64_t dim, bool forward, T scale) {
  const Lines lines(sizes, dim);
  const int64_t n = sizes[dim];
  const kissfft<T> shared_plan(static_cast<size_t>(n), !forward);
  const int64_t is = in_strides[dim], os = out_strides[dim];
#pragma omp parallel
  {
    // A plan per thread: KISS FFT keeps a scratch buffer in it (mutable)
    // for radices above 5.
    const kissfft<T> plan = shared_plan;
    std::vector<std::complex<T>> a(n), b(n);
#pragma omp for
    for (int64_t l = 0; l < lines.count; ++l) {
      const std::complex<T>* src = in + lines.offset(l, in_strides);
      std::complex<T>* dst = out + lines.offset(l, out_strides);
      for (int64_t k = 0; k < n; ++k) a[k] = src[k * is];
      plan.transform(a.data(), b.data());
      for (int64_t k = 0; k < n; ++k) dst[k * os] = b[k] * scale;
    }
  }
}

template <class T>
void c2c_typed(const TensorImpl& out, const TensorImpl& in, std::span<const int64_t> dims,
               bool forward, double scale) {
  auto* o = static_cast<std::complex<T>*>(out.data_ptr());
  const auto* i = static_cast<const std::complex<T>*>(in.data_ptr());
  for (size_t k = 0; k < dims.size(); ++k) {
    const bool first = k == 0, last = k + 1 == dims.size();
    c2c_dim<T>(o, out.strides(), first ? i : o, first ? in.strides() : out.strides(),
               out.sizes(), dims[k], forward, static_cast<T>(last ? scale : 1.0));
  }
}

void c2c(const TensorImpl& out, const TensorImpl& in, std::span<const int64_t> dims,
         bool forward, double scale) {
  if (out.dtype() == ScalarType::Complex64) {
    c2c_typed<float>(out, in, dims, forward, scale);
  } else {
    c2c_typed<double>(out, in, dims, forward, scale);
  }
}

template <class T>
void r2c_typed(const TensorImpl& out, const TensorImpl& in, int64_t dim, double scale) {
  const Lines lines(in.sizes(), dim);
  const int64_t n = in.sizes()[dim], bins = out.sizes()[dim];
  const kissfft<T> shared_plan(static_cast<size_t>(n), false);
  const T* src0 = static_cast<const T*>(in.data_ptr());
  auto* dst0 = static_cast<std::complex<T>*>(out.data_ptr());
  const int64_t is = in.strides()[dim], os = out.strides()[dim];
#pragma omp parallel
  {
    // A plan per thread: KISS FFT keeps a scratch buffer in it (mutable)
    // for radices above 5.
    const kissfft<T> plan = shared_plan;
    std::vector<std::complex<T>> a(n), b(n);
#pragma omp for
    for (int64_t l = 0; l < lines.count; ++l) {
      const T* src = src0 + lines.offset(l, in.strides());
      std::complex<T>* dst = dst0 + lines.offset(l, out.strides());
      for (int64_t k = 0; k < n; ++k) a[k] = std::complex<T>(src[k * is], T(0));
      plan.transform(a.data(), b.data());
      for (int64_t k = 0; k < bins; ++k) dst[k * os] = b[k] * static_cast<T>(scale);
    }
  }
}

void r2c(const TensorImpl& out, const TensorImpl& in, int64_t last, double scale) {
  if (in.dtype() == ScalarType::Float32) {
    r2c_typed<float>(out, in, last, scale);
  } else {
    r2c_typed<double>(out, in, last, scale);
  }
}

template <class T>
void c2r_typed(const TensorImpl& out, const TensorImpl& in, int64_t dim, double scale) {
  const Lines lines(out.sizes(), dim);
  const int64_t n = out.sizes()[dim], have = in.sizes()[dim];
  const kissfft<T> shared_plan(static_cast<size_t>(n), true);
  const auto* src0 = static_cast<const std::complex<T>*>(in.data_ptr());
  T* dst0 = static_cast<T*>(out.data_ptr());
  const int64_t is = in.strides()[dim], os = out.strides()[dim];
#pragma omp parallel
  {
    // A plan per thread: KISS FFT keeps a scratch buffer in it (mutable)
    // for radices above 5.
    const kissfft<T> plan = shared_plan;
    std::vector<std::complex<T>> a(n), b(n);
#pragma omp for
    for (int64_t l = 0; l < lines.count; ++l) {
      const std::complex<T>* src = src0 + lines.offset(l, in.strides());
      T* dst = dst0 + lines.offset(l, out.strides());
      // The Hermitian spectrum from its first n/2 + 1 bins (missing ones 0).
      for (int64_t k = 0; k <= n / 2; ++k) a[k] = k < have ? src[k * is] : std::complex<T>();
      a[0].imag(T(0));
      if (n % 2 == 0) a[n / 2].imag(T(0));
      for (int64_t k = n / 2 + 1; k < n; ++k) a[k] = std::conj(a[n - k]);
      plan.transform(a.data(), b.data());
      for (int64_t k = 0; k < n; ++k) dst[k * os] = b[k].real() * static_cast<T>(scale);
    }
  }
}

void c2r(const TensorImpl& out, const TensorImpl& in, int64_t last, double scale) {
  if (out.dtype() == ScalarType::Float32) {
    c2r_typed<float>(out, in, last, scale);
  } else {
    c2r_typed<double>(out, in, last, scale);
  }
}

constexpr FftKernels kFft{.c2c = c2c, .r2c = r2c, .c2r = c2r};
AOTRT_REGISTER_KERNELS(FftKernels, cpu, kFft);

}  // namespace
}  // namespace aotrt::cpu
