// aotrt::Model: a model .so, its container and its weights, loaded from a
// package into a private folder and unloaded with it.
//
// Note [Weights blob lifetime]
// AOTInductorModelUpdateConstantsFromBlob(container, ptr) (torch's
// model_base.h, update_constants_from_blob -> load_constants(force=true))
// allocates the model's own constant memory and copies every non-folded
// constant out of the blob into it (memcpy on CPU, a synchronous cudaMemcpy
// on CUDA), then wraps those copies with create_tensor_from_blob_v2. It keeps
// the blob pointer only to read it again on a later call of the same
// function, which aotrt never makes. So the blob is held just for that
// call and freed right after: a loaded model holds its weights once, in the
// model's memory. The copy goes only to the container's first
// model instance (models_[0]), which is why containers are made with one
// instance (Run then serialises concurrent calls).
// For that call the blob is mapped from the .pt2 where the archive stores
// it uncompressed, as torch writes it (Note [Stored entries read in place];
// its CRC checked first), and read from the archive into memory otherwise:
// extracting it to a file first wrote every weight to disk and read it back
// through page faults; resnet50's 100 MB blob made loading take 0.2 to 0.9 s
// from run to run on this project's machine (the disk's writeback). A
// mapped blob's pages are dropped as the model registers each constant
// (Note [Weights pages during load]), so a 16 GB blob is never all resident.
//
// Note [Model input checks]
// Generated code checks each input's dtype, sizes, strides and device only
// when the environment variable AOTI_RUNTIME_CHECK_INPUTS is set to other
// than "0" (read with getenv once per model .so, into a static, at its
// first run: torch 2.11 and 2.13 alike); without the checks an input of the
// wrong shape or layout is read and written out of bounds. aotrt never sets
// the variable (a library leaves its host's environment alone): with
// LoadOptions::check_inputs (on by default) the loader renames the model's
// import of getenv to aotenv (runtime/model_env.h), which answers "1" for
// that variable unless the process set it either way, and passes every
// other read through. So the checks are per model, and no other code in
// the process sees a change. Where the rename is impossible (another name
// shares getenv's bytes in the .so's string table) the model's own checks
// stay as the process's environment says, and the loader warns; aotrt's
// own checks against recorded layouts (runtime/input_check.h) apply still.
//
// Note [Run without host waits]
// torch's AOTInductorModelContainerRun, with the one model instance aotrt
// makes, records an event after each run and, at the next run, waits on the
// host for it (reclaim_finished_models -> cudaEventSynchronize) before
// starting: back-to-back CUDA runs could never queue ahead of the device.
// AOTInductorModelContainerRunSingleThreaded calls the same run_impl without
// that bookkeeping, and is what a CUDA graph capture needs (an event poll
// breaks a capture). aotrt calls it when the .so exports it, and serialises
// the runs of one Model with its own mutex instead, which is all the
// bookkeeping did for one instance. A steady-state run then neither waits
// for the device nor allocates arrays on the heap (per-thread scratch; the
// output bookkeeping scans small arrays instead of building hash maps).
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <map>
#include <set>
#include <unordered_map>
#include <numeric>
#include <optional>

#include "aotrt/aotrt.h"
#include "core/copy.h"
#include "core/handles.h"
#include "core/view.h"
#include "cuda/cuda.h"
#include "package/elf_patch.h"
#include "runtime/container_api.h"
#include "runtime/cuda_graph.h"
#include "runtime/input_check.h"
#include "runtime/mapped_file.h"
#include "runtime/model_mmap.h"
#include "runtime/model_state.h"
#include "runtime/model_tls.h"
#include "runtime/pickle_weights.h"
#include "runtime/preflight.h"
#include "runtime/proxy_executor.h"
#include "runtime/self_library.h"
#include "runtime/weights.h"
#include "package/wrapper_source.h"
#include "shim/boundary.h"

namespace aotrt {

using runtime::ContainerApi;
using runtime::ContainerHandle;
using runtime::RuntimeError;

class Model::Impl {
 public:
  explicit Impl(package::TempDir dir) : dir(std::move(dir)) {}
  // Container first (it frees constants and kernels the .so made), then the
  // .so, then the folder it was loaded from (the TempDir member, last).
  ~Impl() {
    graph.reset();  // its kernels belong to the container
    if (container != nullptr) {
      HandleWatch watch;
      if (api.destroy(container) != 0) {
        std::fprintf(stderr, "aotrt: warning: deleting the container of %s failed: %s\n",
                     info.package_path.c_str(), model_error().c_str());
      }
      // Note [Handles a container keeps]: what it made and never deleted.
      const std::set<AtenTensorHandle> gone(watch.deleted.begin(), watch.deleted.end());
      for (const std::set<AtenTensorHandle>& held : buffer_handles) {
        for (AtenTensorHandle h : held) {
          if (gone.count(h) == 0 && handle_is_live(h)) aoti_torch_delete_tensor_object(h);
        }
      }
    }
    if (so != nullptr) {
      runtime::run_model_thread_destructors(so);  // see runtime/model_tls.h
      runtime::release_model_cxx_runtime(so);
      cuda::unload_model_modules(so);  // Note [Kernel modules of a model]
      ::dlclose(so);
    }
  }

  // The model's own message for its last failure on this thread.
  std::string model_error() const {
    const char* msg = nullptr;
    if (api.get_last_error != nullptr && api.get_last_error(&msg) == 0 && msg != nullptr &&
        msg[0] != '\0') {
      std::string text = msg;
      while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
      return text;
    }
    return "(this model reports its error only on stderr, as a line 'Error: ...')";
  }
  // "<call> failed: <model message>[; aotrt: <last shim failure>]".
  std::string failure(const char* call) const {
    std::string text = std::string(call) + " failed: " + model_error();
    const std::string& shim = last_error();
    if (!shim.empty() && text.find(shim) == std::string::npos) {
      text += "; the last aotrt shim failure on this thread: " + shim;
    }
    return "model '" + info.model_name + "' of " + info.package_path + ": " + text;
  }

  // The container's run entry (Note [Run without host waits]).
  const char* run_entry() const {
    return api.run_single_threaded != nullptr ? "AOTInductorModelContainerRunSingleThreaded"
                                              : "AOTInductorModelContainerRun";
  }
  runtime::RuntimeError call_container(AtenTensorHandle* in, size_t n_in, AtenTensorHandle* out,
                                       size_t n_out, void* stream) {
    const auto run = api.run_single_threaded != nullptr ? api.run_single_threaded : api.run;
    return run(container, in, n_in, out, n_out, stream,
               proxy != nullptr ? proxy->handle() : nullptr);
  }

  // Gives `set` to the container's active or inactive constant buffer
  // (Note [External weights]). The caller holds run_mutex or runs nothing.
  void give_constants(const runtime::ConstantSet& set, bool use_inactive, const char* fn) {
    std::vector<runtime::ConstantMapEntry> pairs;
    for (size_t i = 0; i < set.names.size(); ++i) {
      pairs.push_back({set.names[i].c_str(), set.tensors[i].handle()});
    }
    const char* call = api.update_user_managed_pairs != nullptr
                           ? "AOTInductorModelContainerUpdateUserManagedConstantBufferPairs"
                           : "AOTInductorModelContainerUpdateUserManagedConstantBuffer";
    AOTRT_CHECK(api.update_user_managed_pairs != nullptr || api.update_user_managed_map != nullptr,
                kUnsupported, fn, ": model '", info.model_name, "' of ", info.package_path,
                ": the .so exports no ", call, " (torch older than 2.7?), which external "
                "weights need");
    clear_last_error();
    const int buffer = use_inactive ? 1 - active_buffer : active_buffer;
    HandleWatch watch;
    RuntimeError rc = 0;
    if (api.update_user_managed_pairs != nullptr) {
      rc = api.update_user_managed_pairs(container, pairs.data(), pairs.size(), use_inactive,
                                         /*validate_full_update=*/true);
    } else {
      std::unordered_map<std::string, AtenTensorHandle> map;
      for (const auto& p : pairs) map.emplace(p.name, p.handle);
      rc = api.update_user_managed_map(container, &map, use_inactive, /*validate_full_update=*/true);
    }
    // Note [Handles a container keeps]: every entry of the buffer was
    // replaced; the container's handles to the set it held that it did not
    // delete itself are unreachable now, and aotrt's to delete.
    const std::set<AtenTensorHandle> gone(watch.deleted.begin(), watch.deleted.end());
    std::set<AtenTensorHandle> made;
    for (AtenTensorHandle h : watch.made) {
      if (gone.count(h) == 0) made.insert(h);
    }
    if (rc == 0) {
      for (AtenTensorHandle h : buffer_handles[buffer]) {
        if (gone.count(h) == 0 && handle_is_live(h)) aoti_torch_delete_tensor_object(h);
      }
      buffer_handles[buffer] = std::move(made);
    } else {
      buffer_handles[buffer].insert(made.begin(), made.end());  // deleted with the container
    }
    AOTRT_CHECK(rc == 0, kBackend, failure(call));
  }

