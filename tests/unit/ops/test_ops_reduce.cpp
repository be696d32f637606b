// The reduce family against torch eager's values, dtypes and strides (reference_reduce.inc):
// c_shim_aten.h's device-generic amax through the C ABI (Note [Reduce semantics]), and
// hash_tensor (no C shim) through the proxy executor, on every built backend, with the
// CPU's refusals (Note [Hash tensor semantics]).
#include <cstdint>
#include <string>
#include <vector>

#include "ops_testing.h"
#include "proxy_testing.h"

namespace aotrt::test {
namespace {

#include "reference_reduce.inc"

std::vector<OpCase> cases_of(const char* op) {
  return cases_where(kReduceCases, [&](const OpCase& c) { return std::string(c.op) == op; }, true);
}

using Amax = AOTITorchError (*)(AtenTensorHandle, const int64_t*, int64_t, int32_t,
                                AtenTensorHandle*);

Amax find_amax() {
  return reinterpret_cast<Amax>(dlsym(RTLD_DEFAULT, "aoti_torch_aten_amax"));
}

class OpsReduceAmax : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsReduceAmax, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const Amax amax = find_amax();
  ASSERT_NE(amax, nullptr) << "aoti_torch_aten_amax is missing";
  Tensor x = make_tensor(b, c.inputs[0]);
  const std::vector<int64_t> dims(c.ints.begin() + 1, c.ints.end());
  Tensor out;
  const AOTITorchError rc = amax(x.get(), dims.data(), static_cast<int64_t>(dims.size()),
                                 static_cast<int32_t>(c.ints[0]), out.out());
  AOTRT_SKIP_IF_NO_KERNEL(b, rc);
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  expect_matches(out.get(), c.outputs[0], c.name);
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsReduceAmax, ::testing::ValuesIn(all_backends(cases_of("amax"))),
                         backend_case_name);

TEST(OpsReduceRefusals, AmaxNamesTheFunctionAndWhatIsWrong) {
  const Backend b = built_backends()[0];
  const Amax amax = find_amax();
  ASSERT_NE(amax, nullptr);
  Tensor x = make_tensor(b, Values{kF32, {2, 3}, {3, 1}, 0, {1, 2, 3, 4, 5, 6}});
  Tensor e = make_tensor(b, Values{kF32, {0, 3}, {3, 1}, 0, {}});
  Tensor z = make_tensor(b, Values{kF32, {3, 2}, {2, 1}, 0, {1, 2, 3, 4, 5, 6}});
  Tensor zc;
  AOTRT_FIND_OP(as_complex, AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle*), b,
                "view_as_complex");
  ASSERT_EQ(as_complex(z.get(), zc.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  Tensor out;
  const int64_t twice[] = {1, -1}, zero[] = {0}, far[] = {2};
  expect_refused(amax(x.get(), twice, 2, 0, out.out()), "aoti_torch_aten_amax",
                 "dim 1 appears multiple times in the list of dims");
  expect_refused(amax(e.get(), zero, 1, 0, out.out()), "aoti_torch_aten_amax",
                 "Expected reduction dim 0 to have non-zero size");
  expect_refused(amax(e.get(), nullptr, 0, 0, out.out()), "aoti_torch_aten_amax",
                 "Expected reduction dim 0 to have non-zero size");
  expect_refused(amax(x.get(), far, 1, 0, out.out()), "aoti_torch_aten_amax",
                 "Dimension out of range");
  expect_refused(amax(zc.get(), zero, 1, 0, out.out()), "aoti_torch_aten_amax",
                 "not implemented for 'complex64'");
  expect_refused(amax(nullptr, zero, 1, 0, out.out()), "aoti_torch_aten_amax", "self");
  EXPECT_EQ(out.get(), nullptr);
}

std::string ints_json(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return "[" + s + "]";
}

// As torch 2.13 writes the node: keyword arguments at their defaults (keepdim false, mode
// 0) are left out of the JSON, but the wrapper passes mode's int after dim's anyway
// (tests/e2e/test_ops_reduce.py runs such packages). A mode other than 0 is written out.
ProxyResult hash(AtenTensorHandle x, const std::vector<int64_t>& dims, bool keepdim,
                 int64_t mode = 0, const std::string& device = "cpu") {
  std::string inputs = R"([{"name": "self", "arg": {"as_tensor": {"name": "arg0_1"}}},
      {"name": "dim", "arg": {"as_ints": )" + ints_json(dims) + "}}";
  if (keepdim) inputs += R"(, {"name": "keepdim", "arg": {"as_bool": true}})";
  if (mode != 0) inputs += R"(, {"name": "mode", "arg": {"as_int": )" + std::to_string(mode) + "}}";
  inputs += "]";
  std::vector<int64_t> ints = dims;
  ints.push_back(mode);
  return run_proxy("aten::hash_tensor", inputs, ints, {x}, 1, false, device);
}

class OpsReduceHash : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsReduceHash, HashTensorMatchesTorchThroughTheProxyExecutor) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  Tensor x = make_tensor(b, c.inputs[0]);
  const std::vector<int64_t> dims(c.ints.begin() + 1, c.ints.end());
  ProxyResult r = hash(x.get(), dims, c.ints[0] != 0, 0, proxy_device(b));
  ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const Meta m = meta(r.outputs[0].get());
  const Values& want = c.outputs[0];  // sizes + [2]: (high, low) halves
  const Dims sizes(want.sizes.begin(), want.sizes.end() - 1);
  EXPECT_EQ(m.dtype, kU64);
  EXPECT_EQ(m.sizes, sizes);
  EXPECT_EQ(m.strides, row_major(sizes));
  // The bits on the host (values_of's doubles would round them).
  Tensor host = empty(built_backends()[0], m.sizes, row_major(m.sizes), kU64);
  ASSERT_EQ(aoti_torch_copy_(host.get(), r.outputs[0].get(), 0), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  void* data = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(host.get(), &data), AOTI_TORCH_SUCCESS);
  const auto* got = static_cast<const uint64_t*>(data);
  for (size_t i = 0; i < want.values.size() / 2; ++i) {
    const uint64_t bits = (static_cast<uint64_t>(want.values[2 * i]) << 32) |
                          static_cast<uint64_t>(want.values[2 * i + 1]);
    EXPECT_EQ(got[i], bits) << c.name << " element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsReduceHash, ::testing::ValuesIn(all_backends(cases_of("hash_tensor"))),
                         backend_case_name);

