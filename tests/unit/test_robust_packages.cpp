// Bad packages: each is refused with one clear error, nothing crashes, and
// nothing is left (or written at all) outside aotrt's private folder, which
// is removed too. Packages are built around the stand-in model .so
// (tests/unit/fixtures/test_model.cpp) or a synthetic ELF; the same cases
// with packages torch exported are in tests/e2e/test_robust_packages.py.
#include <gtest/gtest.h>
#include <elf.h>

#include <cstring>
#include <filesystem>

#include "aotrt/aotrt.h"
#include "package/temp_dir.h"
#include "package_test_util.h"
#include "robust_cases.h"

using aotrt::ErrorKind;
using aotrt::LoadOptions;
using aotrt::Model;
using aotrt::package::TempDir;
using namespace aotrt::testing;

namespace {

constexpr const char* kArea = "bad packages";

std::string stand_in_so() { return read_file(AOTRT_TEST_MODEL_SO); }

// A package file in `dir` holding `items`.
std::string zip_package(const TempDir& dir, const std::string& name,
                        const std::vector<ZipItem>& items) {
  const std::string path = dir.path() + "/" + name;
  write_zip(path, items);
  return path;
}

// The stand-in model, packaged as aoti_compile_and_package does.
std::string good_package(const TempDir& dir, const std::string& name = "good.pt2") {
  const std::string blob = test_model_blob();
  return zip_package(dir, name, package_items(stand_in_so(), &blob));
}

ElfSpec loadable_spec() {
  ElfSpec spec;
  spec.needed = {"libstdc++.so.6", "libc.so.6"};
  spec.undefined = {"aoti_torch_empty_strided", "aoti_torch_delete_tensor_object"};
  spec.defined = container_exports();
  return spec;
}

std::vector<size_t> find_all(const std::string& bytes, uint32_t signature) {
  std::vector<size_t> at;
  const std::string sig(reinterpret_cast<const char*>(&signature), 4);
  for (size_t pos = bytes.find(sig); pos != std::string::npos; pos = bytes.find(sig, pos + 1)) {
    at.push_back(pos);
  }
  return at;
}

// Each test loads inside a fresh TMPDIR and checks the loader left nothing.
class RobustPackages : public ::testing::Test {
 protected:
  // Model::load must refuse `path` with kind and needles; nothing may be left behind.
  std::string refuse(const std::string& name, const std::string& path,
                     const std::vector<std::string>& needles,
                     ErrorKind kind = ErrorKind::kPackage, const LoadOptions& options = {}) {
    std::string msg;
    {
      FreshTmpdir tmp;
      msg = expect_refused(kArea, name, kind, needles, [&] { Model::load(path, options); });
      EXPECT_EQ(tmp.listing(), "") << name << ": the loader left files behind";
    }
    return msg;
  }
  TempDir work_;  // the packages; made under the real TMPDIR
};

}  // namespace

TEST_F(RobustPackages, NotAZipEmptyOrMissing) {
  const std::string text = work_.path() + "/text.pt2";
  write_file(text, "this is a README, not a package\n");
  refuse("not a zip (text)", text, {"is not a zip archive", text});
  const std::string empty = work_.path() + "/empty.pt2";
  write_file(empty, "");
  refuse("empty file", empty, {empty});
  refuse("missing file", work_.path() + "/none.pt2", {"cannot open package", "No such file"});
  refuse("a folder, not a file", work_.path(), {"is not a regular file"});
  // An ELF file where a zip is expected.
  const std::string so = work_.path() + "/model.so.pt2";
  write_file(so, stand_in_so());
  refuse("a bare .so instead of a .pt2", so, {"is not a zip archive"});
}