  // Note [Constant marking]
  // The storages of the active constant buffer that nothing writes while
  // they live are marked constant (Note [Constant storages] in
  // core/derived_cache.h), so that work derived from their bytes (a conv
  // weight's reorder, Note [Constant weights] in cpu/conv.cpp) is done once.
  // Marked: Parameters and TensorConstants (AOTInductorModelContainer-
  // GetConstantType), whether the package's (memory the model's .so owns)
  // or external weights aotrt copied. Never marked: Buffers (a model may
  // mutate one in place: KV caches, running statistics), Unknown types,
  // folded constants (the extracted map leaves them out), and the caller's
  // memory given in place by Weights::from_tensors or a safetensors mapping
  // (the caller may write it). A .so without GetConstantType or
  // ExtractConstantsMapEntries (torch older than 2.13) gets no marks: the
  // convolution then reorders per call, as before. Called after load and
  // after every swap (the new set's storages are new objects, unmarked; the
  // old ones keep their marks and caches until they die). Best effort: a
  // constant it cannot read stays unmarked (slower, never wrong), and a load
  // or swap never fails here.
  void mark_constants() noexcept {
    try {
      mark_constants_or_throw();
    } catch (...) {
    }
  }
  void mark_constants_or_throw() {
    if (!info.device.is_cpu() || !has_weights || api.get_constant_type == nullptr ||
        api.extract_constants_map_entries == nullptr) {
      return;
    }
    std::set<const Storage*> callers;
    for (size_t i = 0; i < active_set.tensors.size(); ++i) {
      if (active_set.callers[i]) {
        callers.insert(handle_get_defined(active_set.tensors[i].handle(), "mark_constants")
                           .storage()
                           .get());
      }
    }
    std::unordered_map<std::string, size_t> index;  // original FQN -> constant index
    std::set<std::string> ambiguous;
    for (size_t i = 0; i < info.constants.size(); ++i) {
      if (!index.emplace(info.constants[i].original_fqn, i).second) {
        ambiguous.insert(info.constants[i].original_fqn);
      }
    }
    const runtime::ConstantMapEntry* entries = nullptr;
    size_t n = 0;
    if (api.extract_constants_map_entries(container, &entries, &n, /*use_inactive=*/false) != 0) {
      return;
    }
    for (size_t e = 0; e < n; ++e) {
      if (entries[e].name == nullptr || entries[e].handle == nullptr) continue;
      const auto it = index.find(entries[e].name);
      if (it == index.end() || ambiguous.count(entries[e].name)) continue;
      int32_t type = 0;
      if (api.get_constant_type(container, it->second, &type) != 0) continue;
      if (type != 1 && type != 3) continue;  // Parameter, TensorConstant
      const TensorImpl& t = handle_get(entries[e].handle, "mark_constants");
      if (!t.defined() || !t.device().is_cpu() || callers.count(t.storage().get())) continue;
      t.storage()->mark_constant();
    }
  }

  // Model::swap_weights / update_weights (Note [External weights]).
  void swap(const Weights& weights, bool partial, const char* fn) {
    std::lock_guard<std::mutex> swapping(weights_mutex);
    AOTRT_CHECK(api.swap_constant_buffer != nullptr, kUnsupported, fn, ": model '",
                info.model_name, "' of ", info.package_path,
                ": the .so exports no AOTInductorModelContainerSwapConstantBuffer");
    AOTRT_CHECK(!partial || external_weights, kUnsupported, fn, ": model '", info.model_name,
                "' runs on its package's weights, which aotrt cannot share with a partial "
                "update; give every constant (swap_weights)");
    // Checked and uploaded while runs go on.
    runtime::ConstantSet next = runtime::prepare_constants(info, weights, partial ? &active_set : nullptr, fn);
    if (info.device.is_cuda()) synchronize(info.device);  // the uploads are done
    {
      std::lock_guard<std::mutex> lock(run_mutex);  // after the run in progress
      // Runs queued before the last swap may still read the set the
      // inactive buffer holds; the container is about to let go of it.
      if (info.device.is_cuda()) cuda::synchronize_device(info.device.index);
      give_constants(next, /*use_inactive=*/true, fn);
      clear_last_error();
      const RuntimeError rc = api.swap_constant_buffer(container);
      AOTRT_CHECK(rc == 0, kBackend, failure("AOTInductorModelContainerSwapConstantBuffer"));
      active_buffer = 1 - active_buffer;
      if (graph != nullptr) graph->reset();  // captured kernels read the old constants
      // Note [Bound state]: the new set holds the model's own state now; the
      // handles made for the session bound before stay with the buffer that
      // still holds them, and go when it is next given a set.
      buffer_handles[1 - active_buffer].insert(state_made.begin(), state_made.end());
      state_made.clear();
      own_state.clear();
      own_state_entries.clear();
      bound_state = 0;
      ++weights_version;
      info.weights_source = next.source;
      inactive_set = std::move(active_set);  // the set replaced above goes here
      active_set = std::move(next);
      external_weights = true;
      has_weights = true;
      mark_constants();
    }
  }

  package::TempDir dir;
  // Note [Weights appended to the .so]: what the model mapped of the .pt2,
  // unmapped after the .so is closed (members go after the destructor's body).
  std::unique_ptr<runtime::AppendedWeights> appended;
  void* so = nullptr;
  ContainerApi api;
  ContainerHandle container = nullptr;
  // Ops without a C shim (Note [Proxy executor]); null when the .so calls none.
  std::unique_ptr<runtime::ProxyExecutor> proxy;
  std::mutex run_mutex;  // runs of this Model, one at a time
  std::unique_ptr<runtime::CudaGraphs> graph;  // LoadOptions::cuda_graph; null: plain runs
  CudaGraphMode graph_mode = CudaGraphMode::kOff;  // as asked, kOff for CPU models
  std::string graph_unavailable;  // kAuto on a .so that cannot be captured: why
  ModelInfo info;
  // External weights: the set in the container's active buffer, and the one
  // a swap left in its inactive buffer (Note [External weights]).
  runtime::ConstantSet active_set, inactive_set;
  bool external_weights = false;
  bool has_weights = true;  // false: loaded without_weights, none given since
  std::mutex weights_mutex;  // swaps, one at a time
  // Per container constant buffer, the handles the container made for the
  // set aotrt gave it (Note [Handles a container keeps]).
  std::set<AtenTensorHandle> buffer_handles[2];
  int active_buffer = 0;

  // Note [Bound state] in runtime/model_state.h: whose tensors the active
  // buffer holds for the state constants (0: the model's own), the model's own
  // (taken at the first binding), and the handles the container made for the
  // session bound now.
  bool state_known = true;  // the package says which constants are state
  uint64_t bound_state = 0;
  std::vector<runtime::ConstantMapEntry> own_state_entries;
  std::vector<Tensor> own_state;
  std::vector<AtenTensorHandle> state_made;
  uint64_t weights_version = 0;  // weight swaps so far

