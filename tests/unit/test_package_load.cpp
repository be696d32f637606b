// Model::load and inspect_package: what is refused before dlopen, and the
// private folder that is removed on unload and on every failure.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "aotrt/aotrt.h"
#include "package/temp_dir.h"
#include "runtime/not_served.h"
#include "package_test_util.h"

using aotrt::Error;
using aotrt::Model;
using aotrt::package::TempDir;
using namespace aotrt::testing;

namespace {

// Points TMPDIR at a fresh folder for the test, so the loader's private
// folders can be counted; restores it after.
class ScopedTmpdir {
 public:
  ScopedTmpdir() {
    const char* old = std::getenv("TMPDIR");
    if (old != nullptr) old_ = old;
    had_ = old != nullptr;
    ::setenv("TMPDIR", root_.path().c_str(), 1);
  }
  ~ScopedTmpdir() {
    if (had_) ::setenv("TMPDIR", old_.c_str(), 1); else ::unsetenv("TMPDIR");
  }
  // The loader's folders (aotrt-XXXXXX) under it now.
  std::vector<std::string> folders() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(root_.path())) {
      if (e.path().filename().string().rfind("aotrt-", 0) == 0) out.push_back(e.path().string());
    }
    return out;
  }

 private:
  TempDir root_;  // made before TMPDIR changes
  std::string old_;
  bool had_ = false;
};

std::string load_error(const std::string& pkg) {
  try {
    Model::load(pkg);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), aotrt::ErrorKind::kPackage) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "Model::load(" << pkg << ") did not refuse";
  return "";
}

// A package around a synthetic .so (never loadable by dlopen: it has no
// program headers). Messages about it prove the loader refused before dlopen.
std::string synthetic_package(const TempDir& dir, const ElfSpec& spec,
                              const std::string& metadata = kMetadataCpu) {
  const std::string path = dir.path() + "/synthetic.pt2";
  write_zip(path, package_items(make_elf(spec), nullptr, metadata));
  return path;
}

ElfSpec loadable_spec() {
  ElfSpec spec;
  spec.needed = {"libstdc++.so.6", "libc.so.6"};
  spec.undefined = {"aoti_torch_empty_strided", "aoti_torch_delete_tensor_object", "malloc"};
  spec.defined = container_exports();
  return spec;
}

void expect_contains(const std::string& text, const std::string& needle) {
  EXPECT_NE(text.find(needle), std::string::npos) << "message: " << text
                                                  << "\nexpected to contain: " << needle;
}

}  // namespace

TEST(PackageLoad, RefusesForeignMachineBeforeDlopen) {
  TempDir dir;
  ElfSpec spec = loadable_spec();
  spec.machine = aotrt::package::host_elf_machine() == EM_AARCH64 ? EM_X86_64 : EM_AARCH64;
  const std::string msg = load_error(synthetic_package(dir, spec));
  expect_contains(msg, "the model .so is built for " + aotrt::package::elf_machine_name(spec.machine));
  expect_contains(msg, "this aotrt runs on " +
                           aotrt::package::elf_machine_name(aotrt::package::host_elf_machine()));
}

TEST(PackageLoad, RefusesLibtorchLinkedModels) {
  TempDir dir;
  ElfSpec spec = loadable_spec();
  spec.needed.push_back("libtorch_cpu.so");
  spec.needed.push_back("libc10.so");
  const std::string msg = load_error(synthetic_package(dir, spec));
  expect_contains(msg, "needs libtorch_cpu.so, libc10.so (DT_NEEDED)");
  expect_contains(msg, "aot_inductor.link_libtorch\": False");
}

TEST(PackageLoad, RefusesMissingShimsWithTheirNames) {
  TempDir dir;
  ElfSpec spec = loadable_spec();
  spec.undefined.push_back("aoti_torch_cpu_not_a_real_op_out");
  spec.undefined.push_back("aoti_torch_also_missing");
  const std::string msg = load_error(synthetic_package(dir, spec));
  expect_contains(msg, "needs 2 aoti_* symbol(s) this aotrt does not provide: "
                       "aoti_torch_also_missing, aoti_torch_cpu_not_a_real_op_out");
  EXPECT_EQ(msg.find("aoti_torch_empty_strided"), std::string::npos) << msg;  // provided
}

