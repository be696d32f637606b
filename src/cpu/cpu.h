// The CPU backend's element loops and allocator. Everything takes
// StridedViews: any strides, 64-bit indexing, no assumptions of density.
#pragma once

#include "core/allocator.h"
#include "core/tensor.h"

namespace aotrt::cpu {

// The process-wide CPU allocator: 64-byte-aligned blocks, counted; freed
// blocks of 64 KiB or more are cached for reuse by a request of the same
// size. See Note [CPU block cache] in cpu/allocator.cpp.
Allocator& allocator();

// Frees every cached block of the CPU allocator; live blocks are untouched.
void empty_cache();

// Caps the bytes the CPU allocator caches (0 disables the cache), freeing the
// oldest cached blocks past the new cap; returns the previous cap. The cap
// starts at AOTRT_CPU_CACHE_BYTES, else 1 GiB. Under AddressSanitizer the
// cache is off and this does nothing (the cap stays 0).
size_t set_cache_limit(size_t max_cached_bytes);
size_t cache_limit();

// dst[i] = convert(src[i]) for every index; dst and src have the same sizes
// (src may have stride-0 dims from broadcasting). The caller has ruled out
// harmful overlap. Throws kUnsupported for a dtype pair it cannot convert.
void copy_strided(const StridedView& dst, const StridedView& src);

// Whether copy_strided converts src_dtype to dst_dtype.
bool can_convert(ScalarType dst_dtype, ScalarType src_dtype);

// Writes zero to every element dst addresses.
void fill_zero(const StridedView& dst);

// C = alpha op(A) op(B) + beta C on row-major float32 matrices, through the
// float32 gemm library of the matmul family (Note [CPU gemm library],
// cpu/matmul.cpp). Inside an OpenMP parallel region it runs on the calling
// thread. Throws kBackend, naming `fn`, if the library fails.
void sgemm_row_major(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                     const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                     int64_t ldc, const char* fn);

}  // namespace aotrt::cpu
