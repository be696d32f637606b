// Device-generic helpers of the op-family tests (tests/unit/ops/test_ops_<family>.cpp):
// tensors of any dtype made from double values through any view layout, results read
// back as doubles, ops looked up by their per-device names, and the comparison with
// torch eager's values, sizes, strides and dtypes that gen_ops_reference.py wrote
// into reference_<family>.inc.
//
// A CPU op that is missing fails its test; a CUDA op that is missing (its kernels
// not written yet) is reported SKIPPED with its name, never passed.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "conformance_backends.h"

namespace aotrt::test {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kNone = std::numeric_limits<int64_t>::min();  // an int? that is None
// The float8 dtypes' codes (c10::ScalarType), as gen_ops_reference.py names them.
constexpr int32_t kF8E5M2 = 23, kF8E4M3FN = 24, kF8E5M2FNUZ = 25, kF8E4M3FNUZ = 26;

// A tensor as torch describes it: dtype, sizes, strides, storage offset, and its
// elements in row-major order of sizes.
struct Values {
  int32_t dtype = kF32;
  Dims sizes, strides;
  int64_t offset = 0;
  std::vector<double> values;
};

// One torch eager call: inputs (tensors), int and float arguments in the order the
// family test passes them, and every output torch returned.
struct OpCase {
  const char* name;
  const char* op;  // the shim's name after aoti_torch_<device>_
  std::vector<Values> inputs;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<Values> outputs;
};

inline void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

// A view with v's layout inside a larger buffer on backend b (its other elements
// hold -77), holding v's values converted to v.dtype by aotrt's copy.
inline Tensor make_tensor(const Backend& b, const Values& v) {
  int64_t extent = v.offset + 1;
  for (size_t d = 0; d < v.sizes.size(); ++d) {
    if (v.sizes[d] == 0) extent = v.offset;
  }
  if (extent > v.offset) {
    for (size_t d = 0; d < v.sizes.size(); ++d) extent += (v.sizes[d] - 1) * v.strides[d];
  }
  const Dims flat{extent + 1}, one{1};
  Tensor parent = empty(b, flat, one, v.dtype);
  {
    HostTensor<double> fill(std::vector<double>(static_cast<size_t>(flat[0]), -77.0), flat);
    EXPECT_EQ(aoti_torch_copy_(parent.get(), fill.get(), 0), AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
  }
  Tensor view = reinterpret(parent.get(), v.sizes, v.strides, v.offset);
  if (numel_of(v.sizes) > 0) {
    HostTensor<double> host(v.values, v.sizes);
    EXPECT_EQ(aoti_torch_copy_(view.get(), host.get(), 0), AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
  }
  return view;  // holds a count on the parent's storage
}

// c's inputs on backend b; those whose bit is set in complex_mask come as
// torch.view_as_real of a complex tensor and are viewed back as complex.
inline std::vector<Tensor> make_inputs(const Backend& b, const OpCase& c, int64_t complex_mask) {
  using Unary = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle*);
  const std::string name = std::string(b.op_prefix) + "view_as_complex";
  const auto as_complex = reinterpret_cast<Unary>(dlsym(RTLD_DEFAULT, name.c_str()));
  std::vector<Tensor> in;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    Tensor t = make_tensor(b, c.inputs[i]);
    if ((complex_mask >> i) & 1) {
      Tensor z;
      EXPECT_NE(as_complex, nullptr) << name << " is missing";
      if (as_complex != nullptr) {
        EXPECT_EQ(as_complex(t.get(), z.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
      }
      t = std::move(z);
    }
    in.push_back(std::move(t));
  }
  return in;
}

// A tensor's elements (row-major) converted to double by aotrt's copy.
inline std::vector<double> values_of(AtenTensorHandle h) {
  const Meta m = meta(h);
  if (numel_of(m.sizes) == 0) return {};
  const Backend cpu = built_backends()[0];
  Tensor host = empty(cpu, m.sizes, row_major(m.sizes), kF64);
  EXPECT_EQ(aoti_torch_copy_(host.get(), h, 0), AOTI_TORCH_SUCCESS) << aotrt_last_error();
  return read<double>(host.get());
}

// |got - want| <= max(atol, rtol |want|), NaN only where torch has NaN, infinities equal.
inline ::testing::AssertionResult close_values(const std::vector<double>& got,
                                               const std::vector<double>& want, double rtol,
                                               double atol) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << got.size() << " elements, torch has " << want.size();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    const bool ok = std::isnan(w)   ? std::isnan(g)
                    : std::isinf(w) ? g == w
                                    : std::abs(g - w) <= std::max(atol, rtol * std::abs(w));
    if (!ok) {
      return ::testing::AssertionFailure() << "element " << i << " is " << g << ", torch has "
                                           << w << " (rtol " << rtol << ", atol " << atol << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// |got - want| <= tol * max(1, |want|), NaN only where torch has NaN, infinities equal.
// tol 0 asks for equality.
inline ::testing::AssertionResult same_values(const std::vector<double>& got,
                                              const std::vector<double>& want, double tol) {
  return close_values(got, want, tol, tol);
}

// Tolerance for results of a dtype computed as ATen computes them: exact for integers
// and bool, one rounding of the dtype for float16/bfloat16, 1e-6 relative otherwise
// (libm's exp/log1p against ATen's).
inline double tolerance_of(int32_t dtype) {
  switch (dtype) {
    case kF16: return 1e-3;
    case kBF16: return 8e-3;
    case kF32: return 1e-6;
    case kF64: return 1e-12;
    default: return 0;
  }
}

// Output h against torch's: dtype, sizes, strides (when check_strides) and values.
inline void expect_matches(AtenTensorHandle h, const Values& want, const std::string& what,
                           bool check_strides = true) {
  ASSERT_NE(h, nullptr) << what << ": no output";
  const Meta m = meta(h);
  EXPECT_EQ(m.dtype, want.dtype) << what << ": dtype";
  EXPECT_EQ(m.sizes, want.sizes) << what << ": sizes";
  if (check_strides) EXPECT_EQ(m.strides, want.strides) << what << ": strides";
  EXPECT_TRUE(same_values(values_of(h), want.values, tolerance_of(want.dtype))) << what;
}

// rc is a failure whose last error names `fn` and says `what`.
inline void expect_refused(AOTITorchError rc, const std::string& fn, const std::string& what) {
  EXPECT_EQ(rc, AOTI_TORCH_FAILURE) << what;
  const std::string msg = aotrt_last_error();
  EXPECT_NE(msg.find(fn), std::string::npos) << msg;
  EXPECT_NE(msg.find(what), std::string::npos) << msg;
}

// The op `name` of backend b (aoti_torch_<cpu|cuda>_<name>), or null.
template <typename Fn>
Fn find_op(const Backend& b, const std::string& name) {
  const std::string full = std::string(b.op_prefix) + name;
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, full.c_str()));
}

// Looks the op up into `var`; a missing CPU op fails, a missing CUDA op skips.
#define AOTRT_FIND_OP(var, Fn, backend, name)                                        \
  auto var = ::aotrt::test::find_op<Fn>(backend, name);                              \
  if (var == nullptr) {                                                              \
    if ((backend).is_cpu()) FAIL() << (backend).op_prefix << (name) << " is missing"; \
    GTEST_SKIP() << (backend).op_prefix << (name) << " has no kernel on this device yet"; \
  }

// A CUDA entry point whose family has no CUDA kernels yet fails with "no CUDA kernel":
// reported SKIPPED with the message. On the CPU every op has its kernels.
#define AOTRT_SKIP_IF_NO_KERNEL(backend, rc)                                             \
  if ((rc) != AOTI_TORCH_SUCCESS && !(backend).is_cpu() &&                               \
      std::string(aotrt_last_error()).find("has no CUDA kernel") != std::string::npos) { \
    GTEST_SKIP() << aotrt_last_error();                                                  \
  }

// A test of CUDA-only behaviour is reported SKIPPED in a build without CUDA, never passed.
#define AOTRT_SKIP_WITHOUT_CUDA()                                                   \
  if (::aotrt::test::built_backends().size() < 2) {                                 \
    GTEST_SKIP() << "this build has no CUDA backend";                               \
  }

// Every (backend, case) pair, for INSTANTIATE_TEST_SUITE_P.
struct BackendCase {
  Backend backend;
  OpCase c;
};
inline void PrintTo(const BackendCase& p, std::ostream* os) {
  *os << p.backend.name << "/" << p.c.name;
}
// `cpu_only` names cases whose reference holds for ATen's CPU kernels only (ATen's
// CUDA kernels accumulate in other types): they are not instantiated on CUDA, whose
// own expectations for the same inputs are tests of tests/unit/cuda/.
inline std::vector<BackendCase> all_backends(const std::vector<OpCase>& cases,
                                             const std::vector<std::string>& cpu_only = {}) {
  std::vector<BackendCase> out;
  for (const Backend& b : built_backends()) {
    for (const OpCase& c : cases) {
      const bool skip = !b.is_cpu() &&
                        std::find(cpu_only.begin(), cpu_only.end(), c.name) != cpu_only.end();
      if (!skip) out.push_back({b, c});
    }
  }
  return out;
}
inline std::string backend_case_name(const ::testing::TestParamInfo<BackendCase>& info) {
  return std::string(info.param.backend.name) + "_" + info.param.c.name;
}

}  // namespace aotrt::test