// A shim aotrt declines on purpose (shim/ops/not_served.def) is refused with
// its reason, not listed as missing; inspect_package carries the reason.
TEST(PackageLoad, RefusesDeclinedShimsWithTheirReason) {
  TempDir dir;
  ElfSpec spec = loadable_spec();
  spec.undefined.push_back("aoti_torch_cpu__to_sparse");
  spec.undefined.push_back("aoti_torch_cuda_convolution_backward");
  const std::string pkg = synthetic_package(dir, spec);
  const std::string msg = load_error(pkg);
  expect_contains(msg, "the model .so needs aoti_torch_cpu__to_sparse, which aotrt does not serve: "
                       "sparse layouts: aotrt's tensors are dense and strided");
  expect_contains(msg, "aoti_torch_cuda_convolution_backward, which aotrt does not serve: "
                       "backward-only");
  EXPECT_EQ(msg.find("does not provide"), std::string::npos) << msg;

  const aotrt::PackageInfo info = aotrt::inspect_package(pkg);
  EXPECT_EQ(info.missing_symbol_count(), 0u);
  EXPECT_EQ(info.declined_symbol_count(), 2u);
  for (const aotrt::ShimSymbol& s : info.shim_symbols) {
    if (s.provided) continue;
    EXPECT_FALSE(s.refusal.empty()) << s.name;
  }
  // A name that only resembles a declined one is missing, not declined.
  EXPECT_EQ(aotrt::runtime::not_served_reason("aoti_torch_cpu_to_sparse_csr"), nullptr);
  EXPECT_EQ(aotrt::runtime::not_served_reason("aoti_torch_to_sparse"), nullptr);  // no device prefix
  EXPECT_NE(aotrt::runtime::not_served_reason("aoti_torch_cuda__cudnn_rnn"), nullptr);
}

// A package whose .so calls the proxy executor but that lacks the JSON that
// says which ops it calls (see test_proxy_executor.cpp for the rest).
TEST(PackageLoad, RefusesProxyExecutorModelsWithoutTheirExternNodeJson) {
  TempDir dir;
  ElfSpec spec = loadable_spec();
  spec.undefined.push_back("aoti_torch_proxy_executor_call_function");
  const std::string msg = load_error(synthetic_package(dir, spec));
  expect_contains(msg, "the model calls ops without a C shim through the proxy executor "
                       "(aoti_torch_proxy_executor_call_function) but the package has no ");
  expect_contains(msg, ".wrapper.json describing them");
}

// With its JSON, the refusal names every op aotrt does not serve, and
// inspect_package lists each op with its status.
TEST(PackageLoad, RefusesProxyExecutorOpsAotrtDoesNotServeNamingThem) {
  TempDir dir;
  ElfSpec spec = loadable_spec();
  spec.undefined.push_back("aoti_torch_proxy_executor_call_function");
  std::vector<ZipItem> items = package_items(make_elf(spec));
  items.push_back({"pkg/data/aotinductor/model/abc.wrapper.json",
                   R"({"nodes": [{"name": "buf0", "node": {"target": "aten::no_such_op",
                      "inputs": [], "outputs": []}}]})"});
  const std::string path = dir.path() + "/proxy_json.pt2";
  write_zip(path, items);
  const std::string msg = load_error(path);
  expect_contains(msg, "the model calls 1 op(s) without a C shim that aotrt's proxy executor "
                       "does not serve: aten::no_such_op (no aotrt implementation of this op)");
  const aotrt::PackageInfo info = aotrt::inspect_package(path);
  ASSERT_EQ(info.extern_ops.size(), 1u);
  EXPECT_EQ(info.extern_ops[0].target, "aten::no_such_op");
  EXPECT_FALSE(info.extern_ops[0].served);
}

TEST(PackageLoad, RefusesSoWithoutContainerApiAndUnknownDevices) {
  TempDir dir;
  ElfSpec spec = loadable_spec();
  spec.defined = {"something_else"};
  expect_contains(load_error(synthetic_package(dir, spec)),
                  "does not export AOTInductorModelContainerCreateWithDevice");
  expect_contains(load_error(synthetic_package(dir, loadable_spec(), R"({"AOTI_DEVICE_KEY": "xpu"})")),
                  "compiled for device 'xpu'");
#ifndef AOTRT_WITH_CUDA
  expect_contains(load_error(synthetic_package(dir, loadable_spec(), R"({"AOTI_DEVICE_KEY": "cuda"})")),
                  "built without CUDA");
#endif
}

