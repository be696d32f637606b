// Views: narrow, slice, permute, squeeze, reshape, view_dtype, view_as_real,
// view_as_complex. Each result is a new handle on its input's storage with
// its own sizes, strides and offset (make_tensor checks it against the
// storage); nothing is copied, except by reshape when no view can express it
// (ATen's _reshape_copy: a contiguous clone). No kernels: every device alike.
//
// Note [View semantics]
// ATen's rules, checked against torch 2.13 eager: negative dims and starts
// wrap; slice clamps start and end into [0, size] (end < start gives an
// empty view) and takes step > 0; squeeze of a dim whose size is not 1
// returns an equal view; view_dtype to a smaller element scales the last dim
// (stride 1) and every other stride, to a larger one needs them divisible;
// view_as_real appends a dim of 2 (stride 1), view_as_complex takes it away.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "core/tensor.h"
#include "core/view.h"

namespace aotrt::ops {

std::unique_ptr<TensorImpl> narrow(const TensorImpl& self, int64_t dim, int64_t start,
                                   int64_t length, const char* fn);
std::unique_ptr<TensorImpl> slice(const TensorImpl& self, int64_t dim,
                                  std::optional<int64_t> start, std::optional<int64_t> end,
                                  int64_t step, const char* fn);
std::unique_ptr<TensorImpl> permute(const TensorImpl& self, std::span<const int64_t> dims,
                                    const char* fn);
std::unique_ptr<TensorImpl> squeeze_dim(const TensorImpl& self, int64_t dim, const char* fn);
// A view when the sizes can be expressed on self's strides, else a contiguous copy.
std::unique_ptr<TensorImpl> reshape(const TensorImpl& self, std::span<const int64_t> shape,
                                    const char* fn);
std::unique_ptr<TensorImpl> view_dtype(const TensorImpl& self, ScalarType dtype, const char* fn);
std::unique_ptr<TensorImpl> view_as_real(const TensorImpl& self, const char* fn);
std::unique_ptr<TensorImpl> view_as_complex(const TensorImpl& self, const char* fn);

// In-place metadata ops: they change the tensor behind a handle, not its
// values (Note [Resizing in place]).
// self.resize_(size, memory_format): new sizes, contiguous (or in `format`,
// never preserve_format) strides; the storage grows when they need more.
void resize_(TensorImpl& self, std::span<const int64_t> size,
             std::optional<MemoryFormatArg> format, const char* fn);
// self.resize_as_(the_template, memory_format): resize_ to the template's
// sizes; preserve_format takes the template's suggested memory format.
void resize_as_(TensorImpl& self, const TensorImpl& the_template,
                std::optional<MemoryFormatArg> format, const char* fn);
// self.set_(source): self becomes a view of source's storage with source's
// sizes, strides and offset (same dtype and device).
void set_(TensorImpl& self, const TensorImpl& source, const char* fn);

}  // namespace aotrt::ops