TEST_F(RobustPackages, Truncated) {
  const std::string bytes = read_file(good_package(work_));
  for (const double keep : {0.1, 0.5, 0.99}) {
    const auto n = static_cast<size_t>(static_cast<double>(bytes.size()) * keep);
    const std::string cut = work_.path() + "/cut" + std::to_string(n) + ".pt2";
    write_file(cut, bytes.substr(0, n));
    refuse("truncated to " + std::to_string(static_cast<int>(keep * 100)) + "%", cut, {cut});
  }
  const std::string tail = work_.path() + "/tail.pt2";
  write_file(tail, bytes.substr(0, bytes.size() - 10));  // inside the end record
  refuse("truncated by 10 bytes", tail, {tail});
}

TEST_F(RobustPackages, NoModelOrNoSo) {
  refuse("a zip with no model", zip_package(work_, "nomodel.pt2", {{"pkg/archive_format", "pt2"},
                                                                  {"pkg/version", "1"}}),
         {"has no data/aotinductor/ folder", "not an AOTInductor package"});
  refuse("model folder without a .so (package_cpp_only)",
         zip_package(work_, "cpponly.pt2",
                     {{"pkg/data/aotinductor/model/abc.wrapper.cpp", "// source"},
                      {"pkg/data/aotinductor/model/abc.wrapper_metadata.json", kMetadataCpu}}),
         {"has no compiled .so", "package_cpp_only"});
  auto no_md = package_items(stand_in_so());
  no_md.erase(no_md.begin() + 3);  // the metadata json
  refuse("no metadata json", zip_package(work_, "nomd.pt2", no_md), {"has no metadata file"});
}

TEST_F(RobustPackages, TwoModels) {
  // Two .so files in one model folder: which is the model is not guessed.
  const std::string blob = test_model_blob();
  auto two_so = package_items(stand_in_so(), &blob);
  two_so.push_back({"pkg/data/aotinductor/model/other.wrapper.so", stand_in_so()});
  refuse("two .so files in one model folder", zip_package(work_, "twoso.pt2", two_so),
         {"has 2 .so files", "other.wrapper.so", "refusing to guess"});

  // Two model folders and no "model": the error lists them; each loads by name.
  std::vector<ZipItem> two;
  for (const std::string m : {"encoder", "decoder"}) {
    for (ZipItem item : package_items(stand_in_so(), &blob)) {
      const std::string from = "/model/", to = "/" + m + "/";
      const size_t at = item.name.find(from);
      if (at != std::string::npos) item.name.replace(at, from.size(), to);
      if (item.name.find("/aotinductor/") != std::string::npos) two.push_back(item);
    }
  }
  two.push_back({"pkg/archive_format", "pt2"});
  const std::string pkg = zip_package(work_, "twomodels.pt2", two);
  refuse("two models, none named 'model'", pkg,
         {"has no model 'model'", "models there: decoder, encoder"});
  LoadOptions decoder;
  decoder.model_name = "decoder";
  FreshTmpdir tmp;
  {
    const Model m = Model::load(pkg, decoder);
    EXPECT_EQ(m.info().so_name, "pkg/data/aotinductor/decoder/abc.wrapper.so");
    record_case(kArea, "two models, one chosen with LoadOptions::model_name", "loads", "");
  }
  EXPECT_EQ(tmp.listing(), "");
}

