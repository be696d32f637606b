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
// function, which aotrt never makes. So the blob is mapped just for that
// call, unmapped and deleted right after: a loaded model holds its weights
// once, in the model's memory. The copy goes only to the container's first
// model instance (models_[0]), which is why containers are made with one
// instance (Run then serialises concurrent calls).
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
#include "runtime/model_tls.h"
#include "runtime/preflight.h"
#include "runtime/proxy_executor.h"
#include "runtime/self_library.h"
#include "shim/boundary.h"

namespace aotrt {

using runtime::ContainerApi;
using runtime::ContainerHandle;

class Model::Impl {
 public:
  explicit Impl(package::TempDir dir) : dir(std::move(dir)) {}
  // Container first (it frees constants and kernels the .so made), then the
  // .so, then the folder it was loaded from (the TempDir member, last).
  ~Impl() {
    graph.reset();  // its kernels belong to the container
    if (container != nullptr) {
      if (api.destroy(container) != 0) {
        std::fprintf(stderr, "aotrt: warning: deleting the container of %s failed: %s\n",
                     info.package_path.c_str(), model_error().c_str());
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

  package::TempDir dir;
  void* so = nullptr;
  ContainerApi api;
  ContainerHandle container = nullptr;
  // Ops without a C shim (Note [Proxy executor]); null when the .so calls none.
  std::unique_ptr<runtime::ProxyExecutor> proxy;
  std::mutex run_mutex;  // runs of this Model, one at a time
  std::unique_ptr<runtime::CudaGraphRunner> graph;  // LoadOptions::cuda_graph
  ModelInfo info;
};

namespace {

// A read-only mapping of a whole file.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      AOTRT_FAIL(kPackage, "cannot open ", path, ": ", std::strerror(err));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      AOTRT_FAIL(kPackage, "cannot stat ", path, ": ", std::strerror(err));
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      const int err = errno;
      ::close(fd);
      if (p == MAP_FAILED) AOTRT_FAIL(kPackage, "cannot map ", path, ": ", std::strerror(err));
      data_ = p;
    } else {
      ::close(fd);
    }
  }
  ~MappedFile() {
    // Whole pages: ThreadSanitizer forgets only the bytes munmap is told of,
    // and would report the next user of the tail page as racing with us.
    const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    if (data_ != nullptr) ::munmap(data_, (size_ + page - 1) / page * page);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Never null: an empty file reads as a zero-filled static block, since the
  // model may still take the pointer.
  const uint8_t* data() const {
    alignas(64) static const uint8_t kEmpty[64] = {};
    return data_ != nullptr ? static_cast<const uint8_t*>(data_) : kEmpty;
  }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

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
void read_input_specs(Model::Impl& m) {
  const auto it = m.info.metadata.find("aotrt.inputs");
  if (it == m.info.metadata.end()) return;
  const auto json = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_array()) return;
  const size_t n = m.info.input_names.size();
  m.info.input_specs.assign(n, std::nullopt);
  for (size_t i = 0; i < n && i < json.size(); ++i) {
    const auto& e = json[i];
    if (!e.is_object() || !e.contains("dtype") || !e.contains("sizes") || !e.contains("strides") ||
        !e["dtype"].is_string() || !e["sizes"].is_array() || !e["strides"].is_array() ||
        e["sizes"].size() != e["strides"].size()) {
      continue;
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
    for (const auto& v : e["sizes"]) {
      ok = ok && v.is_number_integer() && v.get<int64_t>() >= 0;
      if (ok) spec.sizes.push_back(v.get<int64_t>());
    }
    for (const auto& v : e["strides"]) {
      ok = ok && v.is_number_integer() && v.get<int64_t>() >= 0;
      if (ok) spec.strides.push_back(v.get<int64_t>());
    }
    if (ok) m.info.input_specs[i] = std::move(spec);
  }
}

// Constants the container reports; the names, dtypes and sizes are optional
// entries, so a model without them lists none.
void read_constants(Model::Impl& m) {
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
    m.info.constants.push_back(std::move(c));
  }
}

// Loads the weights blob, or checks that the .so holds its weights itself.
// See Note [Weights blob lifetime].
void load_weights(Model::Impl& m, const runtime::OpenedPackage& pkg) {
  uint64_t needed = 0;  // bytes the blob must hold: every non-folded constant
  for (const ConstantInfo& c : m.info.constants) {
    if (!c.from_folded) needed += c.nbytes;
  }
  const std::string& path = m.info.package_path;
  if (pkg.layout.weights_blob) {
    const std::string blob_path = m.dir.path() + "/" + package::base_name(pkg.layout.weights_blob->name);
    pkg.archive.extract(*pkg.layout.weights_blob, blob_path);
    {
      MappedFile blob(blob_path);
      AOTRT_CHECK(blob.size() >= needed, kPackage, "package ", path, ": weights blob ",
                  pkg.layout.weights_blob->name, " has ", blob.size(), " bytes but the model's ",
                  "constants take ", needed);
      uint64_t declared = 0;
      // A .so that takes an external blob knows its size: a shorter blob
      // would be read past its end, and one of another size is not the blob
      // it was exported with (its constants would be misread).
      if (m.api.get_constants_blob_size != nullptr &&
          m.api.get_constants_blob_size(m.container, &declared) == 0) {
        AOTRT_CHECK(blob.size() == declared, kPackage, "package ", path, ": weights blob ",
                    pkg.layout.weights_blob->name, " has ", blob.size(), " bytes but the model "
                    ".so was exported with a ", declared, "-byte blob (",
                    blob.size() < declared ? "truncated" : "padded, or from another export", ")");
      }
      AOTRT_CHECK(m.api.update_constants_from_blob != nullptr, kPackage, "package ", path,
                  ": the model .so does not export ", runtime::kUpdateConstantsFromBlob);
      clear_last_error();
      AOTRT_CHECK(m.api.update_constants_from_blob(m.container, blob.data()) == 0, kPackage,
                  m.failure(runtime::kUpdateConstantsFromBlob));
    }
    ::unlink(blob_path.c_str());  // copied into the model; see the Note
    return;
  }
  if (needed == 0) return;
  // No blob: the weights must be linked into the .so. AOTInductor puts them
  // between _binary_constants_bin_start and _end; a .so exported for an
  // external blob has only its 8-byte size there.
  bool in_so = true;
  if (pkg.elf.embedded_constants_bytes) {
    in_so = *pkg.elf.embedded_constants_bytes >= needed;
  } else if (m.api.get_constants_blob_size != nullptr) {
    // Stripped .so: only a model built for an external blob answers this.
    uint64_t declared = 0;
    in_so = m.api.get_constants_blob_size(m.container, &declared) != 0;
  }
  AOTRT_CHECK(in_so, kPackage, "package ", path, ": model '", m.info.model_name,
              "' needs a weights blob (", needed, " bytes of constants, exported with "
              "package_constants_in_so=False) but the package has no *_weights.blob in ",
              pkg.layout.model_dir);
}

}  // namespace

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

const ModelInfo& Model::info() const {
  AOTRT_CHECK(impl_ != nullptr, kInvalidArgument, "aotrt::Model: used after it was moved from");
  return impl_->info;
}

Model Model::load(const std::string& package_path, const LoadOptions& options) {
  runtime::OpenedPackage pkg = runtime::open_package(package_path, options.model_name);
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

  runtime::self_library_handle();  // Note [Model symbol binding]
  if (m->info.device.is_cuda()) cuda::expose_runtime_symbols();
  // Notes [Unique symbols and dlclose], [Thread-local destructors and
  // dlclose], [Model input checks].
  const package::ElfPatchResult patched = package::patch_for_dlclose_in_file(
      pkg.so_path, /*kernel_modules=*/cuda::built(), /*input_checks=*/options.check_inputs);
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
    // libc) come from aotrt's own dependencies or the .so's DT_NEEDED.
    const char* hint = text.find("undefined symbol") != std::string::npos
                           ? " (an import that neither aotrt nor the libraries the .so needs define)"
                           : "";
    AOTRT_FAIL(kPackage, "cannot load the model .so of ", package_path, ": ", text, hint);
  }
  m->api = runtime::resolve_container_api(m->so, package_path + ": " + pkg.layout.so.name);

