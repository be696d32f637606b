#include "runtime/container_api.h"

#include <dlfcn.h>

#include "core/error.h"

namespace aotrt::runtime {
namespace {

constexpr const char* kCreate = "AOTInductorModelContainerCreateWithDevice";
constexpr const char* kDelete = "AOTInductorModelContainerDelete";
constexpr const char* kRun = "AOTInductorModelContainerRun";
constexpr const char* kNumInputs = "AOTInductorModelContainerGetNumInputs";
constexpr const char* kNumOutputs = "AOTInductorModelContainerGetNumOutputs";

template <typename Fn>
void bind(void* so, const char* name, Fn*& slot) {
  ::dlerror();
  slot = reinterpret_cast<Fn*>(::dlsym(so, name));
}

}  // namespace

const std::vector<std::string>& required_container_symbols() {
  static const std::vector<std::string> names = {kCreate, kDelete, kRun, kNumInputs,
                                                 kNumOutputs};
  return names;
}

ContainerApi resolve_container_api(void* so, const std::string& what) {
  ContainerApi api;
  bind(so, kCreate, api.create_with_device);
  bind(so, kDelete, api.destroy);
  bind(so, kRun, api.run);
  bind(so, kNumInputs, api.get_num_inputs);
  bind(so, kNumOutputs, api.get_num_outputs);
  std::string missing;
  auto need = [&](const void* fn, const char* name) {
    if (fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
  };
  need(reinterpret_cast<const void*>(api.create_with_device), kCreate);
  need(reinterpret_cast<const void*>(api.destroy), kDelete);
  need(reinterpret_cast<const void*>(api.run), kRun);
  need(reinterpret_cast<const void*>(api.get_num_inputs), kNumInputs);
  need(reinterpret_cast<const void*>(api.get_num_outputs), kNumOutputs);
  AOTRT_CHECK(missing.empty(), kPackage, what, " does not export ", missing,
              ": it is not an AOTInductor model .so with the container C API");

  bind(so, "AOTInductorModelContainerRunSingleThreaded", api.run_single_threaded);
  bind(so, "AOTInductorModelContainerGetInputName", api.get_input_name);
  bind(so, "AOTInductorModelContainerGetOutputName", api.get_output_name);
  bind(so, "AOTInductorModelContainerGetNumConstants", api.get_num_constants);
  bind(so, "AOTInductorModelContainerGetConstantName", api.get_constant_name);
  bind(so, "AOTInductorModelContainerGetConstantOriginalFQN", api.get_constant_original_fqn);
  bind(so, "AOTInductorModelContainerGetConstantDtype", api.get_constant_dtype);
  bind(so, "AOTInductorModelContainerGetConstantDataSize", api.get_constant_data_size);
  bind(so, "AOTInductorModelContainerGetConstantFromFolded", api.get_constant_from_folded);
  bind(so, "AOTInductorModelContainerGetConstantType", api.get_constant_type);
  bind(so, "AOTInductorModelContainerExtractConstantsMapEntries",
       api.extract_constants_map_entries);
  bind(so, "AOTInductorModelContainerGetConstantsBlobSize", api.get_constants_blob_size);
  bind(so, "AOTInductorModelContainerGetCallSpec", api.get_call_spec);
  bind(so, kUpdateConstantsFromBlob, api.update_constants_from_blob);
  bind(so, "AOTInductorGetLastError", api.get_last_error);
  bind(so, "AOTInductorModelContainerUpdateUserManagedConstantBufferPairs",
       api.update_user_managed_pairs);
  bind(so, "AOTInductorModelContainerUpdateUserManagedConstantBuffer", api.update_user_managed_map);
  bind(so, "AOTInductorModelContainerSwapConstantBuffer", api.swap_constant_buffer);
  bind(so, "AOTInductorModelContainerFreeInactiveConstantBuffer",
       api.free_inactive_constant_buffer);
  bind(so, "AOTInductorModelContainerExtractConstantsMap", api.extract_constants_map);
  return api;
}

}  // namespace aotrt::runtime