  // New handles to the tensors the buffer holds now, by the container's name.
  // The container lists them by original FQN: a constant whose FQN another
  // shares is left out (which one it is cannot be told).
  std::map<std::string, Tensor> current_constants(bool use_inactive) const {
    std::map<std::string, Tensor> by_fqn;
    auto add = [&](const char* fqn, AtenTensorHandle h) {
      if (fqn == nullptr || h == nullptr || !handle_is_live(h)) return;
      AtenTensorHandle fresh = nullptr;
      if (aoti_torch_new_tensor_handle(h, &fresh) == AOTI_TORCH_SUCCESS) {
        by_fqn.emplace(fqn, Tensor::adopt(fresh));
      }
    };
    if (api.extract_constants_map_entries != nullptr) {
      const runtime::ConstantMapEntry* entries = nullptr;
      size_t n = 0;
      AOTRT_CHECK(api.extract_constants_map_entries(container, &entries, &n, use_inactive) == 0,
                  kBackend, failure("AOTInductorModelContainerExtractConstantsMapEntries"));
      for (size_t e = 0; e < n; ++e) add(entries[e].name, entries[e].handle);
    } else {
      AOTRT_CHECK(api.extract_constants_map != nullptr, kUnsupported, "model '", info.model_name,
                  "' of ", info.package_path, ": the .so exports neither "
                  "AOTInductorModelContainerExtractConstantsMapEntries nor ExtractConstantsMap "
                  "(torch older than 2.6?), which sessions and shared weights need");
      std::unordered_map<std::string, AtenTensorHandle> map;
      AOTRT_CHECK(api.extract_constants_map(container, &map, use_inactive) == 0, kBackend,
                  failure("AOTInductorModelContainerExtractConstantsMap"));
      for (const auto& [name, h] : map) add(name.c_str(), h);
    }
    std::map<std::string, int> uses;
    for (const ConstantInfo& c : info.constants) {
      if (!c.from_folded) ++uses[c.original_fqn];
    }
    std::map<std::string, Tensor> out;
    for (const ConstantInfo& c : info.constants) {
      if (c.from_folded || uses[c.original_fqn] != 1) continue;
      const auto it = by_fqn.find(c.original_fqn);
      if (it != by_fqn.end()) out.emplace(c.name, it->second);
    }
    return out;
  }

  // Gives the container `entries` for its state constants (Note [Bound
  // state]). The caller holds run_mutex.
  void bind_state(uint64_t id, std::span<const runtime::ConstantMapEntry> entries) {
    if (id == bound_state) return;
    const char* fn = "aotrt::Session::run";
    if (bound_state == 0 && own_state_entries.empty()) {
      // The model's own tensors, before the first session replaces them.
      std::map<std::string, Tensor> current = current_constants(/*use_inactive=*/false);
      for (const ConstantInfo& c : info.constants) {
        if (!c.session_state) continue;
        auto it = current.find(c.name);
        AOTRT_CHECK(it != current.end(), kInternal, fn, ": model '", info.model_name,
                    "' holds no tensor for its state constant '", c.name, "'");
        own_state.push_back(it->second);
      }
      size_t k = 0;
      for (const ConstantInfo& c : info.constants) {
        if (c.session_state) own_state_entries.push_back({c.name.c_str(), own_state[k++].handle()});
      }
    }
    if (id == 0) entries = own_state_entries;
    AOTRT_CHECK(api.update_user_managed_pairs != nullptr || api.update_user_managed_map != nullptr,
                kUnsupported, fn, ": model '", info.model_name, "' of ", info.package_path,
                ": the .so exports no AOTInductorModelContainerUpdateUserManagedConstantBuffer "
                "(torch older than 2.7?), which sessions need");
    clear_last_error();
    HandleWatch watch;
    RuntimeError rc = 0;
    if (api.update_user_managed_pairs != nullptr) {
      rc = api.update_user_managed_pairs(container, entries.data(), entries.size(),
                                         /*use_inactive=*/false, /*validate_full_update=*/false);
    } else {
      std::unordered_map<std::string, AtenTensorHandle> map;
      for (const auto& e : entries) map.emplace(e.name, e.handle);
      rc = api.update_user_managed_map(container, &map, /*use_inactive=*/false,
                                       /*validate_full_update=*/false);
    }
    const std::set<AtenTensorHandle> gone(watch.deleted.begin(), watch.deleted.end());
    std::vector<AtenTensorHandle> made;
    for (AtenTensorHandle h : watch.made) {
      if (gone.count(h) == 0) made.push_back(h);
    }
    if (rc != 0) {
      buffer_handles[active_buffer].insert(made.begin(), made.end());  // deleted with the container
      bound_state = ~uint64_t{0};  // unknown: bind again next time
      AOTRT_FAIL(kBackend, failure("AOTInductorModelContainerUpdateUserManagedConstantBuffer"));
    }
    // Every state entry was replaced: the handles made for the previous
    // session are no longer the container's (Note [Handles a container keeps]).
    for (AtenTensorHandle h : state_made) {
      if (gone.count(h) == 0 && handle_is_live(h)) aoti_torch_delete_tensor_object(h);
    }
    state_made = std::move(made);
    bound_state = id;
  }

