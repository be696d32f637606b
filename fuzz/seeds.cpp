// Writes the seed inputs of the fuzz targets: small but well-formed .pt2
// packages around synthetic ELF .so files (tests/unit/package_test_util.h),
// so that the package reader's fuzzing starts past the zip layer. Run by
// scripts/fuzz.sh into a scratch folder; the seeds are not committed.
//
//   fuzz_seeds DIR
#include <cstdio>
#include <string>

#include "package_test_util.h"

using namespace aotrt::testing;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  ElfSpec spec;
  spec.needed = {"libstdc++.so.6", "libc.so.6"};
  spec.undefined = {"aoti_torch_empty_strided", "aoti_torch_delete_tensor_object",
                    "__cxa_thread_atexit"};
  spec.defined = container_exports();
  const std::string blob = test_model_blob();
  ElfSpec libtorch = spec;
  libtorch.needed.push_back("libtorch_cpu.so");
  ElfSpec missing = spec;
  missing.undefined.push_back("aoti_torch_cpu_not_provided");
  const std::string elf = make_elf(spec);
  int n = 0;
  auto put = [&](const std::vector<ZipItem>& items) {
    write_zip(dir + "/seed_" + std::to_string(n++) + ".pt2", items);
  };
  put(package_items(elf, &blob));
  put(package_items(elf));
  put(package_items(make_elf(libtorch), &blob));
  put(package_items(make_elf(missing), &blob));
  put(package_items(elf, &blob, R"({"AOTI_DEVICE_KEY": "cuda"})", ""));
  auto deflated = package_items(elf, &blob);
  for (ZipItem& item : deflated) item.deflate = true;
  put(deflated);
  write_file(dir + "/seed_elf.so", elf);
  std::printf("wrote %d seed packages and one ELF into %s\n", n, dir.c_str());
  return 0;
}
