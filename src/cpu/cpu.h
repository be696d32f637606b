// The CPU backend's element loops and allocator. Everything takes
// StridedViews: any strides, 64-bit indexing, no assumptions of density.
#pragma once

#include "core/allocator.h"
#include "core/tensor.h"

namespace aotrt::cpu {

// The process-wide CPU allocator: 64-byte-aligned blocks, counted.
Allocator& allocator();

// dst[i] = convert(src[i]) for every index; dst and src have the same sizes
// (src may have stride-0 dims from broadcasting). The caller has ruled out
// harmful overlap. Throws kUnsupported for a dtype pair it cannot convert.
void copy_strided(const StridedView& dst, const StridedView& src);

// Whether copy_strided converts src_dtype to dst_dtype.
bool can_convert(ScalarType dst_dtype, ScalarType src_dtype);

// Writes zero to every element dst addresses.
void fill_zero(const StridedView& dst);

}  // namespace aotrt::cpu