  std::vector<Tensor> run(std::span<const Tensor> inputs, const runtime::RunState* state);
};

namespace {


Device package_device(const std::string& key, int32_t device_index) {
  if (key == "cpu") return cpu_device();
  // preflight refused every other key and a CUDA package without CUDA.
  AOTRT_CHECK(key == "cuda", kInternal, "package device '", key, "' passed the checks");
  const int32_t index = device_index >= 0 ? device_index : cuda::current_device();
  return Device{DeviceType::CUDA, index};
}

void read_names(Model::Impl& m) {
  size_t n_in = 0, n_out = 0;
  AOTRT_CHECK(m.api.get_num_inputs(m.container, &n_in) == 0, kPackage,
              m.failure("AOTInductorModelContainerGetNumInputs"));
  AOTRT_CHECK(m.api.get_num_outputs(m.container, &n_out) == 0, kPackage,
              m.failure("AOTInductorModelContainerGetNumOutputs"));
  for (size_t i = 0; i < n_in; ++i) {
    const char* name = nullptr;
    if (m.api.get_input_name == nullptr || m.api.get_input_name(m.container, i, &name) != 0 ||
        name == nullptr) {
      name = nullptr;
    }
    m.info.input_names.push_back(name ? name : "input_" + std::to_string(i));
  }
  for (size_t i = 0; i < n_out; ++i) {
    const char* name = nullptr;
    if (m.api.get_output_name == nullptr || m.api.get_output_name(m.container, i, &name) != 0 ||
        name == nullptr) {
      name = nullptr;
    }
    m.info.output_names.push_back(name ? name : "output_" + std::to_string(i));
  }
  const char *in_spec = nullptr, *out_spec = nullptr;
  if (m.api.get_call_spec != nullptr && m.api.get_call_spec(m.container, &in_spec, &out_spec) == 0) {
    m.info.in_spec = in_spec ? in_spec : "";
    m.info.out_spec = out_spec ? out_spec : "";
  }
}

// "aotrt.inputs": a JSON list with, per input, {"dtype", "sizes", "strides",
// ...} for a tensor or {"python_type"} for a scalar. Advisory: an entry that
// does not parse is left out (the model's own input checks still apply).
// One spec of "aotrt.inputs" / "aotrt.outputs" (written by
// aotrt_tools.export); nullopt when the entry is not a tensor or is malformed.
std::optional<TensorSpec> parse_spec(const nlohmann::json& e, bool with_strides) {
  if (!e.is_object() || !e.contains("dtype") || !e.contains("sizes") ||
      !e["dtype"].is_string() || !e["sizes"].is_array()) {
    return std::nullopt;
  }
  if (with_strides && (!e.contains("strides") || !e["strides"].is_array() ||
                       e["sizes"].size() != e["strides"].size())) {
    return std::nullopt;
  }
  TensorSpec spec;
  bool ok = false;
  for (int32_t code = 0; code < 64; ++code) {
    if (is_valid_dtype(code) &&
        e["dtype"].get<std::string>() == dtype_name(static_cast<ScalarType>(code))) {
      spec.dtype = static_cast<ScalarType>(code);
      ok = true;
    }
  }
  auto read_ints = [&ok](const nlohmann::json& values, std::vector<int64_t>& into) {
    for (const auto& v : values) {
      ok = ok && v.is_number_integer() && v.get<int64_t>() >= 0;
      if (ok) into.push_back(v.get<int64_t>());
    }
  };
  read_ints(e["sizes"], spec.sizes);
  if (with_strides) read_ints(e["strides"], spec.strides);
  if (e.contains("dynamic_dims")) {
    ok = ok && e["dynamic_dims"].is_array();
    for (const auto& d : ok ? e["dynamic_dims"] : nlohmann::json::array()) {
      ok = ok && d.is_object() && d.contains("dim") && d["dim"].is_number_integer() &&
           d["dim"].get<int64_t>() >= 0 &&
           d["dim"].get<int64_t>() < static_cast<int64_t>(spec.sizes.size());
      if (!ok) break;
      DynamicDim dim{d["dim"].get<int64_t>(), 0, -1};
      if (d.contains("min") && d["min"].is_number_integer()) dim.min = d["min"].get<int64_t>();
      if (d.contains("max") && d["max"].is_number_integer()) dim.max = d["max"].get<int64_t>();
      spec.dynamic_dims.push_back(dim);
    }
  }
  if (!ok) return std::nullopt;
  return spec;
}

// Per tensor, the spec a metadata entry records; empty when it records none.
std::vector<std::optional<TensorSpec>> read_specs(const Model::Impl& m, const char* key, size_t n,
                                                  bool with_strides) {
  const auto it = m.info.metadata.find(key);
  if (it == m.info.metadata.end()) return {};
  const auto json = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_array()) return {};
  std::vector<std::optional<TensorSpec>> specs(n);
  for (size_t i = 0; i < n && i < json.size(); ++i) specs[i] = parse_spec(json[i], with_strides);
  return specs;
}

void read_tensor_specs(Model::Impl& m) {
  m.info.input_specs = read_specs(m, "aotrt.inputs", m.info.input_names.size(), true);
  m.info.output_specs = read_specs(m, "aotrt.outputs", m.info.output_names.size(), false);
}

// What the model's own input checks say (Note [Reading the wrapper source]):
// the dtype of each input, and its whole layout where every stride is fixed
// and every size is fixed or a checked range (a dynamic dim, whose least size
// stands for the example), for the inputs "aotrt.inputs" did not describe.
void read_input_checks(Model::Impl& m, const package::WrapperSource& source) {
  const size_t n = m.info.input_names.size();
  const bool recorded = !m.info.input_specs.empty();  // "aotrt.inputs" was read
  m.info.input_specs.resize(n);
  m.info.input_dtypes.assign(n, std::nullopt);
  m.info.input_ranks.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (m.info.input_specs[i]) {
      m.info.input_dtypes[i] = m.info.input_specs[i]->dtype;
      m.info.input_ranks[i] = static_cast<int64_t>(m.info.input_specs[i]->sizes.size());
      continue;
    }
    if (i >= source.inputs.size()) continue;
    const package::WrapperInput& w = source.inputs[i];
    if (!w.sizes.empty()) m.info.input_ranks[i] = static_cast<int64_t>(w.sizes.size());
    ScalarType dtype{};
    if (!dtype_from_name(w.dtype, &dtype)) continue;
    m.info.input_dtypes[i] = dtype;
    if (w.sizes.size() != w.strides.size()) continue;
    TensorSpec spec;
    spec.dtype = dtype;
    bool known = true;
    for (size_t d = 0; known && d < w.sizes.size(); ++d) {
      const bool dynamic = !w.sizes[d].has_value();
      const bool has_least = d < w.min_sizes.size() && w.min_sizes[d].has_value();
      const bool has_most = d < w.max_sizes.size() && w.max_sizes[d].has_value();
      known = w.strides[d].has_value() && (!dynamic || has_least);
      if (!known) break;
      spec.sizes.push_back(dynamic ? *w.min_sizes[d] : *w.sizes[d]);
      spec.strides.push_back(*w.strides[d]);
      if (dynamic) {
        spec.dynamic_dims.push_back(
            {static_cast<int64_t>(d), *w.min_sizes[d], has_most ? *w.max_sizes[d] : int64_t{-1}});
      }
    }
    if (known) m.info.input_specs[i] = std::move(spec);
  }
  const bool any = std::any_of(m.info.input_specs.begin(), m.info.input_specs.end(),
                               [](const auto& spec) { return spec.has_value(); });
  if (!any && !recorded) m.info.input_specs.clear();
}

// Prints a package's export advice on stderr the first time this process
// loads it (Note [CPU export advice]): always, not only under AOTRT_VERBOSE,
// since the user it is for has not read about the options either; once, so
// that a server's instances and a test's reloads say it one time.
void report_export_advice(const ModelInfo& info) {
  if (info.export_advice.empty()) return;
  static std::mutex mutex;
  static std::set<std::string> reported;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!reported.insert(info.package_path + '\n' + info.model_name).second) return;
  }
  std::string text;
  for (const std::string& advice : info.export_advice) {
    text += "aotrt: note: " + info.package_path + ": " + advice + "\n";
  }
  std::fputs(text.c_str(), stderr);
}

// Constants the container reports; the names, dtypes and sizes are optional
// entries, so a model without them lists none.
void read_constants(Model::Impl& m, const package::WrapperSource& source) {
  const ContainerApi& api = m.api;
  size_t n = 0;
  if (api.get_num_constants == nullptr || api.get_num_constants(m.container, &n) != 0) return;
  for (size_t i = 0; i < n; ++i) {
    ConstantInfo c;
    const char* s = nullptr;
    if (api.get_constant_name && api.get_constant_name(m.container, i, &s) == 0 && s) c.name = s;
    s = nullptr;
    if (api.get_constant_original_fqn &&
        api.get_constant_original_fqn(m.container, i, &s) == 0 && s) {
      c.original_fqn = s;
    }
    int32_t dtype = 0;
    if (api.get_constant_dtype && api.get_constant_dtype(m.container, i, &dtype) == 0 &&
        is_valid_dtype(dtype)) {
      c.dtype = static_cast<ScalarType>(dtype);
    }
    size_t nbytes = 0;
    if (api.get_constant_data_size && api.get_constant_data_size(m.container, i, &nbytes) == 0) {
      c.nbytes = nbytes;
    }
    bool folded = false;
    if (api.get_constant_from_folded &&
        api.get_constant_from_folded(m.container, i, &folded) == 0) {
      c.from_folded = folded;
    }
    // constants_info_[i] is the container's constant i; the name must agree.
    const package::WrapperConstant* w =
        i < source.constants.size() && source.constants[i].name == c.name ? &source.constants[i]
                                                                          : nullptr;
    if (w != nullptr && w->has_layout) {
      c.layout_known = true;
      c.sizes = w->sizes;
      c.strides = w->strides;
      c.storage_offset = w->storage_offset;
    }
    int32_t type = 0;
    if (api.get_constant_type == nullptr || api.get_constant_type(m.container, i, &type) != 0) {
      type = w != nullptr ? w->type : 0;
    }
    static constexpr const char* kTypes[] = {"", "parameter", "buffer", "tensor_constant", "folded"};
    c.type = type >= 0 && type <= 4 ? kTypes[type] : "";
    // Note [Session state] in runtime/model_state.h.
    if (!c.from_folded) {
      const bool buffer = type == 2;
      if (source.access_known && w != nullptr) {
        using package::ConstantAccess;
        c.session_state = w->access == ConstantAccess::kWritten ||
                          (buffer && w->access == ConstantAccess::kMaybeWritten);
      } else {
        c.session_state = buffer;
      }
    }
    m.state_known = m.state_known && (type != 0 || (source.access_known && w != nullptr));
    m.info.constants.push_back(std::move(c));
  }
}