TEST(OpsReduceRefusals, HashTensorNamesTheOpAndTheArgument) {
  const Backend b = built_backends()[0];
  auto refused = [&](const Values& v, const std::vector<int64_t>& dims, int64_t mode,
                     const std::string& what) {
    Tensor x = make_tensor(b, v);
    ProxyResult r = hash(x.get(), dims, false, mode);
    EXPECT_EQ(r.rc, AOTI_TORCH_FAILURE) << what;
    const std::string msg = aotrt_last_error();
    EXPECT_NE(msg.find("aten::hash_tensor"), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  };
  const Values x{kF32, {2, 2}, {2, 1}, 0, {1, 2, 3, 4}};
  refused(x, {}, 1, "unknown hash_tensor mode 1");
  refused(Values{kC64, {1}, {1}, 0, {1}}, {}, 0, "argument 'self' is complex64");
  refused(Values{kU32, {1}, {1}, 0, {1}}, {}, 0, "argument 'self' is uint32");
  refused(Values{kF32, {0, 2}, {2, 1}, 0, {}}, {}, 0, "Expected reduction dim 0 to have non-zero size");
  refused(Values{kF32, {0, 2}, {2, 1}, 0, {}}, {0}, 0, "Expected reduction dim 0 to have non-zero size");
  refused(x, {1, -1}, 0, "dim 1 appears multiple times");
}

}  // namespace
}  // namespace aotrt::test