TEST_F(RobustPackages, WrongMachineOrNotElf) {
  ElfSpec arm = loadable_spec();
  arm.machine = aotrt::package::host_elf_machine() == EM_AARCH64 ? EM_X86_64 : EM_AARCH64;
  refuse(".so for another architecture",
         zip_package(work_, "arm.pt2", package_items(make_elf(arm))),
         {"the model .so is built for " + aotrt::package::elf_machine_name(arm.machine),
          "export the model on the machine type that will run it"});
  std::string elf32 = make_elf(loadable_spec());
  elf32[EI_CLASS] = ELFCLASS32;
  refuse(".so that is 32-bit", zip_package(work_, "elf32.pt2", package_items(elf32)),
         {"(32-bit, little-endian)"});
  std::string big = make_elf(loadable_spec());
  big[EI_DATA] = ELFDATA2MSB;
  refuse(".so that is big-endian", zip_package(work_, "big.pt2", package_items(big)),
         {"big-endian"});
  refuse(".so that is not ELF",
         zip_package(work_, "notelf.pt2", package_items(std::string(4096, 'x'))),
         {"is not an ELF file"});
  std::string bad_headers = make_elf(loadable_spec());
  Elf64_Ehdr eh;
  std::memcpy(&eh, bad_headers.data(), sizeof eh);
  eh.e_shoff = uint64_t{1} << 40;
  std::memcpy(bad_headers.data(), &eh, sizeof eh);
  refuse(".so whose section headers point outside it",
         zip_package(work_, "shoff.pt2", package_items(bad_headers)), {"lie outside the file"});
  std::string exe = make_elf(loadable_spec());
  std::memcpy(&eh, exe.data(), sizeof eh);
  eh.e_type = ET_EXEC;
  std::memcpy(exe.data(), &eh, sizeof eh);
  refuse(".so that is an executable", zip_package(work_, "exec.pt2", package_items(exe)),
         {"is not a shared library"});
}

TEST_F(RobustPackages, MissingShimsLibtorchAndProxyExecutor) {
  ElfSpec missing = loadable_spec();
  missing.undefined.push_back("aoti_torch_cpu_frobnicate_out");
  missing.undefined.push_back("aoti_torch_cpu_zorch");
  refuse(".so needing shims aotrt lacks",
         zip_package(work_, "shims.pt2", package_items(make_elf(missing))),
         {"needs 2 aoti_* symbol(s) this aotrt does not provide: aoti_torch_cpu_frobnicate_out, "
          "aoti_torch_cpu_zorch"});
  ElfSpec libtorch = loadable_spec();
  libtorch.needed = {"libtorch.so", "libtorch_cpu.so", "libc10.so", "libc.so.6"};
  refuse("libtorch linked (synthetic DT_NEEDED)",
         zip_package(work_, "libtorch.pt2", package_items(make_elf(libtorch))),
         {"needs libtorch.so, libtorch_cpu.so, libc10.so (DT_NEEDED)",
          "aot_inductor.link_libtorch\": False"});
  ElfSpec proxy = loadable_spec();
  proxy.undefined.push_back("aoti_torch_proxy_executor_call_function");
  refuse(".so calling the proxy executor, package without its JSON",
         zip_package(work_, "proxy.pt2", package_items(make_elf(proxy))),
         {"proxy executor"});
  ElfSpec no_api = loadable_spec();
  no_api.defined = {"main"};
  refuse(".so without the container C API",
         zip_package(work_, "noapi.pt2", package_items(make_elf(no_api))),
         {"does not export AOTInductorModelContainerCreateWithDevice"});
  // Passes every check made on the file, but dlopen refuses it.
  refuse(".so that dlopen refuses",
         zip_package(work_, "nophdr.pt2", package_items(make_elf(loadable_spec()))),
         {"cannot load the model .so of"});
}

TEST_F(RobustPackages, UnsafeEntryNamesWriteNothingOutside) {
  // Where an extractor that trusted the names would have written.
  const std::string abs_target = work_.path() + "/abs_escape_marker.so";
  for (const auto& [name, entry] : std::vector<std::pair<std::string, std::string>>{
           {"entry name with ..", "pkg/../../escape_marker.so"},
           {"entry name with .. inside the model folder",
            "pkg/data/aotinductor/model/../../../../escape_marker.wrapper.so"},
           {"absolute entry name", abs_target},
           {"backslash entry name", "pkg\\..\\..\\escape_marker.so"}}) {
    auto items = package_items(stand_in_so());
    items.push_back({entry, "#!/bin/sh\necho pwned\n"});
    const std::string pkg = zip_package(work_, "unsafe.pt2", items);
    std::string where;
    {
      FreshTmpdir tmp;
      where = tmp.path();
      expect_refused(kArea, name, ErrorKind::kPackage, {"entry name '" + entry + "'", "refusing"},
                     [&] { Model::load(pkg); });
      EXPECT_EQ(tmp.listing(), "") << name;
      expect_refused(kArea, name + " (inspect)", ErrorKind::kPackage, {"refusing"},
                     [&] { aotrt::inspect_package(pkg); });
      EXPECT_EQ(tmp.listing(), "") << name;
    }
    namespace fs = std::filesystem;
    for (const fs::path& p : {fs::path(where).parent_path() / "escape_marker.so",
                              fs::path(where).parent_path().parent_path() / "escape_marker.so",
                              fs::path(work_.path()) / "escape_marker.so", fs::path(abs_target),
                              fs::current_path() / "escape_marker.so"}) {
      EXPECT_FALSE(fs::exists(p)) << name << " created " << p;
    }
  }
}

