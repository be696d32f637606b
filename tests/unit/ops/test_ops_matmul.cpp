// The integer products of the matmul family (mm, addmm, bmm, baddbmm .out; Note
// [Integer matmul on the CPU]) and _grouped_mm (Note [Grouped matmul]) through the C ABI,
// against torch eager's values (reference_matmul.inc, from gen_ops_reference.py): operands
// and out through strided views, wrap-around on overflow, beta and alpha cast to the
// integer type; the grouped products' group layouts and padded output strides. The integer
// rows run on CUDA too (aotrt's integer kernel, Note [Integer matmul on CUDA]: ATen's CUDA
// matmul has none, so the CPU's values are the reference); _grouped_mm's rows run on CUDA too
// (Note [Grouped tiles on the device]: float32 sums, as the CPU's), and CUDA's grouped
// products of several tiles, groups meeting inside a tile, are checked against the CPU's.
// mm.dtype_out (Note [Matmul with an output dtype]) against the float64 product (torch's
// CPU has no kernel for it): its C shim on CUDA, the family op on the CPU (torch declares the
// entry for CUDA only); and ATen's refusals.
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "aotrt/dtype.h"
#include "core/handles.h"
#include "cpu/isa.h"
#include "ops/matmul.h"
#include "ops_testing.h"
#include "shim/boundary.h"

namespace aotrt::test {
namespace {

#include "reference_matmul.inc"

using Product = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle);
using AddProduct = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                      AtenTensorHandle, double, double);
using GroupedMm = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle*,
                                     AtenTensorHandle*, int32_t*, AtenTensorHandle*);

using MmDtype = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle, int32_t);

constexpr const char* kCpuMmDtype = "cpu mm_dtype_out";

// The CPU stand-in of aoti_torch_cuda_mm_dtype_out: the family op behind the same boundary.
AOTITorchError cpu_mm_dtype_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2,
                                int32_t out_dtype) {
  return shim_boundary(kCpuMmDtype, [&] {
    ops::mm_dtype_out(handle_get(out, "out"), handle_get(self, "self"), handle_get(mat2, "mat2"),
                      static_cast<ScalarType>(out_dtype), kCpuMmDtype);
  });
}

MmDtype mm_dtype_of(const Backend& b) {
  return b.is_cpu() ? cpu_mm_dtype_out : find_op<MmDtype>(b, "mm_dtype_out");
}

