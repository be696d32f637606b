// Factories and shape ops built from aotrt's device-generic copy: fill_,
// full, new_empty, new_zeros, cat, constant pad (and constant_pad_nd),
// clone. No kernels of their own: a fill is a broadcast copy of a 0-d
// tensor, cat, pad and clone copy into their result, so every device that
// copies serves them.
//
// Note [Shape semantics]
// ATen's rules, checked against torch 2.13 eager: cat promotes its inputs'
// dtypes, skips legacy empty 1-d inputs ([0]), and returns a contiguous
// result unless every input is channels-last (4-d), then channels-last;
// constant pad pads (or, negative, crops) the last dims, pairs given from the
// last dim backwards, into a new tensor filled with `value` (0 when None),
// laid out in self's suggest_memory_format (channels-last for a 4-d/5-d
// channels-last self, else contiguous); other pad modes are refused naming
// the mode. clone: preserve format (core/copy.h's clone_tensor) when no
// format is given, else the format asked, which must suit the rank
// (channels_last 4-d, channels_last_3d 5-d, as ATen refuses otherwise).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "aotrt/aotrt.h"  // MemoryFormat
#include "core/tensor.h"

namespace aotrt::ops {

void fill(const TensorImpl& self, double value, const char* fn);
std::unique_ptr<TensorImpl> full(std::span<const int64_t> size, double value, ScalarType dtype,
                                 Device device, const char* fn);
std::unique_ptr<TensorImpl> cat(const std::vector<const TensorImpl*>& tensors, int64_t dim,
                                const char* fn);
std::unique_ptr<TensorImpl> pad(const TensorImpl& self, std::span<const int64_t> pad,
                                std::string_view mode, std::optional<double> value, const char* fn);

std::unique_ptr<TensorImpl> clone(const TensorImpl& self, std::optional<MemoryFormat> format,
                                  const char* fn);

}  // namespace aotrt::ops