TEST(PackageLoad, ReportsEveryProblemAtOnce) {
  TempDir dir;
  ElfSpec spec = loadable_spec();
  spec.needed.push_back("libtorch.so");
  spec.undefined.push_back("aoti_torch_missing_one");
  const std::string msg = load_error(synthetic_package(dir, spec));
  expect_contains(msg, "(1) the model .so needs libtorch.so");
  expect_contains(msg, "(2) the model .so needs 1 aoti_* symbol(s)");
}

TEST(PackageLoad, InspectReportsWithoutLoading) {
  TempDir dir;
  ElfSpec spec = loadable_spec();
  spec.undefined.push_back("aoti_torch_missing_one");
  const std::string pkg = synthetic_package(dir, spec);
  const aotrt::PackageInfo info = aotrt::inspect_package(pkg);
  EXPECT_EQ(info.device_key, "cpu");
  EXPECT_EQ(info.so_name, "pkg/data/aotinductor/model/abc.wrapper.so");
  EXPECT_EQ(info.machine, aotrt::package::elf_machine_name(aotrt::package::host_elf_machine()));
  EXPECT_EQ(info.needed_libraries, spec.needed);
  EXPECT_EQ(info.files.size(), 5u);
  EXPECT_FALSE(info.has_weights_blob);
  // Only aoti_* symbols, each with its status, sorted.
  ASSERT_EQ(info.shim_symbols.size(), 3u);
  EXPECT_EQ(info.shim_symbols[0].name, "aoti_torch_delete_tensor_object");
  EXPECT_TRUE(info.shim_symbols[0].provided);
  EXPECT_EQ(info.shim_symbols[2].name, "aoti_torch_missing_one");
  EXPECT_FALSE(info.shim_symbols[2].provided);
  EXPECT_EQ(info.missing_symbol_count(), 1u);
  ASSERT_EQ(info.problems.size(), 1u);
  expect_contains(info.problems[0], "aoti_torch_missing_one");

  // The real test model passes every check.
  const std::string real = dir.path() + "/real.pt2";
  const std::string blob = test_model_blob();
  write_zip(real, package_items(read_file(AOTRT_TEST_MODEL_SO), &blob));
  const aotrt::PackageInfo ok = aotrt::inspect_package(real);
  EXPECT_TRUE(ok.problems.empty()) << ok.problems.front();
  EXPECT_TRUE(ok.has_weights_blob);
  EXPECT_EQ(ok.missing_symbol_count(), 0u);
  EXPECT_GE(ok.shim_symbols.size(), 5u);

  EXPECT_THROW(aotrt::inspect_package(dir.path() + "/none.pt2"), Error);
}

// Note [CPU export advice]: scalar kernels by the metadata's AOTI_CPU_ISA,
// batch norms beside plain convolutions by the .so's symbols; advice, never a
// problem, and only for CPU packages.
TEST(PackageLoad, InspectAdvisesOnCpuExportOptions) {
  TempDir dir;
  auto advice = [&](const std::vector<std::string>& kernels, const std::string& op,
                    const std::string& isa, const std::string& device = "cpu") {
    ElfSpec spec = loadable_spec();
    spec.defined.insert(spec.defined.end(), kernels.begin(), kernels.end());
    spec.undefined.push_back(op);
    const std::string metadata =
        R"({"AOTI_DEVICE_KEY": ")" + device + R"(", "AOTI_CPU_ISA": ")" + isa + R"("})";
    const aotrt::PackageInfo info = aotrt::inspect_package(synthetic_package(dir, spec, metadata));
    if (device == "cpu") EXPECT_TRUE(info.problems.empty()) << info.problems.front();
    return info.export_advice;
  };
  const std::string bn = "cpp_fused__native_batch_norm_legit_no_training_convolution_relu_1";
  const std::string conv = "aoti_torch_cpu_convolution";
  // torch's defaults on a conv + batch norm CNN: both, each naming its option.
  const auto both = advice({"cpp_fused_convolution_0", bn}, conv, "INVALID_VEC_ISA");
  ASSERT_EQ(both.size(), 2u);
  expect_contains(both[0], "CPU kernels are scalar");
  expect_contains(both[0], "cpp.vec_isa_ok=True");
  expect_contains(both[1], bn + " and aoti_torch_cpu_convolution");
  expect_contains(both[1], "freezing=True");
  // Vectorized (small kernels may still be scalar inside: not the options' doing).
  EXPECT_EQ(advice({"cpp_fused_convolution_0", bn}, conv, "AVX512").size(), 1u);
  // Frozen: convolutions fused, batch norms folded.
  EXPECT_TRUE(advice({"cpp_fused_relu_0"}, "aoti_torch_cpu_mkldnn__convolution_pointwise", "AVX2").empty());
  // A batch norm with no plain convolution to fold into (a BatchNorm1d after a
  // Linear), which freezing keeps too.
  EXPECT_TRUE(advice({"cpp_fused__native_batch_norm_legit_no_training_relu_0"},
                     "aoti_torch_cpu_addmm_out", "AVX2").empty());
  // No generated kernels (every op a fallback): nothing is scalar.
  EXPECT_TRUE(advice({}, conv, "INVALID_VEC_ISA").empty());
  // Not a CPU package.
  EXPECT_TRUE(advice({"cpp_fused_convolution_0", bn}, conv, "INVALID_VEC_ISA", "cuda").empty());
}