// Whether the .so holds every non-folded constant's bytes itself: linked
// between _binary_constants_bin_start and _end (AOTInductor's layout; a .so
// exported for an external blob has only its 8-byte size there), or
// appended to it (Note [Weights appended to the .so]).
bool weights_in_so(const Model::Impl& m, const runtime::OpenedPackage& pkg) {
  uint64_t needed = 0;
  for (const ConstantInfo& c : m.info.constants) {
    if (!c.from_folded) needed += c.nbytes;
  }
  if (needed == 0 || pkg.appended) return true;
  if (pkg.elf.embedded_constants_bytes) return *pkg.elf.embedded_constants_bytes >= needed;
  // Stripped .so: only a model built for an external blob answers this.
  uint64_t declared = 0;
  return m.api.get_constants_blob_size == nullptr ||
         m.api.get_constants_blob_size(m.container, &declared) != 0;
}

// Loads the weights blob, or checks that the .so holds its weights itself.
// See Note [Weights blob lifetime].
// Returns false for a package that holds none when `allow_none`.
bool load_weights(Model::Impl& m, const runtime::OpenedPackage& pkg, bool allow_none) {
  uint64_t needed = 0;  // bytes the blob must hold: every non-folded constant
  for (const ConstantInfo& c : m.info.constants) {
    if (!c.from_folded) needed += c.nbytes;
  }
  const std::string& path = m.info.package_path;
  if (pkg.layout.weights_blob) {
    const package::ZipEntry& entry = *pkg.layout.weights_blob;
    const uint64_t size = entry.size;
    AOTRT_CHECK(size >= needed, kPackage, "package ", path, ": weights blob ", entry.name,
                " has ", size, " bytes but the model's constants take ", needed);
    uint64_t declared = 0;
    // A .so that takes an external blob knows its size: a shorter blob
    // would be read past its end, and one of another size is not the blob
    // it was exported with (its constants would be misread).
    if (m.api.get_constants_blob_size != nullptr &&
        m.api.get_constants_blob_size(m.container, &declared) == 0) {
      AOTRT_CHECK(size == declared, kPackage, "package ", path, ": weights blob ", entry.name,
                  " has ", size, " bytes but the model .so was exported with a ", declared,
                  "-byte blob (", size < declared ? "truncated" : "padded, or from another export",
                  ")");
    }
    AOTRT_CHECK(m.api.update_constants_from_blob != nullptr, kPackage, "package ", path,
                ": the model .so does not export ", runtime::kUpdateConstantsFromBlob);
    // Mapped from the archive when stored, else read into memory (checked
    // against its CRC either way), copied by the model, let go: see the Note.
    alignas(64) static const uint8_t kEmpty[64] = {};
    std::unique_ptr<uint8_t[]> read;
    std::unique_ptr<runtime::MappedFile> mapped;
    if (const std::optional<uint64_t> offset = pkg.archive.stored_data_offset(entry)) {
      pkg.archive.check_crc(entry);
      mapped = std::make_unique<runtime::MappedFile>(path, *offset, size);
    } else {
      read = pkg.archive.read_bytes(entry);
    }
    const uint8_t* blob = mapped ? mapped->data() : read.get();
    clear_last_error();
    runtime::LoadingWeights loading([&mapped] {  // Note [Weights pages during load]
      if (mapped) mapped->drop_pages();
    });
    AOTRT_CHECK(m.api.update_constants_from_blob(m.container, size > 0 ? blob : kEmpty) == 0,
                kPackage, m.failure(runtime::kUpdateConstantsFromBlob));
    return true;
  }
  if (needed == 0) return true;
  const bool in_so = weights_in_so(m, pkg);
  if (!in_so && allow_none) return false;
  AOTRT_CHECK(in_so, kPackage, "package ", path, ": model '", m.info.model_name,
              "' needs a weights blob (", needed, " bytes of constants, exported with "
              "package_constants_in_so=False) but the package has no *_weights.blob in ",
              pkg.layout.model_dir, "; give the weights as a safetensors file (aotrt run "
              "--weights FILE, LoadOptions::weights), by the names `aotrt info` lists");
  return true;
}

}  // namespace

const DynamicDim* TensorSpec::dynamic(size_t dim) const {
  for (const DynamicDim& d : dynamic_dims) {
    if (d.dim == static_cast<int64_t>(dim)) return &d;
  }
  return nullptr;
}

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

const ModelInfo& Model::info() const {
  AOTRT_CHECK(impl_ != nullptr, kInvalidArgument, "aotrt::Model: used after it was moved from");
  return impl_->info;
}

Model::CudaGraphStatus Model::cuda_graph_status() const {
  AOTRT_CHECK(impl_ != nullptr, kInvalidArgument, "aotrt::Model: used after it was moved from");
  std::lock_guard<std::mutex> lock(impl_->run_mutex);  // after the run in progress
  if (impl_->graph != nullptr) return impl_->graph->status();
  CudaGraphStatus status;
  status.mode = impl_->graph_mode;
  status.declined = impl_->graph_unavailable;
  return status;
}

const char* cuda_graph_mode_name(CudaGraphMode mode) {
  switch (mode) {
    case CudaGraphMode::kOff: return "off";
    case CudaGraphMode::kAuto: return "auto";
    case CudaGraphMode::kOn: return "on";
  }
  return "?";
}

