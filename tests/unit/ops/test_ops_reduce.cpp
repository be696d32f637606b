// The reduce family: hash_tensor (no C shim) through the proxy executor on the CPU, against
// torch eager's bits, sizes and strides (reference_reduce.inc; Note [Hash tensor
// semantics]), and its refusals.
#include <cstdint>
#include <string>
#include <vector>

#include "ops_testing.h"
#include "proxy_testing.h"

namespace aotrt::test {
namespace {

#include "reference_reduce.inc"

std::string ints_json(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return "[" + s + "]";
}

// As torch 2.13 writes the node: keyword arguments at their defaults (keepdim false, mode
// 0) are left out of the JSON, but the wrapper passes mode's int after dim's anyway
// (tests/e2e/test_ops_reduce.py runs such packages). A mode other than 0 is written out.
ProxyResult hash(AtenTensorHandle x, const std::vector<int64_t>& dims, bool keepdim,
                 int64_t mode = 0) {
  std::string inputs = R"([{"name": "self", "arg": {"as_tensor": {"name": "arg0_1"}}},
      {"name": "dim", "arg": {"as_ints": )" + ints_json(dims) + "}}";
  if (keepdim) inputs += R"(, {"name": "keepdim", "arg": {"as_bool": true}})";
  if (mode != 0) inputs += R"(, {"name": "mode", "arg": {"as_int": )" + std::to_string(mode) + "}}";
  inputs += "]";
  std::vector<int64_t> ints = dims;
  ints.push_back(mode);
  return run_proxy("aten::hash_tensor", inputs, ints, {x}, 1);
}

class OpsReduce : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsReduce, HashTensorMatchesTorchThroughTheProxyExecutor) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  if (!b.is_cpu()) GTEST_SKIP() << "a CPU proxy op";
  Tensor x = make_tensor(b, c.inputs[0]);
  const std::vector<int64_t> dims(c.ints.begin() + 1, c.ints.end());
  ProxyResult r = hash(x.get(), dims, c.ints[0] != 0);
  ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const Meta m = meta(r.outputs[0].get());
  const Values& want = c.outputs[0];  // sizes + [2]: (high, low) halves
  const Dims sizes(want.sizes.begin(), want.sizes.end() - 1);
  EXPECT_EQ(m.dtype, kU64);
  EXPECT_EQ(m.sizes, sizes);
  EXPECT_EQ(m.strides, row_major(sizes));
  void* data = nullptr;
  ASSERT_EQ(aoti_torch_get_data_ptr(r.outputs[0].get(), &data), AOTI_TORCH_SUCCESS);
  const auto* got = static_cast<const uint64_t*>(data);
  for (size_t i = 0; i < want.values.size() / 2; ++i) {
    const uint64_t bits = (static_cast<uint64_t>(want.values[2 * i]) << 32) |
                          static_cast<uint64_t>(want.values[2 * i + 1]);
    EXPECT_EQ(got[i], bits) << c.name << " element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsReduce, ::testing::ValuesIn(all_backends(kReduceCases)),
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
  refused(Values{kF32, {0, 2}, {2, 1}, 0, {}}, {}, 0, "argument 'dim' is empty (every dim)");
  refused(Values{kF32, {0, 2}, {2, 1}, 0, {}}, {0}, 0, "reduction dim 0 has size 0");
  refused(x, {1, -1}, 0, "dim 1 appears more than once");
}

}  // namespace
}  // namespace aotrt::test
