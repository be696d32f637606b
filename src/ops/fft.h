// FFT: _fft_r2c and _fft_c2c (C shims) and _fft_c2r (proxy executor), which
// torch.fft's functions (fft, fftn, rfft, rfftn, irfft, ihfft, ...) lower to.
//
// Note [FFT layout and scaling]
// Outputs are laid out as ATen's kernels of the device lay them out, as
// torch's meta functions (which inductor's code follows) say. On the CPU
// (the meta functions' _exec_fft): the dims not
// transformed, ordered by the input's strides (largest first), collapse into
// one batch dim that is outermost; the transformed dims follow densely in
// the order of `dim` (for c2c and r2c, dim's leading entries sorted by the
// input's strides too). normalization is ATen's fft_norm_mode: 0 none,
// 1 by 1/sqrt(n), 2 by 1/n, with n the product of the signal sizes (the
// input's for r2c and c2c, the output's for c2r). r2c transforms the last
// dim of `dim` first, keeping n/2 + 1 bins (or all with onesided=False,
// filled from Hermitian symmetry), then the others; c2r the others first,
// then the last one as a Hermitian signal of last_dim_size points (on the
// CPU the imaginary parts of its DC and Nyquist bins are ignored, as
// pocketfft and MKL do; on CUDA they are what cuFFT makes of them, as in
// ATen's CUDA kernel). On CUDA the layouts differ: Note [cuFFT output
// layouts] in ops/fft.cpp; the kernels: Note [cuFFT passes] in
// cuda/ops/fft.cu. Float32 and float64 (complex64 and complex128) are
// served, and on CUDA float16 (complex32) for power-of-two sizes, as ATen's
// CUDA FFT serves it (cuFFT's half precision).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/tensor.h"

namespace aotrt::ops {

// See Note [Op dispatch] in ops/dispatch.h. Tensors may have any strides.
struct FftKernels {
  // out (complex) <- DFT of in (complex, same sizes) along dims, in order;
  // forward uses exp(-2 pi i jk/n). Every value is multiplied by scale.
  void (*c2c)(const TensorImpl& out, const TensorImpl& in, std::span<const int64_t> dims,
              bool forward, double scale);
  // out (complex, in's sizes but out.sizes[last] bins of the last dim) <-
  // forward DFT of real `in` along `last` only, times scale.
  void (*r2c)(const TensorImpl& out, const TensorImpl& in, int64_t last, double scale);
  // out (real) <- inverse DFT along `last` of the Hermitian signal whose
  // first bins `in` holds (out.sizes[last] points), times scale.
  void (*c2r)(const TensorImpl& out, const TensorImpl& in, int64_t last, double scale);
};

using TensorPtr = std::unique_ptr<TensorImpl>;

// The strides ATen's CUDA kernels give the output of `op` on a tensor of
// these sizes and strides transformed along `dim` (wrapped, in the caller's
// order): Note [cuFFT output layouts] in ops/fft.cpp. `arg`: onesided for
// r2c, last_dim_size for c2r (c2c has none).
enum class FftOp { kC2C, kR2C, kC2R };
std::vector<int64_t> cuda_fft_strides(FftOp op, std::span<const int64_t> sizes,
                                      std::span<const int64_t> strides,
                                      std::span<const int64_t> dim, int64_t arg);

TensorPtr fft_r2c(const TensorImpl& self, std::span<const int64_t> dim, int64_t normalization,
                  bool onesided, const char* fn);
TensorPtr fft_c2c(const TensorImpl& self, std::span<const int64_t> dim, int64_t normalization,
                  bool forward, const char* fn);
TensorPtr fft_c2r(const TensorImpl& self, std::span<const int64_t> dim, int64_t normalization,
                  int64_t last_dim_size, const char* fn);

}  // namespace aotrt::ops
