// libFuzzer target: the oneDNN descriptor decoder (core/onednn_md.h, Note
// [Serialized oneDNN descriptors]). The input is a blob (seeded from real
// torch 2.13 blobs in corpus/onednn_md), then the tensor's sizes, dtype and
// the constant's byte size, as a package's wrapper source states them (the
// preflight decodes each _mkldnn constant with these before the model loads).
//
// Invariants, beyond "no crash, no sanitizer report":
//   - decode_onednn_md accepts the blob or throws aotrt::Error naming the
//     constant;
//   - when it accepts, unpacking reads only inside the constant's bytes
//     (a buffer of exactly that size: AddressSanitizer sees any read past it)
//     and writes every element of the plain tensor once.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "aotrt/error.h"
#include "core/onednn_md.h"
#include "core/view.h"

namespace {

constexpr int64_t kMaxElements = 1 << 16;
constexpr size_t kBlobBytes = 772;

[[noreturn]] void violated(const char* what) {
  std::fprintf(stderr, "invariant violated: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace aotrt;
  FuzzedDataProvider in(data, size);
  std::vector<uint8_t> blob = in.ConsumeBytes<uint8_t>(
      in.ConsumeBool() ? kBlobBytes : in.ConsumeIntegralInRange<size_t>(0, 1024));
  const int ndim = in.ConsumeIntegralInRange<int>(0, 6);
  std::vector<int64_t> sizes;
  int64_t numel = 1;
  for (int i = 0; i < ndim; ++i) {
    sizes.push_back(in.ConsumeIntegralInRange<int64_t>(0, 64));
    numel *= std::max<int64_t>(sizes.back(), 1);
  }
  if (numel > kMaxElements) return 0;
  const ScalarType dtype = in.ConsumeBool() ? ScalarType::Float32 : ScalarType::BFloat16;
  const int64_t bytes = in.ConsumeIntegralInRange<int64_t>(0, int64_t{4} * kMaxElements);
  OnednnBlockedDesc desc;
  try {
    desc = decode_onednn_md(blob, sizes, dtype, bytes, "constant 'fuzz'");
  } catch (const Error& e) {
    if (std::string(e.what()).find("constant 'fuzz'") == std::string::npos) {
      violated("a refusal does not name the constant");
    }
    return 0;
  }
  const size_t itemsize = element_size(dtype);
  std::vector<uint8_t> src(static_cast<size_t>(bytes));  // exactly the constant's bytes
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7);
  int64_t plain_numel = 1;
  for (int64_t s : sizes) plain_numel *= s;
  if (plain_numel == 0) return 0;
  const std::vector<int64_t> strides = contiguous_strides(sizes);
  std::vector<uint8_t> dst(static_cast<size_t>(plain_numel) * itemsize);
  unpack_onednn_blocked(desc, src.data(), dst.data(), strides, itemsize);
  return 0;
}
