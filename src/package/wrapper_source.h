// What the generated <h>.wrapper.cpp that aoti_compile_and_package puts in
// every package says about the model's constants and inputs, read as text.
//
// Note [Reading the wrapper source]
// The container C API names each constant and gives its dtype and byte size,
// but not its sizes, strides or storage offset, and nothing about inputs
// beyond their names. The generated source states both, in lines of fixed
// shape (torch 2.13's cpp_wrapper_cpu.py):
//   constants_info_[3].shape = {64, 32};      .stride = {32, 1};   .offset = 0;
//   int32_t arg0_1_expected_dtype = aoti_torch_dtype_bfloat16();   (check_input_<i>)
//   if (8 != arg0_1_size[1]) {                if (1 != arg0_1_stride[3]) {
//   constants_info_[2].layout = static_cast<int32_t>(cached_torch_layout__mkldnn);
//   constants_info_[2].opaque_metadata = {1L, 0L, ...};   .data_size = 896;
// A dynamic dim has range checks instead ("if (arg0_1_size[0] < 2)",
// "if (arg0_1_size[0] > 8)"): its size stays unknown and its range is read
// (a stride that depends on it is not checked, so stays unknown). Advisory: a
// line of any other shape is skipped, and a package without the source
// yields nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aotrt::package {

struct WrapperConstant {
  std::string name;
  std::string dtype;  // "bfloat16", as in cached_torch_dtype_bfloat16
  std::vector<int64_t> sizes, strides;
  int64_t storage_offset = 0;
  bool has_layout = false;  // both .shape and .stride were read
  // A oneDNN-blocked constant (.layout = ..._mkldnn) of a freezing=True
  // export: its .opaque_metadata bytes (Note [Serialized oneDNN descriptors]
  // in core/onednn_md.h) and .data_size.
  bool mkldnn = false;
  std::vector<uint8_t> opaque_metadata;
  int64_t data_size = -1;
};

struct WrapperInput {
  std::string dtype;                            // "" when not found
  std::vector<std::optional<int64_t>> sizes;    // nullopt: a dynamic dim
  std::vector<std::optional<int64_t>> strides;  // nullopt: not checked
  // A dynamic dim's range checks: the least and the greatest size it takes
  // (nullopt where the source checks no bound).
  std::vector<std::optional<int64_t>> min_sizes, max_sizes;
};

struct WrapperSource {
  std::vector<WrapperConstant> constants;  // by constants_info_ index
  std::vector<WrapperInput> inputs;        // by input index (check_input_<i>)
};

WrapperSource parse_wrapper_source(std::string_view text);

}  // namespace aotrt::package
