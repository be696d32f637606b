// The checks Model::run makes on each input before the model sees it, when
// the package recorded the layout the model was compiled for
// (ModelInfo::input_specs), and the translation of the model's own input
// check messages when it did not.
//
// Note [Input layout rule]
// An input matches its spec when the dtype and sizes are equal and every
// stride of a dim of size > 1 is equal: ATen's rule, under which a size-1
// dim's stride addresses nothing (and, for an input with no elements,
// nothing does). The model's own checks (AOTI_RUNTIME_CHECK_INPUTS, see
// Note [Model input checks] in model.cpp) compare every stride exactly, so
// the handle the model gets carries the spec's strides: the same elements
// of the same memory, described as the model expects.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"
#include "core/tensor.h"

namespace aotrt::runtime {

// Whether strides `a` and `b` address the same elements for these sizes
// (Note [Input layout rule]).
bool same_layout(std::span<const int64_t> sizes, std::span<const int64_t> a,
                 std::span<const int64_t> b);

// "float32 [1, 64, 40, 40] with strides [102400, 1, 2560, 64]".
std::string describe_layout(ScalarType dtype, std::span<const int64_t> sizes,
                            std::span<const int64_t> strides);

// The strides the model reads an input of `sizes` with: the spec's when the
// sizes are the spec's; for other sizes of its dynamic dims, dense in the
// spec's dim order (the order of its strides, largest first).
std::vector<int64_t> spec_strides(const TensorSpec& spec, std::span<const int64_t> sizes,
                                  const char* fn);

// Throws kInvalidArgument, "<fn>: input <index> ('<name>'): expected <spec>,
// got <input>" and what to do, unless `input` matches `spec` (see Note
// [Input layout rule]; a dynamic dim takes any size in its range, with the
// strides spec_strides gives); returns the strides to hand the model.
std::vector<int64_t> check_input_layout(const TensorSpec& spec, const TensorImpl& input,
                                        size_t index, const std::string& name, const char* fn);

// The model's own check messages name inputs as "input_handles[<i>]";
// returns `message` with each such reference also naming the input, e.g.
// "input_handles[0] (input 0, 'x')", or `message` unchanged.
std::string name_inputs_in_model_message(const std::string& message,
                                         const std::vector<std::string>& input_names);

}  // namespace aotrt::runtime
