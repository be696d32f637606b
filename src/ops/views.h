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

}  // namespace aotrt::ops