TEST(PackageLoad, RefusesMissingOrShortWeightsBlob) {
  TempDir dir;
  const std::string so = read_file(AOTRT_TEST_MODEL_SO);
  const std::string none = dir.path() + "/noblob.pt2";
  write_zip(none, package_items(so, nullptr));
  expect_contains(load_error(none), "needs a weights blob (64 bytes of constants");
  const std::string short_blob = test_model_blob().substr(0, 32);
  const std::string shortpkg = dir.path() + "/short.pt2";
  write_zip(shortpkg, package_items(so, &short_blob));
  expect_contains(load_error(shortpkg), "has 32 bytes but the model's constants take 64");
}

TEST(PackageLoad, PrivateFolderIsRemovedOnUnloadAndOnFailure) {
  ScopedTmpdir tmp;
  TempDir dir;  // an aotrt-XXXXXX folder under the new TMPDIR: part of the baseline
  const auto baseline = tmp.folders();
  const std::string so = read_file(AOTRT_TEST_MODEL_SO);
  const std::string blob = test_model_blob();
  const std::string pkg = dir.path() + "/ok.pt2";
  write_zip(pkg, package_items(so, &blob));
  {
    Model model = Model::load(pkg);
    const auto during = tmp.folders();
    ASSERT_EQ(during.size(), baseline.size() + 1);
    std::string mine;
    for (const auto& f : during) {
      if (std::find(baseline.begin(), baseline.end(), f) == baseline.end()) mine = f;
    }
    struct stat st {};
    ASSERT_EQ(::stat(mine.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    // Only what the model needs is extracted, and the blob is gone once loaded.
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(mine)) {
      files.push_back(e.path().filename().string());
    }
    EXPECT_EQ(files, std::vector<std::string>{"abc.wrapper.so"});
  }
  EXPECT_EQ(tmp.folders(), baseline);

  // Failures after extraction: refused before dlopen, and after dlopen.
  const std::string libtorch = dir.path() + "/libtorch.pt2";
  ElfSpec spec = loadable_spec();
  spec.needed.push_back("libtorch.so");
  write_zip(libtorch, package_items(make_elf(spec)));
  EXPECT_THROW(Model::load(libtorch), Error);
  EXPECT_EQ(tmp.folders(), baseline);
  // A .so that passes every check but that dlopen refuses (no program headers).
  const std::string unloadable = dir.path() + "/unloadable.pt2";
  write_zip(unloadable, package_items(make_elf(loadable_spec())));
  EXPECT_TRUE(aotrt::inspect_package(unloadable).problems.empty());
  expect_contains(load_error(unloadable), "cannot load the model .so of " + unloadable);
  EXPECT_EQ(tmp.folders(), baseline);
  const std::string noblob = dir.path() + "/noblob.pt2";
  write_zip(noblob, package_items(so, nullptr));
  EXPECT_THROW(Model::load(noblob), Error);
  EXPECT_EQ(tmp.folders(), baseline);
  EXPECT_THROW(aotrt::inspect_package(libtorch).problems.at(1), std::out_of_range);
  EXPECT_EQ(tmp.folders(), baseline);
}
