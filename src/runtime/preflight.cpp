#include "runtime/preflight.h"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "core/onednn_md.h"
#include "cuda/cuda.h"
#include "runtime/container_api.h"
#include "runtime/mapped_file.h"
#include "runtime/not_served.h"
#include "package/wrapper_source.h"
#include "runtime/proxy_executor.h"
#include "runtime/self_library.h"

namespace aotrt::runtime {
namespace {

constexpr uint64_t kMaxMetadataBytes = 1 << 20;

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::ostringstream out;
  for (size_t i = 0; i < items.size(); ++i) out << (i ? sep : "") << items[i];
  return out.str();
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

void check_machine(OpenedPackage& p) {
  const package::ElfInfo& elf = p.elf;
  if (!elf.native) {
    p.problems.push_back(
        "the model .so is built for " + package::elf_machine_name(elf.machine) + " (" +
        std::to_string(elf.elf_class) + "-bit, " + (elf.little_endian ? "little" : "big") +
        "-endian) but this aotrt runs on " + package::elf_machine_name(package::host_elf_machine()) +
        " (" + std::to_string(8 * sizeof(void*)) + "-bit); export the model on the machine type "
        "that will run it");
    return;
  }
  if (elf.type != ET_DYN) {
    p.problems.push_back("the model .so is not a shared library (ELF type " +
                         std::to_string(elf.type) + ")");
  }
}

void check_libtorch(OpenedPackage& p) {
  std::vector<std::string> torch_libs;
  for (const std::string& lib : p.elf.needed) {
    if (starts_with(lib, "libtorch") || starts_with(lib, "libc10")) torch_libs.push_back(lib);
  }
  if (!torch_libs.empty()) {
    p.problems.push_back(
        "the model .so needs " + join(torch_libs) +
        " (DT_NEEDED): it was exported with libtorch linked in; aotrt runs models without "
        "libtorch, so re-export with inductor_configs={\"aot_inductor.link_libtorch\": False}");
  }
}

// The ops the model calls through the proxy executor (Note [Proxy
// executor]): each must be one aotrt serves on the package's device.
void check_extern_nodes(OpenedPackage& p) {
  const std::string json_name = p.layout.so.name.substr(0, p.layout.so.name.size() - 3) + ".json";
  const package::ZipEntry* entry = p.archive.find(json_name);
  if (entry == nullptr) {
    p.problems.push_back("the model calls ops without a C shim through the proxy executor "
                         "(aoti_torch_proxy_executor_call_function) but the package has no " +
                         json_name + " describing them");
    return;
  }
  try {
    p.extern_nodes = parse_extern_nodes(p.archive.read(*entry, kMaxMetadataBytes * 16),
                                        "package " + p.archive.path() + ": " + json_name);
  } catch (const Error& e) {
    p.problems.push_back(e.what());
    return;
  }
  std::vector<std::string> refused;
  for (const ExternNode& node : p.extern_nodes) {
    std::string why = proxy_refusal(node, p.metadata.device_key);
    p.extern_ops.push_back({node.target, why.empty(), why});
    if (!why.empty()) refused.push_back(std::move(why));
  }
  if (!refused.empty()) {
    p.problems.push_back("the model calls " + std::to_string(refused.size()) +
                         " op(s) without a C shim that aotrt's proxy executor does not serve: " +
                         join(refused, "; "));
  }
}

// Note [Frozen CPU packages]
// On the CPU, inductor's inference path is torch._inductor.config.freezing=True
// (batch norms folded into convolutions, weights constant-folded). With it,
// cpp.weight_prepack (on by default) turns every convolution and linear into a
// oneDNN fused op of torch's hand-written shim_cpu.h
// (aoti_torch_cpu_mkldnn__convolution_pointwise, its _binary and transposed
// siblings, aoti_torch_cpu__linear_pointwise, _linear_pointwise_binary,
// _mkl_linear) whose weights are "opaque" constants: layout _mkldnn, data in a
// oneDNN-blocked format described by a serialized oneDNN 3.x memory
// descriptor (constants_info_[i].opaque_metadata), which the model registers
// through aoti_torch_create_tensor_from_blob_v2 with that layout. Debian's
// oneDNN 2.7, which aotrt links, cannot read 3.x descriptors, so aotrt decodes
// them itself (Note [Serialized oneDNN descriptors] in core/onednn_md.h); the
// fused ops read the blocked bytes, and a plain copy is made only for a
// reader of the elements (Note [Opaque constants] in shim/tensor_shims.cpp);
// they run on the tree's convolution and gemm (Note [Fused oneDNN ops] in
// ops/linear.h).
// The model's import of aoti_torch_layout__mkldnn marks such a package (the
// generated code asks for that layout only to register opaque constants).
// Here, before the .so is loaded, every _mkldnn constant of the generated
// source (<h>.wrapper.cpp: its sizes, dtype, data_size and descriptor) is
// decoded, and a package with one the decoder cannot serve is refused naming
// the constant and why.
void check_onednn_prepack(OpenedPackage& p) {
  if (!std::binary_search(p.elf.undefined.begin(), p.elf.undefined.end(),
                          std::string("aoti_torch_layout__mkldnn"))) {
    return;
  }
  if (!p.layout.wrapper_source || p.layout.wrapper_source->size > kMaxWrapperSourceBytes) {
    return;  // nothing to check here; the shim decodes each blob at load
  }
  const package::WrapperSource source = package::parse_wrapper_source(
      p.archive.read(*p.layout.wrapper_source, kMaxWrapperSourceBytes));
  for (const package::WrapperConstant& c : source.constants) {
    if (!c.mkldnn) continue;
    const std::string what = "the oneDNN-blocked (_mkldnn) constant '" + c.name + "'";
    ScalarType dtype{};
    if (!dtype_from_name(c.dtype, &dtype)) {
      p.problems.push_back(what + " has dtype '" + c.dtype + "', which aotrt does not know");
      continue;
    }
    try {
      (void)decode_onednn_md(c.opaque_metadata, c.sizes, dtype, c.data_size, what);
    } catch (const Error& e) {
      p.problems.push_back(e.what());
    }
  }
}

void check_symbols(OpenedPackage& p) {
  // What a model asks of aotrt: the aoti_* C ABI.
  std::vector<std::string> missing;
  bool proxy = false;
  for (const std::string& name : p.elf.undefined) {
    if (!starts_with(name, "aoti_")) continue;
    const bool provided = provides_symbol(name);
    const char* declined = provided ? nullptr : not_served_reason(name);
    p.shim_symbols.push_back({name, provided, declined ? declined : ""});
    if (name == "aoti_torch_proxy_executor_call_function") {
      proxy = true;
    } else if (declined != nullptr) {
      p.problems.push_back("the model .so needs " + name + ", which aotrt does not serve: " +
                           declined);
    } else if (!provided) {
      missing.push_back(name);
    }
  }
  if (proxy) check_extern_nodes(p);
  if (!missing.empty()) {
    p.problems.push_back("the model .so needs " + std::to_string(missing.size()) +
                         " aoti_* symbol(s) this aotrt does not provide: " + join(missing));
  }
  // What aotrt asks of the model: the container C API.
  std::vector<std::string> absent;
  for (const std::string& name : required_container_symbols()) {
    if (!std::binary_search(p.elf.defined.begin(), p.elf.defined.end(), name)) absent.push_back(name);
  }
  if (!absent.empty()) {
    p.problems.push_back("the model .so does not export " + join(absent) +
                         ": it is not an AOTInductor model .so with the container C API "
                         "(a compile_standalone export links a C++ class instead)");
  }
  if (p.layout.weights_blob &&
      !std::binary_search(p.elf.defined.begin(), p.elf.defined.end(),
                          std::string(kUpdateConstantsFromBlob))) {
    p.problems.push_back(std::string("the package has a weights blob but the model .so does not "
                                     "export ") +
                         kUpdateConstantsFromBlob + " (torch < 2.9 cannot load one)");
  }
}

// Note [CPU export advice]
// Two inductor options decide much of a CPU package's speed and torch's
// defaults leave both off: three models nobody here wrote, exported with the
// defaults, ran 1.06-1.66x ONNX Runtime's time in aotrt, and 0.80-0.97x with
// both (issue 32). What each leaves in the package, read before the .so is
// loaded:
//  - Scalar kernels: the .so defines inductor's kernels (cpp_fused_*) and the
//    metadata's AOTI_CPU_ISA, the vector ISA inductor generated them for, is
//    INVALID_VEC_ISA: the rule of aotrt_tools.export.cpu_kernels (Note [Which
//    CPU kernels a package has] in python/aotrt_tools/export.py; it finds the
//    kernels in their source, here in the .so's symbols, and a package
//    without the key gets no claim here). Not "no at::vec in the source": a
//    kernel too small for the ISA's vectors is scalar whatever the options.
//    Fix: cpp.vec_isa_ok=True.
//  - Unfolded batch norms: the .so computes a batch norm (inductor names a
//    kernel after the ATen ops it fuses, cpp_fused__native_batch_norm_legit_
//    no_training_..., or a batch-norm fallback is called) and calls the plain
//    convolution (aoti_torch_cpu_convolution). freezing=True folds a batch
//    norm into the convolution before it and turns convolutions into fused
//    oneDNN ops, so a frozen package shows neither together. On real packages
//    (tests/e2e/test_export_advice.py): a conv+BN CNN by the defaults has
//    both, frozen neither; a BatchNorm1d after a Linear keeps its kernel even
//    when frozen (nothing to fold it into), and with no plain convolution it
//    is not reported, which freezing would not change.
// Advice, never a problem: such a package loads and runs as exported. Model::load
// prints it once per process and package (LoadOptions::report_export_advice).
void check_cpu_export(OpenedPackage& p) {
  if (p.metadata.device_key != "cpu") return;
  const auto& defined = p.elf.defined;
  const auto& undefined = p.elf.undefined;
  std::string bn_kernel;
  bool kernels = false;
  for (auto it = std::lower_bound(defined.begin(), defined.end(), std::string("cpp_fused_"));
       it != defined.end() && starts_with(*it, "cpp_fused_"); ++it) {
    kernels = true;
    if (bn_kernel.empty() && it->find("batch_norm") != std::string::npos) bn_kernel = *it;
  }
  for (const std::string& name : undefined) {
    if (bn_kernel.empty() && starts_with(name, "aoti_torch_cpu_") &&
        name.find("batch_norm") != std::string::npos) {
      bn_kernel = name;
    }
  }
  for (const ExternNode& node : p.extern_nodes) {
    if (bn_kernel.empty() && node.target.find("batch_norm") != std::string::npos) {
      bn_kernel = node.target;
    }
  }
  const auto isa = p.metadata.values.find("AOTI_CPU_ISA");
  if (kernels && isa != p.metadata.values.end() && isa->second == "INVALID_VEC_ISA") {
    p.export_advice.push_back(
        "its CPU kernels are scalar: inductor generated them for no vector ISA (AOTI_CPU_ISA is "
        "INVALID_VEC_ISA, what torch's defaults give with aot_inductor.link_libtorch=False); "
        "export with inductor_configs cpp.vec_isa_ok=True for vectorized kernels");
  }
  if (!bn_kernel.empty() && std::binary_search(undefined.begin(), undefined.end(),
                                               std::string("aoti_torch_cpu_convolution"))) {
    p.export_advice.push_back(
        "its batch norms are computed at run time beside plain convolutions (" + bn_kernel +
        " and aoti_torch_cpu_convolution: exported without freezing); export with inductor_configs "
        "freezing=True to fold them into the convolutions, which then run as fused oneDNN ops");
  }
}

void check_device_and_weights(OpenedPackage& p, bool external_weights) {
  const std::string& key = p.metadata.device_key;
  if (key == "cuda") {
    if (!cuda::built()) {
      p.problems.push_back("the package is compiled for CUDA but this aotrt was built without "
                           "CUDA (configure with -DAOTRT_CUDA=ON)");
    }
  } else if (key != "cpu") {
    p.problems.push_back("the package is compiled for device '" + key +
                         "'; aotrt serves cpu and cuda");
  }
}

// Which of torch's layouts holds the weights (aot_inductor.force_mmap_weights
// or > 2 GB of constants: appended; package_constants_on_disk_format:
// binary_blob or pickle_weights; package_constants_in_so=False: none).
void describe_weights(OpenedPackage& p) {
  const std::optional<uint64_t>& in_so = p.elf.embedded_constants_bytes;
  if (p.elf.appended_weights) {
    p.weights_layout = "appended";
    p.weights_bytes = p.elf.appended_weights->size >= 8 ? p.elf.appended_weights->size - 8 : 0;
    p.weights_in_place = p.appended && !p.appended->extracted;
  } else if (p.layout.weights_blob) {
    p.weights_layout = "binary_blob";
    p.weights_bytes = p.layout.weights_blob->size;
    p.weights_in_place = p.layout.weights_blob->stored;
  } else if (in_so && *in_so > 8) {
    p.weights_layout = "embedded";
    p.weights_bytes = *in_so;
  } else if (p.layout.has_pickle_weights) {
    p.weights_layout = "pickle_weights";
    p.weights_in_place = true;
    for (const package::ZipEntry& e : p.archive.entries()) {
      if (e.name.find("data/weights/") != std::string::npos && !e.is_dir()) {
        p.weights_bytes += e.size;
        p.weights_in_place = p.weights_in_place && e.stored;
      }
    }
  } else {
    p.weights_layout = in_so ? "none" : "unknown";  // a stripped .so does not say
  }
}

// Note [Weights appended to the .so]: the .so's own record of what is
// appended against the entry's bytes, before anything is written out.
// `tail` holds the entry's last 8 bytes.
void check_appended(OpenedPackage& p, uint64_t entry_size, uint64_t tail) {
  const package::ElfInfo::AppendedWeights& a = *p.elf.appended_weights;
  const std::string so = "the model .so " + p.layout.so.name;
  if (a.size < 8 || a.size > entry_size || entry_size - a.size < p.elf.elf_end ||
      (entry_size - a.size) % 16384 != 0) {
    p.problems.push_back(
        so + " (" + std::to_string(entry_size) + " bytes) does not hold the weights torch appended "
        "to it: its constants record " + std::to_string(a.size) + " bytes after its ELF part (" +
        std::to_string(p.elf.elf_end) + " bytes), starting on a 16 KiB boundary; the entry is "
        "truncated or padded");
    return;
  }
  if (tail != a.magic) {
    p.problems.push_back(so + ": the magic number at the end of its appended weights is not the "
                         "one its constants record: the weights are corrupt or from another export");
    return;
  }
  p.appended = OpenedPackage::Appended{0, entry_size - a.size, false};
}

// Writes bytes [begin, end) of the archive file, from `from`, to the same offsets of `fd`.
void copy_range(const std::string& archive, uint64_t from, int fd, uint64_t begin, uint64_t end,
                const std::string& dest) {
  const int in = ::open(archive.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    const int err = errno;
    AOTRT_FAIL(kPackage, "cannot open package ", archive, ": ", std::strerror(err));
  }
  std::vector<char> buf(std::min<uint64_t>(end - begin, uint64_t{8} << 20));
  std::string error;
  for (uint64_t at = begin; at < end && error.empty();) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), end - at));
    const ssize_t got = ::pread(in, buf.data(), n, static_cast<off_t>(from + at));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      error = "cannot read package " + archive + (got < 0 ? std::string(": ") + std::strerror(errno) : "");
      break;
    }
    for (ssize_t done = 0; done < got;) {
      const ssize_t w = ::pwrite(fd, buf.data() + done, static_cast<size_t>(got - done),
                                 static_cast<off_t>(at + static_cast<uint64_t>(done)));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        error = "cannot write " + dest + ": " + std::strerror(errno);
        break;
      }
      done += w;
    }
    at += static_cast<uint64_t>(got);
  }
  ::close(in);
  AOTRT_CHECK(error.empty(), kPackage, error);
}