TEST_F(RobustPackages, DeclaredSizesLargerThanTheFile) {
  const std::string bytes = read_file(good_package(work_));
  const auto local = find_all(bytes, 0x04034b50), central = find_all(bytes, 0x02014b50);
  ASSERT_EQ(local.size(), central.size());
  // Find the .so entry's headers (stored uncompressed by write_zip).
  size_t so_central = 0, so_local = 0;
  for (size_t i = 0; i < central.size(); ++i) {
    uint16_t name_len = 0;
    std::memcpy(&name_len, bytes.data() + central[i] + 28, 2);
    if (bytes.compare(central[i] + 46, name_len, "pkg/data/aotinductor/model/abc.wrapper.so") == 0) {
      so_central = central[i];
      std::memcpy(&so_local, bytes.data() + central[i] + 42, 4);
    }
  }
  ASSERT_NE(so_central, 0u);
  auto declare = [&](uint32_t size, const std::string& file) {
    std::string b = bytes;
    for (const size_t off : {so_local + 22, so_central + 24}) std::memcpy(&b[off], &size, 4);
    const std::string path = work_.path() + "/" + file;
    write_file(path, b);
    return path;
  };
  refuse("declared size 4 GB (zip bomb bound)", declare(0xfffffff0u, "bomb.pt2"),
         {"uncompressed bytes", "zip bomb"});
  const uint32_t real = static_cast<uint32_t>(stand_in_so().size());
  refuse("declared size 2x the entry", declare(2 * real, "double.pt2"),
         {"abc.wrapper.so"});
  refuse("declared size 1 byte short", declare(real - 1, "short.pt2"), {"abc.wrapper.so"});
}

TEST_F(RobustPackages, CorruptEntryData) {
  // Deflated, so a flipped byte breaks the stream or the CRC.
  auto items = package_items(stand_in_so());
  items[4].deflate = true;
  std::string bytes = read_file(zip_package(work_, "deflated.pt2", items));
  const size_t name_at = bytes.find("pkg/data/aotinductor/model/abc.wrapper.so");
  ASSERT_NE(name_at, std::string::npos);
  // Flip bytes well inside the compressed data that follows the local header.
  for (size_t k = 0; k < 16; ++k) bytes[name_at + 400 + 37 * k] ^= 0x5a;
  const std::string bad = work_.path() + "/corrupt.pt2";
  write_file(bad, bytes);
  refuse("corrupt .so data (CRC)", bad, {bad});
}

TEST_F(RobustPackages, WeightsBlobOfTheWrongSize) {
  const std::string so = stand_in_so();
  const std::string blob = test_model_blob();
  refuse("weights blob missing", zip_package(work_, "noblob.pt2", package_items(so)),
         {"needs a weights blob (64 bytes of constants"});
  const std::string short_blob = blob.substr(0, 60);
  refuse("weights blob truncated",
         zip_package(work_, "short.pt2", package_items(so, &short_blob)),
         {"has 60 bytes but the model's constants take 64"});
  const std::string padded = blob + std::string(64, '\0');
  refuse("weights blob padded",
         zip_package(work_, "padded.pt2", package_items(so, &padded)),
         {"has 128 bytes but the model .so was exported with a 64-byte blob",
          "padded, or from another export"});
  const std::string empty;
  refuse("weights blob empty", zip_package(work_, "emptyblob.pt2", package_items(so, &empty)),
         {"has 0 bytes"});
  // Pickled weights (Note [Pickled weights]) need the model's weights_config.json.
  auto pickled = package_items(so);
  pickled.push_back({"pkg/data/weights/weight_0", "w"});
  refuse("weights as pickle_weights without weights_config.json",
         zip_package(work_, "pickle.pt2", pickled), {"pickle_weights", "weights_config.json"});
}