  const std::string device = m->info.device.is_cpu() ? "cpu" : m->info.device.str();
  clear_last_error();
  const std::string cubin_dir = m->dir.path();
  if (m->api.create_with_device(&m->container, 1, device.c_str(), cubin_dir.c_str()) != 0 ||
      m->container == nullptr) {
    m->container = nullptr;
    AOTRT_FAIL(kPackage, m->failure("AOTInductorModelContainerCreateWithDevice"));
  }
  read_names(*m);
  read_input_specs(*m);
  read_constants(*m);
  load_weights(*m, pkg);
  if (options.cuda_graph) {
    const std::string what = "model '" + m->info.model_name + "' of " + package_path;
    AOTRT_CHECK(m->info.device.is_cuda(), kInvalidArgument, "aotrt::Model::load: ", what,
                " runs on ", m->info.device.str(), "; LoadOptions::cuda_graph is for CUDA models");
    AOTRT_CHECK(m->api.run_single_threaded != nullptr, kUnsupported, "aotrt::Model::load: ", what,
                ": the .so does not export AOTInductorModelContainerRunSingleThreaded (torch "
                "older than 2.6?), which CUDA graph mode needs; load it without cuda_graph");
    m->graph = std::make_unique<runtime::CudaGraphRunner>(m->info.device, what,
                                                          m->info.input_names,
                                                          m->info.output_names.size());
  }
  return Model(std::move(m));
}

Tensor Model::prepare_input(size_t index, const Tensor& value) const {
  const char* fn = "aotrt::Model::prepare_input";
  const ModelInfo& mi = info();
  AOTRT_CHECK(index < mi.input_names.size(), kInvalidArgument, fn, ": input ", index,
              " of a model with ", mi.input_names.size(), " inputs");
  const std::vector<int64_t> sizes(value.sizes().begin(), value.sizes().end());
  std::vector<int64_t> strides = contiguous_strides(sizes);
  const std::optional<TensorSpec>* spec =
      index < mi.input_specs.size() ? &mi.input_specs[index] : nullptr;
  if (spec != nullptr && spec->has_value() && (*spec)->sizes.size() == sizes.size()) {
    if ((*spec)->sizes == sizes) {
      strides = (*spec)->strides;
    } else {
      // Other sizes (a dynamic dim): the exported dim order, dense.
      std::vector<size_t> order(sizes.size());
      std::iota(order.begin(), order.end(), size_t{0});
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return (*spec)->strides[a] > (*spec)->strides[b];
      });
      int64_t step = 1;
      for (size_t k = order.size(); k-- > 0;) {
        strides[order[k]] = step;
        step = checked_mul(step, std::max<int64_t>(sizes[order[k]], 1), fn);
      }
    }
  }
  const bool same = value.device() == mi.device &&
                    std::equal(strides.begin(), strides.end(), value.strides().begin(),
                               value.strides().end());
  if (same) return value;
  Tensor laid = Tensor::empty_strided(sizes, strides, value.dtype(), mi.device);
  laid.copy_(value);
  return laid;
}

std::vector<Tensor> Model::run(std::span<const Tensor> inputs) {
  AOTRT_CHECK(impl_ != nullptr, kInvalidArgument, "aotrt::Model::run: used after move");
  Impl& m = *impl_;
  const char* fn = "aotrt::Model::run";
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
  if (m.graph != nullptr) {
    return m.graph->run(in, [&](AtenTensorHandle* gin, size_t gn_in, AtenTensorHandle* gout,
                                size_t gn_out, void* gstream) {
      clear_last_error();
      if (m.call_container(gin, gn_in, gout, gn_out, gstream) != 0) {
        AOTRT_FAIL(kBackend, runtime::name_inputs_in_model_message(m.failure(m.run_entry()),
                                                                   m.info.input_names));
      }
    });
  }
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

}  // namespace aotrt