// The ELF part of an appended-weights .so, to a new file as long as the
// whole entry (Note [Weights appended to the .so]).
void write_elf_part(const OpenedPackage& p, const std::string& so_path) {
  const int fd = ::open(so_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    AOTRT_FAIL(kPackage, "cannot create ", so_path, ": ", std::strerror(err));
  }
  try {
    copy_range(p.archive.path(), p.appended->data_offset, fd, 0, p.appended->weights_offset, so_path);
    if (::ftruncate(fd, static_cast<off_t>(p.layout.so.size)) != 0) {
      const int err = errno;
      AOTRT_FAIL(kPackage, "cannot extend ", so_path, ": ", std::strerror(err));
    }
  } catch (...) {
    ::close(fd);
    ::unlink(so_path.c_str());
    throw;
  }
  ::close(fd);
}

}  // namespace

OpenedPackage open_package(const std::string& path, const std::string& model_name,
                           bool external_weights) {
  package::ZipArchive archive = package::ZipArchive::open(path);
  package::ModelLayout layout = package::find_model(archive, model_name);
  package::Metadata metadata = package::parse_metadata(
      archive.read(layout.metadata, kMaxMetadataBytes), path + ": " + layout.metadata.name);
  package::TempDir dir;
  const std::string so_path = dir.path() + "/" + package::base_name(layout.so.name);
  const std::string what = "package " + path + ": model .so " + layout.so.name;
  // A stored .so is read in place: one with appended weights is written out
  // without them (Note [Weights appended to the .so]).
  const std::optional<uint64_t> data_offset = archive.stored_data_offset(layout.so);
  package::ElfInfo elf;
  uint64_t tail = 0;
  if (data_offset) {
    const MappedFile entry(path, *data_offset, layout.so.size);
    elf = package::read_elf({entry.data(), entry.size()}, what);
    if (entry.size() >= 8) std::memcpy(&tail, entry.data() + entry.size() - 8, 8);
  }
  OpenedPackage p{std::move(archive), std::move(layout), std::move(metadata), std::move(dir),
                  so_path, std::move(elf), {}, {}, {}, {}, std::nullopt, {}, 0, false, {}};
  if (data_offset && p.elf.appended_weights) {
    check_appended(p, p.layout.so.size, tail);
    if (p.appended) {
      p.appended->data_offset = *data_offset;
      write_elf_part(p, so_path);
    }
  } else {
    p.archive.extract(p.layout.so, so_path);
    if (!data_offset) {
      p.elf = package::read_elf_file(so_path, what);
      if (p.elf.appended_weights) {  // torch's own code reads them from the extracted file
        const MappedFile file(so_path);
        if (file.size() >= 8) std::memcpy(&tail, file.data() + file.size() - 8, 8);
        check_appended(p, p.layout.so.size, tail);
        if (p.appended) p.appended->extracted = true;
      }
    }
  }
  describe_weights(p);
  check_machine(p);
  if (p.elf.native) {
    check_libtorch(p);
    check_onednn_prepack(p);
    check_symbols(p);
    check_cpu_export(p);
  }
  check_device_and_weights(p, external_weights);
  return p;
}

void extract_appended_weights(const OpenedPackage& pkg) {
  AOTRT_CHECK(pkg.appended && !pkg.appended->extracted, kInternal, "extract_appended_weights: nothing to extract");
  const int fd = ::open(pkg.so_path.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    AOTRT_FAIL(kPackage, "cannot open ", pkg.so_path, ": ", std::strerror(err));
  }
  try {
    copy_range(pkg.archive.path(), pkg.appended->data_offset, fd, pkg.appended->weights_offset,
               pkg.layout.so.size, pkg.so_path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

std::string describe_problems(const OpenedPackage& pkg) {
  std::ostringstream out;
  out << "cannot load model '" << pkg.layout.model_name << "' of " << pkg.archive.path() << ": ";
  if (pkg.problems.size() == 1) {
    out << pkg.problems.front();
  } else {
    for (size_t i = 0; i < pkg.problems.size(); ++i) {
      out << (i ? "; " : "") << "(" << i + 1 << ") " << pkg.problems[i];
    }
  }
  return out.str();
}

}  // namespace aotrt::runtime