Model Model::load(const std::string& package_path, const LoadOptions& options) {
  runtime::OpenedPackage pkg = runtime::open_package(package_path, options.model_name,
                                                     options.weights.has_value());
  if (!pkg.problems.empty()) AOTRT_FAIL(kPackage, runtime::describe_problems(pkg));

  // From here the Impl owns the folder: every failure below unloads what
  // was loaded and removes it.
  auto m = std::make_unique<Impl>(std::move(pkg.dir));
  m->info.package_path = package_path;
  m->info.model_name = pkg.layout.model_name;
  m->info.so_name = pkg.layout.so.name;
  m->info.metadata = pkg.metadata.values;
  m->info.device = package_device(pkg.metadata.device_key, options.device_index);
  if (!pkg.extern_nodes.empty()) {
    m->proxy = std::make_unique<runtime::ProxyExecutor>(
        std::move(pkg.extern_nodes), pkg.metadata.device_key, "package " + package_path);
  }
  for (const package::ZipEntry& e : pkg.layout.kernel_binaries) {
    pkg.archive.extract(e, m->dir.path() + "/" + package::base_name(e.name));
  }

  {  // Notes [Model symbol binding], [The ABI face]
    std::vector<std::string> imports;
    for (const ShimSymbol& s : pkg.shim_symbols) imports.push_back(s.name);
    runtime::expose_to_models(imports);
  }
  if (m->info.device.is_cuda()) cuda::expose_runtime_symbols();
  // Notes [Unique symbols and dlclose], [Thread-local destructors and
  // dlclose], [Model input checks].
  const bool appended = pkg.appended && !pkg.appended->extracted;
  // AOTRT_EXTRACT_APPENDED_WEIGHTS=1: extract them as torch would (to measure
  // against, and to test that path; Note [Weights appended to the .so]).
  const char* extract_env = std::getenv("AOTRT_EXTRACT_APPENDED_WEIGHTS");
  const bool in_place = extract_env == nullptr || std::strcmp(extract_env, "1") != 0;
  const package::ElfPatchResult patched = package::patch_for_dlclose_in_file(
      pkg.so_path, /*kernel_modules=*/cuda::built(), /*input_checks=*/options.check_inputs,
      /*appended_weights=*/appended && in_place, appended ? pkg.appended->weights_offset : 0);
  if (appended) {
    // Note [Weights appended to the .so]: checked here, since libzip did not read them.
    pkg.archive.check_crc(pkg.layout.so);
    if (!in_place) {
      runtime::extract_appended_weights(pkg);
    } else if (patched.mmap_redirected) {
      m->appended = std::make_unique<runtime::AppendedWeights>(
          pkg.so_path, package_path, pkg.appended->data_offset, pkg.appended->weights_offset,
          pkg.layout.so.size);
    } else {
      std::fprintf(stderr,
                   "aotrt: warning: %s: the model's mmap import shares bytes with another name, so "
                   "aotrt cannot serve its appended weights from the package in place; extracting "
                   "the whole %llu-byte .so instead\n",
                   package_path.c_str(), static_cast<unsigned long long>(pkg.layout.so.size));
      runtime::extract_appended_weights(pkg);
    }
  }
  if (patched.getenv_shared && std::getenv("AOTI_RUNTIME_CHECK_INPUTS") == nullptr) {
    std::fprintf(stderr,
                 "aotrt: warning: %s: the model's own input checks stay off (its getenv import "
                 "shares bytes with another name, so aotrt cannot answer "
                 "AOTI_RUNTIME_CHECK_INPUTS for it); set AOTI_RUNTIME_CHECK_INPUTS=1 in the "
                 "process to turn them on\n",
                 package_path.c_str());
  }
  m->so = ::dlopen(pkg.so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (m->so == nullptr) {
    const char* err = ::dlerror();
    const std::string text = err ? err : "dlopen failed";
    // The aoti_* imports were checked above; other imports (Sleef_*, GOMP_*,
    // libc) come from the ABI face's dependencies, aotrt's own where a program
    // links it, or the .so's DT_NEEDED (Note [The ABI face]).
    const char* hint = text.find("undefined symbol") != std::string::npos
                           ? " (an import that neither aotrt nor the libraries the .so needs define)"
                           : "";
    AOTRT_FAIL(kPackage, "cannot load the model .so of ", package_path, ": ", text, hint);
  }
  m->api = runtime::resolve_container_api(m->so, package_path + ": " + pkg.layout.so.name);

  const std::string device = m->info.device.is_cpu() ? "cpu" : m->info.device.str();
  clear_last_error();
  const std::string cubin_dir = m->dir.path();
  {
    // Note [Weights pages during load]: the appended weights are read here.
    runtime::AppendedWeights* mapped = m->appended.get();
    runtime::LoadingWeights loading([mapped] {
      if (mapped != nullptr) mapped->drop_pages();
    });
    if (m->api.create_with_device(&m->container, 1, device.c_str(), cubin_dir.c_str()) != 0 ||
        m->container == nullptr) {
      m->container = nullptr;
      AOTRT_FAIL(kPackage, m->failure("AOTInductorModelContainerCreateWithDevice"));
    }
  }
  // The sparse file reads as zeros: a model that took its weights from it
  // and not through aomm would run on them.
  AOTRT_CHECK(m->appended == nullptr || m->appended->mappings() > 0 ||
                  pkg.elf.appended_weights->size <= 8,
              kPackage, "model '", m->info.model_name, "' of ", package_path,
              ": its .so did not map its appended weights through aotrt (a torch whose generated "
              "code reads them another way?); refusing to run it on zeros");
  // The generated source says what the container API does not: constants'
  // and inputs' layouts (Note [Reading the wrapper source]).
  package::WrapperSource source;
  if (pkg.layout.wrapper_source && pkg.layout.wrapper_source->size <= runtime::kMaxWrapperSourceBytes) {
    source = package::parse_wrapper_source(
        pkg.archive.read(*pkg.layout.wrapper_source, runtime::kMaxWrapperSourceBytes));
  }
  read_names(*m);
  read_tensor_specs(*m);
  read_input_checks(*m, source);
  read_constants(*m, source);
  if (options.weights) {
    m->active_set = runtime::prepare_constants(m->info, *options.weights, nullptr, "aotrt::Model::load");
    if (m->info.device.is_cuda()) synchronize(m->info.device);  // the uploads are done
    m->give_constants(m->active_set, /*use_inactive=*/false, "aotrt::Model::load");
    m->external_weights = true;
    m->info.weights_source = m->active_set.source;
  } else if (pkg.layout.has_pickle_weights && !pkg.layout.weights_blob &&
             !weights_in_so(*m, pkg) && !options.without_weights) {
    // The package keeps its weights only as pickle_weights: given as external ones.
    const Weights pickled = runtime::read_pickle_weights(pkg, m->info);
    m->active_set = runtime::prepare_constants(m->info, pickled, nullptr, "aotrt::Model::load");
    if (m->info.device.is_cuda()) synchronize(m->info.device);  // the uploads are done
    m->give_constants(m->active_set, /*use_inactive=*/false, "aotrt::Model::load");
    m->external_weights = true;
    m->info.weights_source = "package (pickle_weights)";
  } else {
    m->has_weights = load_weights(*m, pkg, options.without_weights);
    m->info.weights_source = m->has_weights ? "package" : "none";
  }
  m->mark_constants();
  const std::string what = "model '" + m->info.model_name + "' of " + package_path;
  if (options.cuda_graph == CudaGraphMode::kOn) {
    AOTRT_CHECK(m->info.device.is_cuda(), kInvalidArgument, "aotrt::Model::load: ", what,
                " runs on ", m->info.device.str(), "; LoadOptions::cuda_graph is for CUDA models");
    AOTRT_CHECK(m->api.run_single_threaded != nullptr, kUnsupported, "aotrt::Model::load: ", what,
                ": the .so does not export AOTInductorModelContainerRunSingleThreaded (torch "
                "older than 2.6?), which CUDA graph mode needs; load it without cuda_graph");
  }
  if (m->info.device.is_cuda() && options.cuda_graph != CudaGraphMode::kOff) {
    m->graph_mode = options.cuda_graph;
    if (m->api.run_single_threaded == nullptr) {
      m->graph_unavailable = what + ": the .so does not export "
                             "AOTInductorModelContainerRunSingleThreaded (torch older than 2.6?), "
                             "which CUDA graph mode needs";
    } else {
      m->graph = std::make_unique<runtime::CudaGraphs>(options.cuda_graph, m->info.device, what,
                                                       m->info.input_names,
                                                       m->info.output_names.size());
    }
  }
  m->info.export_advice = std::move(pkg.export_advice);
  if (options.report_export_advice) report_export_advice(m->info);
  return Model(std::move(m));
}

namespace {

// Strides of `format` for these sizes (ATen's channels_last: N, H, W, C
// order; channels_last_3d: N, D, H, W, C).
std::vector<int64_t> format_strides(MemoryFormat format, const std::vector<int64_t>& sizes,
                                    const std::string& what) {
  if (format == MemoryFormat::Contiguous) return contiguous_strides(sizes);
  const size_t want = format == MemoryFormat::ChannelsLast ? 4 : 5;
  AOTRT_CHECK(sizes.size() == want, kInvalidArgument, what, " has ", sizes.size(),
              " dims; ", format == MemoryFormat::ChannelsLast ? "channels_last" : "channels_last_3d",
              " is a layout of ", want, "-dim tensors");
  return channels_last_strides(sizes);  // checked: an overflow is refused
}

// Whether a value of `have` is converted to `want` without being asked: a
// float32 array for a narrower floating input (numpy has no bfloat16).
bool converts_unasked(ScalarType have, ScalarType want) {
  return have == ScalarType::Float32 && is_floating(want) && element_size(want) < 4;
}

}  // namespace

Tensor Model::prepare_input(size_t index, const Tensor& value, const InputHint& hint) const {
  const char* fn = "aotrt::Model::prepare_input";
  const ModelInfo& mi = info();
  AOTRT_CHECK(index < mi.input_names.size(), kInvalidArgument, fn, ": input ", index,
              " of a model with ", mi.input_names.size(), " inputs");
  const std::string what = std::string(fn) + ": input " + std::to_string(index) + " ('" +
                           mi.input_names[index] + "')";
  const std::vector<int64_t> sizes(value.sizes().begin(), value.sizes().end());

  // The dtype: the model's when known (a hint must agree), else the hint's.
  const bool known = index < mi.input_dtypes.size() && mi.input_dtypes[index].has_value();
  const ScalarType expected = known ? *mi.input_dtypes[index] : value.dtype();
  ScalarType dtype = value.dtype();
  if (known && hint.dtype && *hint.dtype != expected) {
    AOTRT_FAIL(kInvalidArgument, what, ": given as ", dtype_name(*hint.dtype),
               " but the model expects ", dtype_name(expected));
  }
  if (known && expected != dtype) {
    AOTRT_CHECK(hint.dtype || converts_unasked(dtype, expected), kInvalidArgument, what, " is ",
                dtype_name(dtype), " but the model expects ", dtype_name(expected),
                "; convert it, or ask for the conversion (InputHint::dtype, aotrt's --input FILE:",
                dtype_name(expected), ")");
    dtype = expected;
  } else if (!known && hint.dtype) {
    dtype = *hint.dtype;
  }

  // The layout: the recorded one, else the hint's, else row-major.
  std::vector<int64_t> strides = contiguous_strides(sizes);
  const std::optional<TensorSpec>* spec =
      index < mi.input_specs.size() ? &mi.input_specs[index] : nullptr;
  const bool recorded = spec != nullptr && spec->has_value() && (*spec)->sizes.size() == sizes.size();
  if (recorded) {
    strides = runtime::spec_strides(**spec, sizes, fn);  // other sizes: the exported order, dense
    if (hint.layout) {
      const std::vector<int64_t> asked = format_strides(*hint.layout, sizes, what);
      AOTRT_CHECK(runtime::same_layout(sizes, asked, strides), kInvalidArgument, what,
                  ": the layout asked for (strides ", runtime::describe_layout(dtype, sizes, asked),
                  ") is not the one the model was exported with (",
                  runtime::describe_layout(dtype, sizes, strides), ")");
    }
  } else if (hint.layout) {
    strides = format_strides(*hint.layout, sizes, what);
  }
  const bool same = value.device() == mi.device && value.dtype() == dtype &&
                    std::equal(strides.begin(), strides.end(), value.strides().begin(),
                               value.strides().end());
  if (same) return value;
  Tensor laid = Tensor::empty_strided(sizes, strides, dtype, mi.device);
  laid.copy_(value);
  return laid;
}

void Model::swap_weights(const Weights& weights) {
  AOTRT_CHECK(impl_ != nullptr, kInvalidArgument, "aotrt::Model::swap_weights: used after move");
  impl_->swap(weights, /*partial=*/false, "aotrt::Model::swap_weights");
}

void Model::update_weights(const Weights& weights) {
  AOTRT_CHECK(impl_ != nullptr, kInvalidArgument, "aotrt::Model::update_weights: used after move");
  impl_->swap(weights, /*partial=*/true, "aotrt::Model::update_weights");
}

std::vector<Tensor> Model::run(std::span<const Tensor> inputs) {
  AOTRT_CHECK(impl_ != nullptr, kInvalidArgument, "aotrt::Model::run: used after move");
  return impl_->run(inputs, nullptr);
}

std::vector<Tensor> Model::Impl::run(std::span<const Tensor> inputs,
                                     const runtime::RunState* state) {
  Impl& m = *this;
  const char* fn = state != nullptr ? "aotrt::Session::run" : "aotrt::Model::run";
  const size_t n_in = m.info.input_names.size(), n_out = m.info.output_names.size();
  AOTRT_CHECK(inputs.size() == n_in, kInvalidArgument, fn, ": model '", m.info.model_name,
              "' takes ", n_in, " input(s), got ", inputs.size());

  // Fresh handles for the model to steal; the caller's stay theirs. Run
  // nulls each slot it steals (steal_from_raw_handles_to_raii_handles), so
  // whatever is still in `in` afterwards, or when anything throws before, is
  // ours to delete: e.g. when the model's input checks refuse an input
  // before stealing it.
  // Per-thread scratch: a run is never re-entered on its thread.
  thread_local std::vector<AtenTensorHandle> t_in, t_out;
  std::vector<AtenTensorHandle>& in = t_in;
  in.clear();
  struct Unstolen {
    std::vector<AtenTensorHandle>& handles;
    ~Unstolen() {
      for (AtenTensorHandle h : handles) {
        if (h != nullptr) aoti_torch_delete_tensor_object(h);
      }
    }
  } unstolen{in};
  in.reserve(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    AOTRT_CHECK(inputs[i].handle() != nullptr, kInvalidArgument, fn, ": input ", i, " ('",
                m.info.input_names[i], "') is an empty Tensor");
    const TensorImpl& t = handle_get_defined(inputs[i].handle(), fn);
    AOTRT_CHECK(t.device() == m.info.device, kInvalidArgument, fn, ": input ", i, " ('",
                m.info.input_names[i], "') is on ", t.device().str(), " but the model runs on ",
                m.info.device.str(), "; copy it there with Tensor::to()");
    // With a recorded layout, refuse a mismatch here (Note [Input layout rule]).
    const std::optional<TensorSpec>* spec =
        i < m.info.input_specs.size() ? &m.info.input_specs[i] : nullptr;
    const std::vector<int64_t> strides =
        spec != nullptr && spec->has_value()
            ? runtime::check_input_layout(**spec, t, i, m.info.input_names[i], fn)
            : std::vector<int64_t>(t.strides().begin(), t.strides().end());
    in.push_back(handle_register(
        make_tensor(t.storage(), t.sizes(), strides, t.storage_offset(), t.dtype(), fn)));
  }

  std::vector<AtenTensorHandle>& out = t_out;
  out.assign(n_out, nullptr);
  void* stream = m.info.device.is_cuda() ? cuda::current_stream(m.info.device.index) : nullptr;
  std::lock_guard<std::mutex> lock(m.run_mutex);
  AOTRT_CHECK(m.has_weights, kInvalidArgument, fn, ": model '", m.info.model_name, "' of ",
              m.info.package_path, " was loaded without weights (LoadOptions::without_weights); "
              "give them with swap_weights first");
  // Note [Bound state]: a session's graphs, else the model's own.
  runtime::CudaGraphs* graphs = state != nullptr ? state->graphs : m.graph.get();
  const uint64_t state_id = state != nullptr ? state->id : 0;
  const std::span<const runtime::ConstantMapEntry> state_entries =
      state != nullptr ? state->entries : std::span<const runtime::ConstantMapEntry>{};
  if (graphs != nullptr) {
    std::optional<std::vector<Tensor>> replayed = graphs->run(
        in,
        [&](AtenTensorHandle* gin, size_t gn_in, AtenTensorHandle* gout, size_t gn_out,
            void* gstream) {
          m.bind_state(state_id, state_entries);
          clear_last_error();
          if (m.call_container(gin, gn_in, gout, gn_out, gstream) != 0) {
            AOTRT_FAIL(kBackend, runtime::name_inputs_in_model_message(m.failure(m.run_entry()),
                                                                       m.info.input_names));
          }
        },
        state != nullptr ? state->guard : nullptr);
    if (replayed) return std::move(*replayed);
    graphs->count_plain_run();  // Note [Automatic CUDA graphs]: this one runs plainly
  }
  m.bind_state(state_id, state_entries);
  clear_last_error();
  const runtime::RuntimeError rc = m.call_container(in.data(), in.size(), out.data(), out.size(),
                                                    stream);
  if (rc != 0) {
    // The model's own input checks name inputs by position; say which one.
    const std::string text = m.failure(m.run_entry());
    const std::string named = runtime::name_inputs_in_model_message(text, m.info.input_names);
    if (named != text) AOTRT_FAIL(kInvalidArgument, named, " (refused by the model's own input checks)");
    AOTRT_FAIL(kBackend, text);
  }

  // Each distinct handle is adopted once; a slot that repeats an earlier
  // one gets its own handle to the same view.
  // (A linear scan: models have few outputs, and it allocates nothing.)
  std::vector<Tensor> result(n_out);
  for (size_t i = 0; i < n_out; ++i) {
    if (out[i] == nullptr) continue;
    size_t first = 0;
    while (out[first] != out[i]) ++first;
    result[i] = first == i ? Tensor::adopt(out[i]) : result[first];
  }

  // Outputs must outlive the model: memory that is neither aotrt's nor an
  // input's (a view of a constant inside the model) is copied, one copy per
  // storage, so outputs that shared memory still do.
  auto from_input = [&](const Storage* s) {
    return std::any_of(inputs.begin(), inputs.end(), [&](const Tensor& x) {
      return handle_get_defined(x.handle(), fn).storage().get() == s;
    });
  };
  std::vector<std::pair<const Storage*, StorageRef>> copies;
  for (Tensor& r : result) {
    if (!r.defined()) continue;
    const TensorImpl& t = handle_get_defined(r.handle(), fn);
    const Storage* s = t.storage().get();
    if (s->owns_memory() || from_input(s)) continue;
    auto it = std::find_if(copies.begin(), copies.end(),
                           [&](const auto& c) { return c.first == s; });
    if (it == copies.end()) {
      const auto nbytes = static_cast<int64_t>(s->nbytes());
      StorageRef fresh = Storage::allocate(s->device(), s->nbytes());
      const int64_t bytes_size[] = {nbytes}, unit_stride[] = {1};
      auto dst = make_tensor(fresh, bytes_size, unit_stride, 0, ScalarType::UInt8, fn);
      auto src = make_tensor(t.storage(), bytes_size, unit_stride, 0, ScalarType::UInt8, fn);
      copy_tensor(*dst, *src, fn);
      copies.emplace_back(s, std::move(fresh));
      it = copies.end() - 1;
    }
    r = Tensor::adopt(handle_register(
        make_tensor(it->second, t.sizes(), t.strides(), t.storage_offset(), t.dtype(), fn)));
  }
  return result;
}

// --- runtime::ModelAccess (runtime/model_state.h) ----------------------------------------

namespace runtime {

std::vector<const ConstantInfo*> ModelAccess::state(const Model& m) {
  std::vector<const ConstantInfo*> out;
  for (const ConstantInfo& c : m.info().constants) {
    if (c.session_state) out.push_back(&c);
  }
  return out;
}

bool ModelAccess::state_known(const Model& m) {
  m.info();  // checks for a moved-from Model
  return m.impl_->state_known;
}

std::vector<Tensor> ModelAccess::run(Model& m, std::span<const Tensor> inputs,
                                     const RunState& state) {
  AOTRT_CHECK(m.impl_ != nullptr, kInvalidArgument, "aotrt::Session::run: the model was moved from");
  AOTRT_CHECK(state.id != 0, kInternal, "aotrt::Session::run: a session's state id is 0");
  return m.impl_->run(inputs, &state);
}

std::map<std::string, Tensor> ModelAccess::constants(const Model& m) {
  m.info();
  Model::Impl& impl = *m.impl_;
  std::lock_guard<std::mutex> lock(impl.run_mutex);
  // The model's own state, not a session's that happens to be bound.
  std::map<std::string, Tensor> out = impl.current_constants(/*use_inactive=*/false);
  if (impl.bound_state != 0) {
    size_t k = 0;
    for (const ConstantInfo& c : impl.info.constants) {
      if (c.session_state) out[c.name] = impl.own_state[k++];
    }
  }
  return out;
}

uint64_t ModelAccess::share_constants(Model& m, const std::map<std::string, Tensor>& shared) {
  const char* fn = "aotrt::Program::load";
  m.info();
  Model::Impl& impl = *m.impl_;
  const std::map<std::string, Tensor> own = constants(m);
  Weights w;
  w.source = "constants shared with another graph of " + impl.info.package_path;
  uint64_t shared_bytes = 0;
  for (const ConstantInfo& c : impl.info.constants) {
    if (c.from_folded) continue;
    const auto mine = own.find(c.name);
    if (mine == own.end()) return 0;  // its FQN is ambiguous: the graph keeps its own
    const TensorImpl& t = handle_get_defined(mine->second.handle(), fn);
    // A constant made from another (a oneDNN-blocked weight read in place,
    // Note [Deferred storages]) is not copied here: the graph keeps its own.
    if (t.storage()->source() != nullptr) return 0;
    const std::string key = c.original_fqn.empty() ? c.name : c.original_fqn;
    const auto other = c.original_fqn.empty() ? shared.end() : shared.find(c.original_fqn);
    if (other != shared.end()) {
      const TensorImpl& o = handle_get_defined(other->second.handle(), fn);
      if (o.dtype() == t.dtype() && o.device() == t.device() &&
          std::ranges::equal(o.sizes(), t.sizes()) && std::ranges::equal(o.strides(), t.strides()) &&
          o.storage_offset() == t.storage_offset()) {
        w.tensors.emplace(key, other->second);
        shared_bytes += c.nbytes;
        continue;
      }
    }
    // Not shared: a copy of the whole storage span the model may address,
    // since the memory the model loaded it into is freed below.
    const ViewSpan span = view_span(t.sizes(), t.strides(), t.storage_offset(),
                                    element_size(t.dtype()), fn);
    const auto bytes = std::max<uint64_t>(c.nbytes, static_cast<uint64_t>(span.end_byte));
    Tensor copy = Tensor::adopt(handle_register(make_tensor(
        Storage::allocate(t.device(), bytes), t.sizes(), t.strides(), t.storage_offset(),
        t.dtype(), fn)));
    copy.copy_(mine->second);
    w.tensors.emplace(key, std::move(copy));
  }
  if (shared_bytes == 0) return 0;
  // Note [Shared constants end in the first buffer]
  // The set goes to the inactive buffer and becomes the active one, and the
  // buffer that held the package's own copy is freed. Then the set goes back
  // into that first buffer, which is made active again, and the second is
  // freed in turn, so that the container ends as it began, running from its
  // first buffer. The round trip is needed because of torch 2.11's container
  // (model_container.h, built into every .so it exports): its
  // run_single_threaded checks the first buffer's fold state whichever
  // buffer is active, and freeing a buffer sets that state to NONE. After a
  // single swap and free, every run after the first (which folds the active
  // buffer) threw "Unknown constant state: ConstantState::NONE"; on the H200
  // this was the second prompt through a generation package's prefill graph.
  // torch 2.13 keeps the state per buffer; the round trip is harmless there.
  for (int round = 0; round < 2; ++round) {
    impl.swap(w, /*partial=*/false, fn);
    // The buffer the set has just left (the package's copy, the first time)
    // is the inactive one now; nothing reads it.
    if (impl.api.free_inactive_constant_buffer != nullptr) {
      std::lock_guard<std::mutex> lock(impl.run_mutex);
      if (impl.info.device.is_cuda()) cuda::synchronize_device(impl.info.device.index);
      clear_last_error();
      AOTRT_CHECK(impl.api.free_inactive_constant_buffer(impl.container) == 0, kBackend,
                  impl.failure("AOTInductorModelContainerFreeInactiveConstantBuffer"));
    }
  }
  impl.info.weights_source = "package (shared)";
  return shared_bytes;
}

uint64_t ModelAccess::weights_version(const Model& m) {
  m.info();
  std::lock_guard<std::mutex> lock(m.impl_->run_mutex);
  return m.impl_->weights_version;
}

std::unique_ptr<CudaGraphs> ModelAccess::make_graphs(const Model& m) {
  m.info();
  const Model::Impl& impl = *m.impl_;
  if (!impl.info.device.is_cuda() || impl.graph_mode == CudaGraphMode::kOff ||
      impl.api.run_single_threaded == nullptr) {
    return nullptr;
  }
  return std::make_unique<CudaGraphs>(impl.graph_mode, impl.info.device,
                                      "model '" + impl.info.model_name + "' of " +
                                          impl.info.package_path + " (a session)",
                                      impl.info.input_names, impl.info.output_names.size());
}

}  // namespace runtime

}  // namespace aotrt