class OpsMatmul : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsMatmul, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  if (std::string(c.op) == "_grouped_mm") {
    AOTRT_FIND_OP(f, GroupedMm, b, "_grouped_mm");
    AtenTensorHandle offs = c.ints[0] != 0 ? in[2].get() : nullptr;
    Tensor out;
    ASSERT_EQ(f(in[0].get(), in[1].get(), c.ints[0] != 0 ? &offs : nullptr, nullptr, nullptr,
                out.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    expect_matches(out.get(), c.outputs[0], c.name);
    return;
  }
  const std::string op = std::string(c.op) + "_out";
  AOTITorchError rc;
  if (op == "mm_dtype_out") {
    const MmDtype f = mm_dtype_of(b);
    if (f == nullptr) GTEST_SKIP() << b.op_prefix << op << " is missing";
    rc = f(in[0].get(), in[1].get(), in[2].get(), static_cast<int32_t>(c.ints[0]));
  } else if (c.floats.empty()) {
    AOTRT_FIND_OP(f, Product, b, op);
    rc = f(in[0].get(), in[1].get(), in[2].get());
  } else {
    AOTRT_FIND_OP(f, AddProduct, b, op);
    rc = f(in[0].get(), in[1].get(), in[2].get(), in[3].get(), c.floats[0], c.floats[1]);
  }
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  expect_matches(in[0].get(), c.outputs[0], c.name);
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsMatmul,
                         ::testing::ValuesIn(all_backends(kMatmulCases)),
                         backend_case_name);

// Enough rows for the parallel loop (on CUDA, several tiles, partial ones at the edges):
// [2, 70, 33] @ [2, 33, 40] int32 through a transposed batch2, against a serial product
// that wraps in uint32.
TEST(OpsMatmulLarge, ParallelIntegerRowsMatchASerialReference) {
  for (const Backend& b : built_backends()) {
    AOTRT_FIND_OP(f, Product, b, "bmm_out");
    const int64_t B = 2, M = 70, K = 33, N = 40;
    Values a{kI32, {B, M, K}, {M * K, K, 1}, 0, {}};
    Values w{kI32, {B, K, N}, {K * N, 1, K}, 0, {}};
    for (int64_t i = 0; i < B * M * K; ++i) a.values.push_back(static_cast<double>((i * 7919) % 100003 - 50000) * 40000);
    for (int64_t i = 0; i < B * K * N; ++i) w.values.push_back(static_cast<double>((i * 31) % 97) - 48);
    Tensor ta = make_tensor(b, a), tw = make_tensor(b, w);
    Tensor out = make_tensor(b, Values{kI32, {B, M, N}, {M * N, N, 1}, 0, std::vector<double>(B * M * N, 0)});
    ASSERT_EQ(f(out.get(), ta.get(), tw.get()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    // w's values are listed row-major over its sizes, whatever its strides.
    std::vector<double> want;
    for (int64_t p = 0; p < B; ++p)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          uint32_t s = 0;
          for (int64_t k = 0; k < K; ++k) {
            const auto x = static_cast<uint32_t>(static_cast<int64_t>(a.values[(p * M + i) * K + k]));
            const auto y = static_cast<uint32_t>(static_cast<int64_t>(w.values[(p * K + k) * N + j]));
            s += x * y;
          }
          want.push_back(static_cast<double>(static_cast<int32_t>(s)));
        }
    expect_matches(out.get(), Values{kI32, {B, M, N}, {M * N, N, 1}, 0, want}, "bmm int32");
  }
}

// bfloat16 mm of 1..8 rows against a [K, N] weight read along K (the few-row product,
// Note [Few-row products]) with K = 2100, past each row count's block of K in the AVX2
// kernel, and a K tail; portable and AVX2. Eighths in [-1, 1] times sixteenths in
// [-1, 1]: every float32 sum is exact in any order, so the output is the exact sum
// rounded once to bfloat16.
TEST(OpsMatmulLarge, FewBf16RowsPastTheKBlocksAreExact) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(f, Product, b, "mm_out");
  const int64_t N = 37, K = 2100;
  Values w{kBF16, {K, N}, {1, K}, 0, {}};
  for (int64_t i = 0; i < N * K; ++i) w.values.push_back(static_cast<double>((i * 37) % 33 - 16) / 16);
  Tensor tw = make_tensor(b, w);
  for (int64_t M = 1; M <= 8; ++M) {
    Values x{kBF16, {M, K}, {K, 1}, 0, {}};
    for (int64_t i = 0; i < M * K; ++i) x.values.push_back(static_cast<double>((i * 13 + M) % 17 - 8) / 8);
    std::vector<double> want;
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += x.values[i * K + k] * w.values[k * N + n];
        want.push_back(bfloat16_to_float(float_to_bfloat16(static_cast<float>(s))));
      }
    }
    Tensor tx = make_tensor(b, x);
    for (const bool portable : {false, true}) {
      SCOPED_TRACE(std::to_string(M) + " rows" + (portable ? ", portable" : ""));
      std::optional<cpu::PortableKernels> fallback;
      if (portable) fallback.emplace();
      Tensor out = make_tensor(b, Values{kBF16, {M, N}, {N, 1}, 0, std::vector<double>(M * N, 0.0)});
      ASSERT_EQ(f(out.get(), tx.get(), tw.get()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
      EXPECT_TRUE(same_values(values_of(out.get()), want, 0));
    }
  }
}

TEST(OpsMatmulRefusals, BoolIsRefusedLikeATen) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(f, Product, b, "mm_out");
  Tensor x = make_tensor(b, Values{kBool, {2, 2}, {2, 1}, 0, {1, 0, 1, 1}});
  Tensor out = make_tensor(b, Values{kBool, {2, 2}, {2, 1}, 0, {0, 0, 0, 0}});
  ASSERT_NE(f(out.get(), x.get(), x.get()), AOTI_TORCH_SUCCESS);
  const std::string msg = aotrt_last_error();
  EXPECT_NE(msg.find("aoti_torch_cpu_mm_out"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bool"), std::string::npos) << msg;
}

// What ATen's _grouped_mm refuses, aotrt refuses with its words.
// ATen's checks of _mm_dtype_out_cuda, in its order and with its messages.
TEST(OpsMatmulRefusals, MmDtypeRefusesWhatATenRefuses) {
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    const MmDtype f = mm_dtype_of(b);
    ASSERT_NE(f, nullptr) << b.op_prefix << "mm_dtype_out is missing";
    const std::string fn = b.is_cpu() ? kCpuMmDtype : "aoti_torch_cuda_mm_dtype_out";
    Tensor a = empty(b, {2, 4}, kBF16), w = empty(b, {4, 3}, kBF16), out = empty(b, {2, 3}, kF32);
    Tensor a3 = empty(b, {1, 2, 4}, kBF16), w5 = empty(b, {5, 3}, kBF16);
    Tensor wh = empty(b, {4, 3}, kF16), af = empty(b, {2, 4}, kF32), wf = empty(b, {4, 3}, kF32);
    Tensor out16 = empty(b, {2, 3}, kF16), out64 = empty(b, {2, 3}, kF64);
    expect_refused(f(out.get(), a3.get(), w.get(), kF32), fn, "self must be a matrix, got 3-D tensor");
    expect_refused(f(out.get(), a.get(), a3.get(), kF32), fn, "mat2 must be a matrix, got 3-D tensor");
    expect_refused(f(out.get(), a.get(), w5.get(), kF32), fn,
                   "mat1 and mat2 shapes cannot be multiplied (2x4 and 5x3)");
    expect_refused(f(out.get(), a.get(), w.get(), kF16), fn,
                   "out_dtype must be the same as the dtype of the provided out tensor");
    expect_refused(f(out.get(), a.get(), wh.get(), kF32), fn, "input dtypes must be the same");
    expect_refused(f(out16.get(), af.get(), wf.get(), kF16), fn,
                   "out_dtype must be the same as input dtype or fp32 for fp16/bf16 inputs");
    expect_refused(f(out64.get(), a.get(), w.get(), kF64), fn,
                   "out_dtype must be the same as input dtype or fp32 for fp16/bf16 inputs");
  }
}

TEST(OpsMatmulRefusals, GroupedMmRefusesWhatATenRefuses) {
  for (const Backend& b : built_backends()) {
  SCOPED_TRACE(b.name);
  AOTRT_FIND_OP(f, GroupedMm, b, "_grouped_mm");
  auto zeros = [&](int32_t dtype, Dims sizes, Dims strides = {}) {
    if (strides.empty()) strides = row_major(sizes);
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return make_tensor(b, Values{dtype, sizes, strides, 0, std::vector<double>(n, 0)});
  };
  Tensor a = zeros(kF32, {6, 8}), w = zeros(kF32, {2, 8, 4}), a3 = zeros(kF32, {2, 6, 8});
  Tensor offs_t = zeros(kI32, {2}), offs64_t = zeros(kI64, {2}), bias_t = zeros(kF32, {2, 4});
  AtenTensorHandle offs = offs_t.get(), offs64 = offs64_t.get(), bias = bias_t.get();
  const std::string fn = std::string(b.op_prefix) + "_grouped_mm";
  Tensor out;
  expect_refused(f(a.get(), w.get(), nullptr, nullptr, nullptr, out.out()), fn,
                 "Have to provide offsets if there is a 2d matrix");
  expect_refused(f(a3.get(), w.get(), &offs, nullptr, nullptr, out.out()), fn,
                 "no offset if both matrices are 3d");
  expect_refused(f(a.get(), w.get(), &offs64, nullptr, nullptr, out.out()), fn,
                 "Offsets have to be int32");
  expect_refused(f(a.get(), w.get(), &offs, &bias, nullptr, out.out()), fn, "Bias not supported");
  int32_t f64 = 7;  // torch.float64's code
  expect_refused(f(a.get(), w.get(), &offs, nullptr, &f64, out.out()), fn,
                 "output dtype must match `mat_a` dtype");
  Tensor d = zeros(kF64, {6, 8});
  expect_refused(f(d.get(), w.get(), &offs, nullptr, nullptr, out.out()), fn,
                 "Expected mat_a to be Float32, BFloat16 or Float16 matrix, got float64");
  Tensor h = zeros(kBF16, {2, 8, 8});
  expect_refused(f(a.get(), h.get(), &offs, nullptr, nullptr, out.out()), fn, "same dtype");
  Tensor k = zeros(kF32, {2, 6, 4});
  expect_refused(f(a.get(), k.get(), &offs, nullptr, nullptr, out.out()), fn,
                 "contraction dimension of mat_a and mat_b must match");
  Tensor three = zeros(kF32, {3, 8, 4});
  expect_refused(f(a.get(), three.get(), &offs, nullptr, nullptr, out.out()), fn,
                 "matrix batch sizes have to match");
  Tensor odd = zeros(kF32, {6, 6}, {6, 1});  // rows of 24 bytes
  Tensor w6 = zeros(kF32, {2, 6, 4});
  expect_refused(f(odd.get(), w6.get(), &offs, nullptr, nullptr, out.out()), fn,
                 "strides should be multiple of 16 bytes");
  Tensor gapped = zeros(kF32, {6, 8}, {16, 2});  // no unit stride
  expect_refused(f(gapped.get(), w.get(), &offs, nullptr, nullptr, out.out()), fn,
                 "Invalid strides/sizes");
  EXPECT_EQ(out.get(), nullptr);
  }
}

// Ranges are sliced as aten.slice slices them; what no range covers stays zero (ATen leaves
// it uninitialized, so no eager reference exists for those rows).
TEST(OpsMatmulGrouped, UncoveredRowsAreZeroAndRangesClamp) {
  for (const Backend& b : built_backends()) {
  SCOPED_TRACE(b.name);
  AOTRT_FIND_OP(f, GroupedMm, b, "_grouped_mm");
  Tensor a = make_tensor(b, Values{kF32, {4, 4}, {4, 1}, 0, std::vector<double>(16, 1)});
  Tensor w = make_tensor(b, Values{kF32, {2, 4, 4}, {16, 4, 1}, 0, std::vector<double>(32, 2)});
  // Group 0 takes rows [0, 1), group 1 would end at 9 and is clamped to the 4 rows.
  Tensor offs_owner = make_tensor(b, Values{kI32, {2}, {1}, 0, {1, 9}});
  AtenTensorHandle offs = offs_owner.get();
  Tensor out;
  ASSERT_EQ(f(a.get(), w.get(), &offs, nullptr, nullptr, out.out()), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  expect_matches(out.get(), Values{kF32, {4, 4}, {4, 1}, 0, std::vector<double>(16, 8)},
                 "clamped end");
  // Only row 0 is covered: rows 1..3 stay zero.
  Tensor short_offs = make_tensor(b, Values{kI32, {2}, {1}, 0, {1, 1}});
  AtenTensorHandle so = short_offs.get();
  Tensor out2;
  ASSERT_EQ(f(a.get(), w.get(), &so, nullptr, nullptr, out2.out()), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  std::vector<double> want(16, 0);
  for (int j = 0; j < 4; ++j) want[j] = 8;
  expect_matches(out2.get(), Values{kF32, {4, 4}, {4, 1}, 0, want}, "uncovered rows");
  }
}

// Small dyadic values whose float32 sums are exact: CUDA's and the CPU's products agree.
std::vector<double> dyadic(int64_t n, int64_t seed) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>((i * 7 + seed) % 9 - 4) * 0.125);
  return v;
}

// Note [Grouped tiles on the device]: CUDA's kernel against the CPU's loop of mm, every
// layout, with several 16 x 16 tiles, groups that begin and end inside a tile, an empty
// group, column-major experts, a strided offs (copied dense on the stream) and 2^16 + 3
// batches (more than the grid's z extent).
TEST(OpsMatmulGrouped, CudaMatchesTheCpuAcrossTiles) {
  AOTRT_SKIP_WITHOUT_CUDA();
  const Backend cpu = built_backends()[0], gpu = built_backends()[1];
  AOTRT_FIND_OP(fc, GroupedMm, cpu, "_grouped_mm");
  AOTRT_FIND_OP(fg, GroupedMm, gpu, "_grouped_mm");
  struct Case {
    const char* name;
    Values a, w;
    std::vector<double> ends;  // empty: 3d x 3d
  };
  const int32_t dtypes[] = {kBF16, kF16, kF32};
  for (int32_t dt : dtypes) {
    const int64_t M = 50, K = 40, N = 40, G = 4;  // rows, columns: partial last tiles
    const std::vector<Case> cases = {
        {"2d x 3d", Values{dt, {M, K}, {K, 1}, 0, dyadic(M * K, 1)},
         Values{dt, {G, K, N}, {K * N, 1, K}, 0, dyadic(G * K * N, 2)}, {7, 7, 30, 45}},
        {"3d x 2d", Values{dt, {G, M, K}, {M * K, K, 1}, 0, dyadic(G * M * K, 3)},
         Values{dt, {K, N}, {N, 1}, 0, dyadic(K * N, 4)}, {9, 20, 20, 40}},
        {"2d x 2d", Values{dt, {M, K}, {K, 1}, 0, dyadic(M * K, 5)},
         Values{dt, {K, N}, {1, K}, 0, dyadic(K * N, 6)}, {0, 13, 40, 40}},
        {"3d x 3d", Values{dt, {G, M, K}, {M * K, K, 1}, 0, dyadic(G * M * K, 7)},
         Values{dt, {G, K, N}, {K * N, N, 1}, 0, dyadic(G * K * N, 8)}, {}},
        {"3d x 3d, 65539 batches", Values{dt, {65539, 2, 8}, {16, 8, 1}, 0, dyadic(65539 * 16, 9)},
         Values{dt, {65539, 8, 8}, {64, 8, 1}, 0, dyadic(65539 * 64, 10)}, {}},
    };
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(c.name) + " dtype " + std::to_string(dt));
      Tensor out_c, out_g;
      for (const auto& [b, f, out] : {std::tuple{cpu, fc, &out_c}, {gpu, fg, &out_g}}) {
        Tensor a = make_tensor(b, c.a), w = make_tensor(b, c.w);
        const int64_t g = static_cast<int64_t>(c.ends.size());
        Tensor offs_t = make_tensor(b, Values{kI32, {g}, {2}, 0, c.ends});  // strided
        AtenTensorHandle offs = offs_t.get();
        ASSERT_EQ(f(a.get(), w.get(), c.ends.empty() ? nullptr : &offs, nullptr, nullptr,
                    out->out()),
                  AOTI_TORCH_SUCCESS)
            << aotrt_last_error();
      }
      const Meta m = meta(out_c.get());
      expect_matches(out_g.get(), Values{dt, m.sizes, m.strides, 0, values_of(out_c.get())},
                     c.name);
    }
  }
}

// CUDA reads offs on the device: an offs on the host is refused, never synced on.
TEST(OpsMatmulGrouped, CudaRefusesOffsOnTheHost) {
  AOTRT_SKIP_WITHOUT_CUDA();
  const Backend cpu = built_backends()[0], gpu = built_backends()[1];
  AOTRT_FIND_OP(f, GroupedMm, gpu, "_grouped_mm");
  Tensor a = make_tensor(gpu, Values{kBF16, {4, 8}, {8, 1}, 0, std::vector<double>(32, 1)});
  Tensor w = make_tensor(gpu, Values{kBF16, {2, 8, 8}, {64, 8, 1}, 0, std::vector<double>(128, 1)});
  Tensor offs_t = make_tensor(cpu, Values{kI32, {2}, {1}, 0, {2, 4}});
  AtenTensorHandle offs = offs_t.get();
  Tensor out;
  expect_refused(f(a.get(), w.get(), &offs, nullptr, nullptr, out.out()),
                 "aoti_torch_cuda__grouped_mm", "'offs' is on cpu");
  EXPECT_EQ(out.get(), nullptr);
}

}  // namespace
}  // namespace aotrt::test
