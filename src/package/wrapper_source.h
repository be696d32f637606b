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

// What the generated code does with a constant (Note [Constants a run writes]).
enum class ConstantAccess {
  kUnused,        // never named in the code (folded into a kernel, or not read)
  kRead,          // every use reads it
  kMaybeWritten,  // some use is of another shape (an op with no schema's argument, a view)
  kWritten,       // some use writes it: a kernel's output, an op's Tensor(a!) or out= argument
};

struct WrapperConstant {
  std::string name;
  ConstantAccess access = ConstantAccess::kUnused;
  std::string dtype;  // "bfloat16", as in cached_torch_dtype_bfloat16
  std::vector<int64_t> sizes, strides;
  int64_t storage_offset = 0;
  bool has_layout = false;  // both .shape and .stride were read
  // .type: torch's ConstantType (aoti_runtime/constant_type.h): 1 Parameter,
  // 2 Buffer, 3 TensorConstant, 4 FoldedConstant; 0 when not read.
  int32_t type = 0;
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
  // The code declaring the constants ("auto& X = constants_->at(i);") was
  // found, so WrapperConstant::access was read; false leaves every access
  // kUnused, which says nothing.
  bool access_known = false;
};

// Note [Constants a run writes]
// Which constants a graph writes decides what a session owns (a KV cache)
// and what its sessions share (the weights); the container API does not say,
// so it is read from the generated code. A use is a read only in the shapes
// inductor emits for kernel inputs, a write in the shapes it emits for
// outputs, and anything else (a fallback op's argument, a view made of it)
// may be either:
//  - A C++ kernel's argument "(const float*)(X.data_ptr())" reads X; an
//    output is cast without const: "(float*)(X.data_ptr())".
//  - A Triton launch "call_triton_K(X, buf1, 16L, ...)" passes X as the
//    parameter of call_triton_K's definition at that position, named after
//    the Triton kernel's own argument: in_ptrN reads, out_ptrN and
//    in_out_ptrN write (inductor's naming, torch/_inductor/codegen/triton.py).
//  - A fallback-op shim's argument "aoti_torch_cuda__scaled_mm(buf0, X, ...)"
//    is read or written as torch's schema of the op says, by its position
//    (Note [Shim arguments a run writes] in wrapper_source.cpp); an op with no
//    schema keeps it maybe written, but for the first argument of a shim whose
//    name ends in '_' (in place: aoti_torch_copy_) or "_out", which is written.
// X is the name the run gives constant i in "auto& X = constants_->at(i);".
// Comments and string literals (raw ones too) are skipped.
WrapperSource parse_wrapper_source(std::string_view text);

}  // namespace aotrt::package