TEST_F(RobustPackages, BadMetadata) {
  const std::string so = stand_in_so();
  const std::string blob = test_model_blob();
  refuse("metadata not JSON",
         zip_package(work_, "mdjson.pt2", package_items(so, &blob, "{not json")),
         {"is not a JSON object"});
  refuse("metadata without AOTI_DEVICE_KEY",
         zip_package(work_, "mdkey.pt2", package_items(so, &blob, R"({"AOTI_PLATFORM": "linux"})")),
         {"has no AOTI_DEVICE_KEY"});
  refuse("metadata for device xpu",
         zip_package(work_, "xpu.pt2", package_items(so, &blob, R"({"AOTI_DEVICE_KEY": "xpu"})")),
         {"compiled for device 'xpu'"});
#ifndef AOTRT_WITH_CUDA
  refuse("CUDA package, aotrt built without CUDA",
         zip_package(work_, "cuda.pt2", package_items(so, &blob, R"({"AOTI_DEVICE_KEY": "cuda"})")),
         {"built without CUDA"});
#endif
  refuse("metadata of 2 MiB",
         zip_package(work_, "mdbig.pt2",
                     package_items(so, &blob, R"({"AOTI_DEVICE_KEY": "cpu", "pad": ")" +
                                                  std::string(2 << 20, 'p') + "\"}")),
         {"at most 1048576 are read into memory"});
  // An unreadable input layout record is advisory: the package still loads.
  FreshTmpdir tmp;
  {
    const Model m = Model::load(zip_package(
        work_, "badspec.pt2",
        package_items(so, &blob, R"({"AOTI_DEVICE_KEY": "cpu", "aotrt.inputs": "[{\"dtype\": 3}]"})")));
    ASSERT_EQ(m.info().input_specs.size(), 1u);
    EXPECT_FALSE(m.info().input_specs[0].has_value());
    record_case(kArea, "unreadable aotrt.inputs record", "loads (record ignored; the model's own checks apply)", "");
  }
  EXPECT_EQ(tmp.listing(), "");
}

TEST_F(RobustPackages, UnwritableTmpdir) {
  const std::string pkg = good_package(work_);
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", (work_.path() + "/no/such/folder").c_str(), 1);
  expect_refused(kArea, "TMPDIR that does not exist", ErrorKind::kPackage,
                 {"cannot make a temporary folder", "set TMPDIR to a writable folder"},
                 [&] { Model::load(pkg); });
  if (old) ::setenv("TMPDIR", saved.c_str(), 1); else ::unsetenv("TMPDIR");
}

TEST_F(RobustPackages, GoodPackageLoadsAndLeavesNothing) {
  const std::string pkg = good_package(work_);
  FreshTmpdir tmp;
  {
    Model m = Model::load(pkg);
    EXPECT_NE(tmp.listing(), "");  // the private folder, while loaded
    std::vector<float> x = {1, 2, 3, 4};
    aotrt::Tensor in = aotrt::Tensor::from_blob(x.data(), {4}, {1}, aotrt::ScalarType::Float32);
    const auto out = m.run({&in, 1});
    EXPECT_EQ(static_cast<const float*>(out[0].data_ptr())[3], 9.0f);
  }
  EXPECT_EQ(tmp.listing(), "");
  record_case(kArea, "the stand-in package itself (control)", "loads and runs", "");
}
