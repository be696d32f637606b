// The C API a model .so exports (torch's aoti_runtime/interface.h), as
// function pointers resolved with dlsym. Our own declarations of torch's
// signatures; nothing here includes a torch header.
//
// Required entries are the ones every AOTInductor .so of torch 2.9-2.13 has
// and without which aotrt cannot run it; the rest are optional and may be
// missing in older (or newer) torch builds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "aotrt/shim.h"

namespace aotrt::runtime {

struct AOTInductorModelContainerOpaque;
using ContainerHandle = AOTInductorModelContainerOpaque*;
using RuntimeError = int32_t;  // AOTIRuntimeError: 0 = success

// torch's AOTInductorConstantMapEntry.
struct ConstantMapEntry {
  const char* name;
  AtenTensorHandle handle;
};

struct ContainerApi {
  // Required.
  RuntimeError (*create_with_device)(ContainerHandle*, size_t num_models, const char* device,
                                     const char* cubin_dir) = nullptr;
  RuntimeError (*destroy)(ContainerHandle) = nullptr;
  RuntimeError (*run)(ContainerHandle, AtenTensorHandle* inputs, size_t num_inputs,
                      AtenTensorHandle* outputs, size_t num_outputs, void* stream,
                      AOTIProxyExecutorHandle proxy_executor) = nullptr;
  RuntimeError (*get_num_inputs)(ContainerHandle, size_t*) = nullptr;
  RuntimeError (*get_num_outputs)(ContainerHandle, size_t*) = nullptr;
  // Optional.
  // Run without the container's per-instance bookkeeping (torch >= 2.6): no
  // event recorded per run and no wait for the previous one. See Note [Run
  // without host waits] in model.cpp.
  RuntimeError (*run_single_threaded)(ContainerHandle, AtenTensorHandle* inputs,
                                      size_t num_inputs, AtenTensorHandle* outputs,
                                      size_t num_outputs, void* stream,
                                      AOTIProxyExecutorHandle proxy_executor) = nullptr;
  RuntimeError (*get_input_name)(ContainerHandle, size_t, const char**) = nullptr;
  RuntimeError (*get_output_name)(ContainerHandle, size_t, const char**) = nullptr;
  RuntimeError (*get_num_constants)(ContainerHandle, size_t*) = nullptr;
  RuntimeError (*get_constant_name)(ContainerHandle, size_t, const char**) = nullptr;
  RuntimeError (*get_constant_original_fqn)(ContainerHandle, size_t, const char**) = nullptr;
  RuntimeError (*get_constant_dtype)(ContainerHandle, size_t, int32_t*) = nullptr;
  RuntimeError (*get_constant_data_size)(ContainerHandle, size_t, size_t*) = nullptr;
  RuntimeError (*get_constant_from_folded)(ContainerHandle, size_t, bool*) = nullptr;
  // torch's ConstantType: 0 Unknown, 1 Parameter, 2 Buffer, 3 TensorConstant,
  // 4 FoldedConstant (aoti_runtime/constant_type.h).
  RuntimeError (*get_constant_type)(ContainerHandle, size_t, int32_t*) = nullptr;
  // The buffer's non-folded constants by original FQN; the array is the
  // container's, valid until its next call or constants change.
  RuntimeError (*extract_constants_map_entries)(ContainerHandle, const ConstantMapEntry**,
                                                size_t*, bool use_inactive) = nullptr;
  RuntimeError (*get_constants_blob_size)(ContainerHandle, uint64_t*) = nullptr;
  RuntimeError (*get_call_spec)(ContainerHandle, const char**, const char**) = nullptr;
  RuntimeError (*update_constants_from_blob)(ContainerHandle, const uint8_t*) = nullptr;
  RuntimeError (*get_last_error)(const char**) = nullptr;  // torch >= 2.13
  // Constant buffers (Note [External weights] in runtime/weights.h). The
  // *Pairs form is torch 2.13's C-ABI-safe one; the older one takes a
  // std::unordered_map<std::string, AtenTensorHandle>*.
  RuntimeError (*update_user_managed_pairs)(ContainerHandle, const ConstantMapEntry*, size_t,
                                            bool use_inactive, bool validate_full_update) = nullptr;
  RuntimeError (*update_user_managed_map)(ContainerHandle, void* map, bool use_inactive,
                                          bool validate_full_update) = nullptr;
  RuntimeError (*swap_constant_buffer)(ContainerHandle) = nullptr;
  // Frees the memory the inactive buffer's constants were loaded into.
  RuntimeError (*free_inactive_constant_buffer)(ContainerHandle) = nullptr;
  // The older form of extract_constants_map_entries (torch < 2.13): fills a
  // std::unordered_map<std::string, AtenTensorHandle>* (handles borrowed).
  RuntimeError (*extract_constants_map)(ContainerHandle, void* map, bool use_inactive) = nullptr;
};

// Names of the required entries, for checks made before dlopen.
const std::vector<std::string>& required_container_symbols();
inline constexpr const char* kUpdateConstantsFromBlob = "AOTInductorModelUpdateConstantsFromBlob";

// Resolves every entry from a dlopened model; throws kPackage naming the
// missing required ones.
ContainerApi resolve_container_api(void* so_handle, const std::string& what);

}  // namespace aotrt::runtime
