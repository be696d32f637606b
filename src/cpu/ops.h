// The CPU backend's library ops: matrix products through OpenBLAS and oneDNN
// (cpu/matmul.cpp), convolutions and fused linears through oneDNN
// (cpu/conv.cpp, cpu/linear.cpp), with ATen's semantics. They take views as they are: a library reads a view in
// place when it can address it, else gets a packed copy; results reach
// strided outputs through a temporary when the library cannot write them.
// Errors are aotrt::Error naming the aoti_torch_cpu_* function and argument.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/conv_params.h"
#include "core/tensor.h"
#include "ops/conv.h"
#include "ops/linear.h"
#include "ops/quantized.h"

namespace aotrt::cpu {

// out = self @ mat2 (2-D). out must already have the result's sizes: aotrt
// does not resize it (it may be a view into a larger buffer).
void mm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2);

// out = beta * self + alpha * (mat1 @ mat2); self broadcasts to out's sizes.
// With beta == 0 self is not read, so NaN in it does not reach out.
void addmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat1,
               const TensorImpl& mat2, double beta, double alpha);

// out[b] = self[b] @ mat2[b] (3-D).
void bmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& mat2);

// out[b] = beta * self[b] + alpha * (batch1[b] @ batch2[b]).
void baddbmm_out(const TensorImpl& out, const TensorImpl& self, const TensorImpl& batch1,
                 const TensorImpl& batch2, double beta, double alpha);

// aten.convolution's arguments besides the tensors. Each list has one entry
// per spatial dim, or a single entry that serves them all.
using aotrt::ConvParams;  // core/conv_params.h

// aten.convolution for 1-, 2- and 3-d convolutions, plain or transposed.
// Returns new memory laid out as ATen's CPU kernels lay it out (see
// Note [Convolution output layout]). bias may be null.
std::unique_ptr<TensorImpl> convolution(const TensorImpl& input, const TensorImpl& weight,
                                        const TensorImpl* bias, const ConvParams& params);

// The convolution with its post-ops in one oneDNN primitive, the result in
// new channels-last memory (or `other`); null where it cannot be fused
// (Note [Fused convolutions] in cpu/conv.cpp): the caller then runs the
// convolution and the post-ops apart.
std::unique_ptr<TensorImpl> convolution_fused(const TensorImpl& input, const TensorImpl& weight,
                                              const TensorImpl* bias, const ConvParams& params,
                                              const ops::ConvFusion& fusion);

// Counters of a oneDNN primitive cache (for tests and diagnostics).
struct PrimitiveCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t entries = 0;
  // Constant weights reordered and kept (Note [Constant weights]), ever.
  int64_t weights_cached = 0;
  // Calls served with one fused primitive, ever.
  int64_t fused_calls = 0;
};
// The convolution primitives' cache.
using ConvCacheStats = PrimitiveCacheStats;
ConvCacheStats conv_cache_stats();

// _linear_pointwise(_binary)'s product, bias and fusion in one oneDNN matmul
// primitive, the result in new row-major memory; null where it cannot be
// fused (Note [Fused linears] in cpu/linear.cpp): the caller then runs the
// gemm and the post-ops apart. The arguments are checked as
// ops::linear_pointwise checks them.
std::unique_ptr<TensorImpl> linear_fused(const TensorImpl& x, const TensorImpl& weight,
                                         const TensorImpl* bias, const ops::LinearFusion& fusion);
// The fused linears' primitive cache.
using LinearCacheStats = PrimitiveCacheStats;
LinearCacheStats linear_cache_stats();

// The int8 oneDNN ops (ops/quantized.h: QuantizedKernels::qconv_int8 and
// qlinear_int8) as oneDNN int8 convolution and matmul primitives; null, with
// *why_not, where they cannot serve a call (Note [Int8 primitives] in
// cpu/quantized.cpp): the family then runs the float32 path.
std::unique_ptr<TensorImpl> qconv_int8(const TensorImpl& qx, const TensorImpl& qw,
                                       const TensorImpl* bias, const ConvParams& params,
                                       const ops::QuantArgs& q, const ops::QuantScalars& s,
                                       ScalarType out_dtype, const char** why_not, const char* fn);
std::unique_ptr<TensorImpl> qlinear_int8(const TensorImpl& qx, const TensorImpl& qw,
                                         const TensorImpl* bias, const ops::QuantArgs& q,
                                         const ops::QuantScalars& s, ScalarType out_dtype,
                                         const char** why_not, const char* fn);
// Their primitive cache (fused_calls: the calls served in int8) and the calls
// they left to the float32 path.
struct QuantizedCacheStats : PrimitiveCacheStats {
  int64_t float32_calls = 0;
};
QuantizedCacheStats quantized_cache_stats();
// Switches the int8 primitives on (the default) or off, for every thread:
// off, every call takes the float32 path (for tests and measurements).
void set_quantized_int8(bool enabled);

// What oneDNN's kernels can do on this host (Note [oneDNN's ISA] in
// cpu/onednn.cpp): exact int8 products (VNNI or AMX; without them the int8
// primitives serve nothing), and AVX-512 kernels (bfloat16 matmuls, and the
// direct convolutions some shapes get only there).
bool onednn_int8_exact();
bool onednn_avx512();

}  // namespace aotrt::cpu
