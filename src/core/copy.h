// Device-generic copies with ATen's semantics: copy_ broadcasts the source to
// the destination's sizes, converts dtypes, writes through any strided view,
// and treats overlapping source and destination as ATen does (see
// Note [Copy overlap]). The element loops live in the backends
// (cpu/copy.cpp, cuda/copy.cu).
#pragma once

#include <memory>

#include "core/tensor.h"

namespace aotrt {

// dst.copy_(src). Throws Error with `what` in the message when ATen would
// refuse (shapes not broadcastable, internal or partial overlap).
void copy_tensor(const TensorImpl& dst, const TensorImpl& src, const char* what);

// src.clone(): new memory with empty_like(preserve_format) strides.
std::unique_ptr<TensorImpl> clone_tensor(const TensorImpl& src, const char* what);

// Inductor's clone_preserve_strides: new memory covering the view's span from
// its first element, with the same sizes and strides.
std::unique_ptr<TensorImpl> clone_preserve_strides(const TensorImpl& src, const char* what);

// self.zero_() through any strided view.
void zero_tensor(const TensorImpl& t, const char* what);

// self.fill_(value) through any strided view: value converted to t's dtype
// as a copy from a float64 scalar would convert it; on CUDA one kernel on the
// current stream (no host round trip).
void fill_tensor(const TensorImpl& t, double value, const char* what);

// One element of t converted to double / int64 (item()); a CUDA tensor is
// read back on the current stream, which waits for it.
void read_item(const TensorImpl& t, ScalarType as, void* out, const char* what);

}  // namespace aotrt
