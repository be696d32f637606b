// The int4 weight matmul through the C ABI against torch eager (reference_intmatmul.inc;
// Note [Int4 packed weights]): aoti_torch_cpu__weight_int4pack_mm_cpu_tensor on weights
// packed by eager under each ATen CPU capability (default, avx2, avx512: one machine packs
// all three, see gen_ops_reference.py), read in that layout through Int4PackLayoutOverride;
// a larger random product against a double reference on every layout; the refusals; and
// _convert_weight_to_int4pack_for_cpu (no C shim: through the proxy executor) against
// eager's bytes under each capability. _dyn_quant_pack_4bit_weight and _dyn_quant_matmul_4bit
// (Note [Dynamic int4 matmul]) against eager bit for bit (reference_dynquant.inc: groupwise
// and channelwise, bias, bfloat16's truncation, strided weights, rows of zeros, of one sign,
// with an infinity or a NaN) and their refusals. CPU ops (torch has no CUDA shim of these
// names): their rows run on the CPU backend. _int_mm_out and _weight_int8pack_mm run on
// every built backend against a serial product computed here (exact: the values are chosen
// so that every float sum is exact in any order).
// CUDA's _weight_int4pack_mm (Note [Int4 tinygemm layout]) against its formula on weights
// packed by gen_ops_reference.py's tinygemm_pack (reference_int4cuda.inc): its C shim on
// CUDA, the family op on the CPU (torch declares the entry for CUDA only); and its refusals.
// tests/e2e/test_cuda_int4_tinygemm.py checks the layout against torch's own CUDA packer.
#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/handles.h"
#include "cpu/isa.h"
#include "ops/int_matmul.h"
#include "ops_testing.h"
#include "proxy_testing.h"
#include "shim/boundary.h"

namespace aotrt::test {
namespace {

#include "reference_intmatmul.inc"
#include "reference_dynquant.inc"
#include "reference_int4cuda.inc"
#include "reference_int8pack.inc"

using Int4Mm = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                  AtenTensorHandle, AtenTensorHandle*);
constexpr const char* kOp = "_weight_int4pack_mm_cpu_tensor";
const ops::Int4PackLayout kLayouts[] = {ops::kInt4PackDefault, ops::kInt4PackAvx2,
                                        ops::kInt4PackAvx512};

constexpr const char* kPackOp = "_convert_weight_to_int4pack_for_cpu";

std::vector<BackendCase> cpu_cases(bool proxy) {
  std::vector<BackendCase> out;
  const auto proxied = [](const OpCase& c) { return std::string(c.op) == kPackOp; };
  for (const OpCase& c : cases_where(kIntmatmulCases, proxied, proxy)) {
    out.push_back({built_backends()[0], c});
  }
  return out;
}

// The portable kernels (cpu::PortableKernels) too: on an AVX2 host the split blocks of
// 32 and 64 columns at 1..4 rows take the hand-written AVX2 kernel otherwise.
class OpsIntMatmul : public ::testing::TestWithParam<BackendCase> {};

void expect_int4_matches(const Backend& b, const OpCase& c) {
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  AOTRT_FIND_OP(f, Int4Mm, b, c.op);
  const ops::Int4PackLayoutOverride layout(kLayouts[c.ints[0]]);
  Tensor out;
  ASSERT_EQ(f(in[0].get(), in[1].get(), in[2].get(), in[3].get(), out.out()), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  expect_matches(out.get(), c.outputs[0], c.name);
}

TEST_P(OpsIntMatmul, MatchesTorch) { expect_int4_matches(GetParam().backend, GetParam().c); }

TEST_P(OpsIntMatmul, PortableKernelsMatchTorch) {
  const cpu::PortableKernels portable;
  expect_int4_matches(GetParam().backend, GetParam().c);
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsIntMatmul, ::testing::ValuesIn(cpu_cases(false)),
                         backend_case_name);

class OpsIntMatmulProxy : public ::testing::TestWithParam<BackendCase> {};

// ints: capability, innerKTiles (a run-time int, as the wrapper passes it).
TEST_P(OpsIntMatmulProxy, MatchesTorch) {
  const OpCase& c = GetParam().c;
  Tensor q = make_tensor(GetParam().backend, c.inputs[0]);
  const ops::Int4PackLayoutOverride layout(kLayouts[c.ints[0]]);
  const std::string inputs =
      R"([{"name": "self", "arg": {"as_tensor": {"name": "q"}}, "kind": 1},)"
      R"( {"name": "innerKTiles", "arg": {"as_int": 0}, "kind": 1}])";
  ProxyResult r = run_proxy(std::string("aten::") + kPackOp, inputs, {c.ints[1]}, {q.get()}, 1);
  ASSERT_EQ(r.rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  expect_matches(r.outputs[0].get(), c.outputs[0], c.name);
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsIntMatmulProxy, ::testing::ValuesIn(cpu_cases(true)),
                         backend_case_name);

// q [N, K] packed as ATen packs it in `layout` (the layout's rule, Note [Int4 packed
// weights]; the torch rows above pin the kernel's reading of each layout to eager's bytes).
std::vector<double> pack(const std::vector<int>& q, int64_t N, int64_t K,
                         ops::Int4PackLayout layout) {
  std::vector<double> bytes(static_cast<size_t>(N * K / 2), 0.0);
  for (int64_t n0 = 0; n0 < N; n0 += layout.block_n) {
    const int64_t nb = std::min(layout.block_n, N - n0);
    const bool split = layout.split && nb == layout.block_n;
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t j = 0; j < nb; ++j) {
        const int64_t byte = n0 * K / 2 + k * nb / 2 + (split ? j % (nb / 2) : j / 2);
        const bool high = split ? j >= nb / 2 : (j & 1) == 1;
        bytes[static_cast<size_t>(byte)] += q[static_cast<size_t>((n0 + j) * K + k)] * (high ? 16 : 1);
      }
    }
  }
  return bytes;
}

// [37, 512] x [208, 512] int4 (groups of 128), and its first 1 to 4 rows (the
// few-rows path): the parallel paths, three full AVX512 blocks and a tail (and N = 192:
// full blocks only, as the bfloat16 scales read in place ask), random values;
// against a double sum, 1e-5 relative to the largest output (float32 accumulation over
// 512 terms, not in ATen's k order: Note [Int4 few-row sums per group]). In float32 and
// in bfloat16 (A and the scales rounded to it, read in place by the AVX2 kernel; the
// output one bfloat16 rounding more).
TEST(OpsIntMatmulLarge, EveryLayoutMatchesADoubleReference) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(f, Int4Mm, b, kOp);
  const int64_t M = 37, K = 512, G = 128;
  for (const auto& run : {std::pair{kF32, int64_t{208}}, std::pair{kBF16, int64_t{208}},
                          std::pair{kF32, int64_t{192}}, std::pair{kBF16, int64_t{192}}}) {
    const int32_t dtype = run.first;  // no structured binding: clang 14's lambdas cannot capture one
    const int64_t N = run.second;
    // Values as the dtype holds them, so that the reference sees what the kernel does.
    const auto held = [&](double v) {
      const float f = static_cast<float>(v);
      return static_cast<double>(dtype == kBF16 ? bfloat16_to_float(float_to_bfloat16(f)) : f);
    };
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    std::uniform_int_distribution<int> nibble(0, 15);
    std::vector<double> a(static_cast<size_t>(M * K)), sz(static_cast<size_t>(K / G * N * 2));
    std::vector<int> q(static_cast<size_t>(N * K));
    for (double& v : a) v = held(normal(rng));
    for (size_t i = 0; i < sz.size(); ++i) {
      sz[i] = held(i % 2 == 0 ? 0.01 + std::abs(normal(rng)) * 0.1 : normal(rng) * 0.1);
    }
    for (int& v : q) v = nibble(rng);
    std::vector<double> want(static_cast<size_t>(M * N), 0.0);
    double largest = 0;
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) {
          const size_t g = static_cast<size_t>(((k / G) * N + n) * 2);
          const double w = (q[static_cast<size_t>(n * K + k)] - 8) * sz[g] + sz[g + 1];
          s += a[static_cast<size_t>(i * K + k)] * w;
        }
        want[static_cast<size_t>(i * N + n)] = s;
        largest = std::max(largest, std::abs(s));
      }
    }
    const double rtol = dtype == kBF16 ? tolerance_of(kBF16) : 0;
    Tensor tsz = make_tensor(b, Values{dtype, {K / G, N, 2}, {N * 2, 2, 1}, 0, sz});
    Tensor tg = make_tensor(b, Values{kI64, {}, {}, 0, {static_cast<double>(G)}});
    for (const ops::Int4PackLayout& layout : kLayouts) {
      Tensor tw = make_tensor(b, Values{kU8, {N, K / 2}, {K / 2, 1}, 0, pack(q, N, K, layout)});
      const ops::Int4PackLayoutOverride use(layout);
      // The gemm path, and each row count of the few-rows kernels (on an AVX2 host the
      // full split blocks take the AVX2 kernel, the 16-column tail the portable one), then
      // the same under PortableKernels.
      for (const int64_t rows : {M, int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}}) {
        for (const bool portable : {false, true}) {
          SCOPED_TRACE(std::to_string(layout.block_n) + (layout.split ? " split, " : " pairs, ") +
                       std::to_string(rows) + " rows" + (portable ? ", portable" : "") +
                       (dtype == kBF16 ? ", bfloat16, N " : ", float32, N ") + std::to_string(N));
          std::optional<cpu::PortableKernels> fallback;
          if (portable) fallback.emplace();
          Tensor ta = make_tensor(b, Values{dtype, {rows, K}, {K, 1}, 0,
                                            std::vector<double>(a.begin(), a.begin() + rows * K)});
          Tensor out;
          ASSERT_EQ(f(ta.get(), tw.get(), tg.get(), tsz.get(), out.out()), AOTI_TORCH_SUCCESS)
              << aotrt_last_error();
          EXPECT_TRUE(close_values(values_of(out.get()),
                                   std::vector<double>(want.begin(), want.begin() + rows * N),
                                   rtol, 1e-5 * largest));
        }
      }
    }
  }
}

TEST(OpsIntMatmulRefusals, NameTheFunctionAndArgument) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(f, Int4Mm, b, kOp);
  const std::string fn = std::string("aoti_torch_cpu_") + kOp;
  auto t = [&](int32_t dtype, Dims sizes) {
    return make_tensor(b, Values{dtype, sizes, row_major(sizes), 0,
                                 std::vector<double>(static_cast<size_t>(numel_of(sizes)), 1.0)});
  };
  Tensor a = t(kF32, {2, 64}), w = t(kU8, {16, 32}), sz = t(kF32, {2, 16, 2});
  Tensor g32 = make_tensor(b, Values{kI64, {}, {}, 0, {32}});
  Tensor out;
  auto refused = [&](AtenTensorHandle x, AtenTensorHandle wt, AtenTensorHandle g,
                     AtenTensorHandle s, const char* what) {
    expect_refused(f(x, wt, g, s, out.out()), fn, what);
    EXPECT_EQ(out.get(), nullptr);  // nothing handed out on failure
  };
  Tensor g16 = make_tensor(b, Values{kI64, {}, {}, 0, {16}});
  refused(a.get(), w.get(), g16.get(), sz.get(), "expect qGroupSize to be 32, 64, 128 or 256, got 16");
  Tensor gf = make_tensor(b, Values{kF32, {}, {}, 0, {32}});
  refused(a.get(), w.get(), gf.get(), sz.get(), "expect qGroupSize to be one int64");
  Tensor g64 = make_tensor(b, Values{kI64, {}, {}, 0, {64}});
  Tensor a96 = t(kF32, {2, 96}), w48 = t(kU8, {16, 48}), sz96 = t(kF32, {1, 16, 2});
  refused(a96.get(), w48.get(), g64.get(), sz96.get(), "expect K to be divisible by qGroupSize");
  Tensor ai = t(kI32, {2, 64});
  refused(ai.get(), w.get(), g32.get(), sz.get(), "expect A to be either 32-bit or 16-bit float");
  Tensor a3 = t(kF32, {1, 2, 64});
  refused(a3.get(), w.get(), g32.get(), sz.get(), "expect A to be 2D");
  Tensor wi8 = t(kI8, {16, 32});
  refused(a.get(), wi8.get(), g32.get(), sz.get(), "'B' to be uint8");
  Tensor w_short = t(kU8, {16, 31});
  refused(a.get(), w_short.get(), g32.get(), sz.get(), "expect B.size(1) to be K/2");
  Tensor w8 = t(kU8, {8, 32}), sz8 = t(kF32, {2, 8, 2});
  refused(a.get(), w8.get(), g32.get(), sz8.get(), "multiple of 16");
  Tensor sz_bf16 = t(kBF16, {2, 16, 2});
  refused(a.get(), w.get(), g32.get(), sz_bf16.get(), "'qScaleAndZeros' to be float32");
  Tensor sz_few = t(kF32, {1, 16, 2});
  refused(a.get(), w.get(), g32.get(), sz_few.get(), "expect qScaleAndZeros to be [2, 16, 2]");
  refused(a.get(), nullptr, g32.get(), sz.get(), "argument 'w'");
}

TEST(OpsIntMatmulRefusals, PackNamesTheOpAndWhatIsWrong) {
  const Backend b = built_backends()[0];
  const std::string inputs =
      R"([{"name": "self", "arg": {"as_tensor": {"name": "q"}}, "kind": 1},)"
      R"( {"name": "innerKTiles", "arg": {"as_int": 0}, "kind": 1}])";
  auto refused = [&](int32_t dtype, Dims sizes, const char* what) {
    Tensor q = make_tensor(b, Values{dtype, sizes, row_major(sizes), 0,
                                     std::vector<double>(static_cast<size_t>(numel_of(sizes)), 1.0)});
    ProxyResult r = run_proxy(std::string("aten::") + kPackOp, inputs, {1}, {q.get()}, 1);
    expect_refused(r.rc, kPackOp, what);
  };
  refused(kI64, {16, 4}, "'weight' to be int32");
  refused(kI32, {8, 4}, "expect N to be dividable by 16, got 8");
  refused(kI32, {16, 3}, "expect K to be dividable by 2, got 3");
  refused(kI32, {1, 16, 4}, "expect weight to be 2D");
}

using DynPack = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle*, int64_t,
                                   int64_t, int64_t, AtenTensorHandle*);
using DynMm = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, int64_t, int64_t, int64_t,
                                 AtenTensorHandle*);

std::vector<BackendCase> dyn_quant_cases() {
  std::vector<BackendCase> out;
  for (const OpCase& c : kDynquantCases) out.push_back({built_backends()[0], c});
  return out;
}

class OpsDynQuant : public ::testing::TestWithParam<BackendCase> {};

// ints: block_size, in_features, out_features (and for the pack, whether a bias is given).
TEST_P(OpsDynQuant, MatchesTorchBitForBit) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  Tensor out;
  if (std::string(c.op) == "_dyn_quant_pack_4bit_weight") {
    AOTRT_FIND_OP(f, DynPack, b, c.op);
    AtenTensorHandle bias = c.ints[3] ? in[2].get() : nullptr;
    ASSERT_EQ(f(in[0].get(), in[1].get(), &bias, c.ints[0], c.ints[1], c.ints[2], out.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
  } else {
    AOTRT_FIND_OP(f, DynMm, b, c.op);
    ASSERT_EQ(f(in[0].get(), in[1].get(), c.ints[0], c.ints[1], c.ints[2], out.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
  }
  ASSERT_NE(out.get(), nullptr);
  const Meta m = meta(out.get());
  EXPECT_EQ(m.dtype, c.outputs[0].dtype);
  EXPECT_EQ(m.sizes, c.outputs[0].sizes);
  EXPECT_EQ(m.strides, c.outputs[0].strides);
  EXPECT_TRUE(same_values(values_of(out.get()), c.outputs[0].values, 0)) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsDynQuant, ::testing::ValuesIn(dyn_quant_cases()),
                         backend_case_name);

TEST(OpsDynQuantRefusals, NameTheFunctionAndWhatIsWrong) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(pack, DynPack, b, "_dyn_quant_pack_4bit_weight");
  AOTRT_FIND_OP(mm, DynMm, b, "_dyn_quant_matmul_4bit");
  const std::string pack_fn = "aoti_torch_cpu__dyn_quant_pack_4bit_weight";
  const std::string mm_fn = "aoti_torch_cpu__dyn_quant_matmul_4bit";
  auto t = [&](int32_t dtype, Dims sizes) {
    return make_tensor(b, Values{dtype, sizes, row_major(sizes), 0,
                                 std::vector<double>(static_cast<size_t>(numel_of(sizes)), 1.0)});
  };
  Tensor out;
  Tensor w = t(kU8, {8, 32}), sz = t(kF32, {8, 2}), wi = t(kI32, {8, 32});
  expect_refused(pack(wi.get(), sz.get(), nullptr, 32, 64, 8, out.out()), pack_fn,
                 "'weights' to be uint8");
  expect_refused(pack(w.get(), sz.get(), nullptr, 16, 64, 8, out.out()), pack_fn,
                 "Group size should be multiple of 32, in_features [64]. Provided 16");
  expect_refused(pack(w.get(), sz.get(), nullptr, 0, 0, 8, out.out()), pack_fn,
                 "Group size should be multiple of 32");
  EXPECT_EQ(out.get(), nullptr);
  // A packed weight of N = 8, K = 64, groups of 32: 256 bytes, 16 scales, 8 biases.
  Tensor packed = t(kF32, {256 + 16 + 8}), x = t(kF32, {3, 64});
  expect_refused(mm(t(kBF16, {3, 64}).get(), packed.get(), 32, 64, 8, out.out()), mm_fn,
                 "expect input to be float32 or bfloat16 tensor");
  expect_refused(mm(t(kF16, {3, 64}).get(), packed.get(), 64, 64, 8, out.out()), mm_fn,
                 "expect input to be float32 or bfloat16 tensor");
  expect_refused(mm(x.get(), packed.get(), 48, 64, 8, out.out()), mm_fn,
                 "Group size should be multiple of 32");
  expect_refused(mm(t(kF32, {3, 32}).get(), packed.get(), 32, 64, 8, out.out()), mm_fn,
                 "expect input to be [M, in_features = 64]");
  expect_refused(mm(t(kF32, {64}).get(), packed.get(), 32, 64, 8, out.out()), mm_fn,
                 "expect input to be [M, in_features = 64]");
  expect_refused(mm(t(kF32, {3, 7}).get(), packed.get(), 7, 7, 8, out.out()), mm_fn,
                 "in_features must be even");
  expect_refused(mm(x.get(), t(kF32, {1, 280}).get(), 32, 64, 8, out.out()), mm_fn,
                 "1-d real tensor");
  Tensor xt = make_tensor(b, Values{kF32, {3, 64}, {1, 3}, 0, std::vector<double>(192, 1.0)});
  expect_refused(mm(xt.get(), packed.get(), 32, 64, 8, out.out()), mm_fn, "must be contiguous");
  expect_refused(mm(x.get(), t(kF32, {270}).get(), 32, 64, 8, out.out()), mm_fn,
                 "Invalid packed weight tensor size");
  expect_refused(mm(x.get(), t(kF32, {275}).get(), 32, 64, 8, out.out()), mm_fn,
                 "Expected bias length to match output dimension");
  EXPECT_EQ(out.get(), nullptr);
}

using IntMmOut = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle);
using Int8PackMm = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                      AtenTensorHandle*);

// Sizes past one 16 x 16 tile of the CUDA kernel, with partial tiles; mat2 and out as
// column-major views.
TEST(OpsIntMatmulProducts, IntMmAndInt8PackMmMatchASerialProduct) {
  for (const Backend& b : built_backends()) {
    AOTRT_FIND_OP(int_mm, IntMmOut, b, "_int_mm_out");
    AOTRT_FIND_OP(int8_mm, Int8PackMm, b, "_weight_int8pack_mm");
    const int64_t M = 19, K = 37, N = 21;
    Values a{kI8, {M, K}, {K, 1}, 0, {}}, m2{kI8, {K, N}, {1, K}, 0, {}};
    for (int64_t i = 0; i < M * K; ++i) a.values.push_back(static_cast<double>((i * 37) % 255 - 127));
    for (int64_t i = 0; i < K * N; ++i) m2.values.push_back(static_cast<double>((i * 53) % 256 - 128));
    Tensor ta = make_tensor(b, a), tm = make_tensor(b, m2);
    Tensor out = make_tensor(b, Values{kI32, {M, N}, {1, M}, 0, std::vector<double>(M * N, 0)});
    ASSERT_EQ(int_mm(out.get(), ta.get(), tm.get()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
    std::vector<double> want;
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t p = 0; p < K; ++p) s += a.values[i * K + p] * m2.values[p * N + j];
        want.push_back(s);
      }
    }
    expect_matches(out.get(), Values{kI32, {M, N}, {1, M}, 0, want}, "_int_mm_out");

    // (x [M, K] @ w [N, K]^T) * scales [N]: quarters times small integers, eighths.
    Values x{kF32, {M, K}, {K, 1}, 0, {}}, w{kI8, {N, K}, {K, 1}, 0, {}}, sc{kF32, {N}, {1}, 0, {}};
    for (int64_t i = 0; i < M * K; ++i) x.values.push_back(static_cast<double>((i * 17) % 23 - 11) * 0.25);
    for (int64_t i = 0; i < N * K; ++i) w.values.push_back(static_cast<double>((i * 29) % 255 - 127));
    for (int64_t j = 0; j < N; ++j) sc.values.push_back(static_cast<double>(j + 1) * 0.125);
    Tensor tx = make_tensor(b, x), tw = make_tensor(b, w), ts = make_tensor(b, sc), r;
    ASSERT_EQ(int8_mm(tx.get(), tw.get(), ts.get(), r.out()), AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    want.clear();
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t p = 0; p < K; ++p) s += x.values[i * K + p] * w.values[j * K + p];
        want.push_back(s * sc.values[j]);
      }
    }
    expect_matches(r.get(), Values{kF32, {M, N}, {N, 1}, 0, want}, "_weight_int8pack_mm");
  }
}

// _weight_int8pack_mm against eager on random operands (reference_int8pack.inc; Note [Int8
// weight-only matmul on the CPU]): the decode kernel's row counts and tile tails, the
// dequantized gemm past 8 rows, each float dtype, an A view. Tolerance: the output's one
// rounding (tolerance_of its dtype, relative) or 1e-5 of the largest |eager| value, as the
// float32 sums run in another order than eager's (lanes, a gemm) and cancel.
// The portable kernels (cpu::PortableKernels) too, which x86 hosts with AVX2 do not pick.
class OpsInt8PackMm : public ::testing::TestWithParam<BackendCase> {};

void expect_int8pack_matches(const Backend& b, const OpCase& c) {
  AOTRT_FIND_OP(f, Int8PackMm, b, c.op);
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  Tensor out;
  ASSERT_EQ(f(in[0].get(), in[1].get(), in[2].get(), out.out()), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  const Values& want = c.outputs[0];
  ASSERT_NE(out.get(), nullptr);
  const Meta m = meta(out.get());
  EXPECT_EQ(m.dtype, want.dtype);
  EXPECT_EQ(m.sizes, want.sizes);
  EXPECT_EQ(m.strides, want.strides);
  double largest = 0;
  for (double w : want.values) largest = std::max(largest, std::abs(w));
  EXPECT_TRUE(close_values(values_of(out.get()), want.values, tolerance_of(want.dtype),
                           1e-5 * largest))
      << c.name;
}

TEST_P(OpsInt8PackMm, MatchesTorch) { expect_int8pack_matches(GetParam().backend, GetParam().c); }

TEST_P(OpsInt8PackMm, PortableKernelsMatchTorch) {
  const cpu::PortableKernels portable;
  expect_int8pack_matches(GetParam().backend, GetParam().c);
}

std::vector<BackendCase> int8pack_cpu_cases() {
  std::vector<BackendCase> out;
  for (const OpCase& c : kInt8packCases) out.push_back({built_backends()[0], c});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsInt8PackMm, ::testing::ValuesIn(int8pack_cpu_cases()),
                         backend_case_name);

// Every row count of the decode kernel with K = 2100 (past each row count's block of K in
// the AVX2 kernel, Note [Few-row products], with a K tail of 4) and N = 37 (16-row tiles
// and their tails), portable and AVX2: float32 x of eighths in [-2, 2] against int8
// weights, so that every float32 sum is exact in any order (below 2^20 in steps of 1/8),
// then one product with the scale, rounded once: the result is known to the bit.
TEST(OpsInt8PackMmLarge, EveryRowCountPastTheKBlocksIsExact) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(f, Int8PackMm, b, "_weight_int8pack_mm");
  const int64_t N = 37, K = 2100;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> eighths(-16, 16), byte(-128, 127);
  Values w{kI8, {N, K}, {K, 1}, 0, {}}, sc{kF32, {N}, {1}, 0, {}};
  for (int64_t i = 0; i < N * K; ++i) w.values.push_back(byte(rng));
  for (int64_t n = 0; n < N; ++n) sc.values.push_back(0.001 * static_cast<double>(n + 1));
  Tensor tw = make_tensor(b, w), ts = make_tensor(b, sc);
  for (int64_t M = 1; M <= 8; ++M) {
    Values x{kF32, {M, K}, {K, 1}, 0, {}};
    for (int64_t i = 0; i < M * K; ++i) x.values.push_back(eighths(rng) / 8.0);
    std::vector<double> want;
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += x.values[i * K + k] * w.values[n * K + k];
        want.push_back(static_cast<float>(s) * static_cast<float>(sc.values[n]));
      }
    }
    Tensor tx = make_tensor(b, x);
    for (const bool portable : {false, true}) {
      SCOPED_TRACE(std::to_string(M) + " rows" + (portable ? ", portable" : ""));
      std::optional<cpu::PortableKernels> fallback;
      if (portable) fallback.emplace();
      Tensor out;
      ASSERT_EQ(f(tx.get(), tw.get(), ts.get(), out.out()), AOTI_TORCH_SUCCESS) << aotrt_last_error();
      EXPECT_TRUE(same_values(values_of(out.get()), want, 0));
    }
  }
}

// --- CUDA's tinygemm layout --------------------------------------------------------------

using Int4Tinygemm = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, int64_t,
                                        AtenTensorHandle, AtenTensorHandle*);
constexpr const char* kCpuTinygemm = "cpu _weight_int4pack_mm";

// The CPU stand-in of aoti_torch_cuda__weight_int4pack_mm: the family op behind the same
// boundary.
AOTITorchError cpu_int4_tinygemm(AtenTensorHandle self, AtenTensorHandle mat2, int64_t group,
                                 AtenTensorHandle sz, AtenTensorHandle* ret0) {
  return shim_boundary(kCpuTinygemm, [&] {
    *ret0 = handle_register(ops::weight_int4pack_mm_tinygemm(
        handle_get(self, "self"), handle_get(mat2, "mat2"), group,
        handle_get(sz, "qScaleAndZeros"), kCpuTinygemm));
  });
}

Int4Tinygemm tinygemm_of(const Backend& b) {
  return b.is_cpu() ? cpu_int4_tinygemm : find_op<Int4Tinygemm>(b, "_weight_int4pack_mm");
}

class OpsInt4Tinygemm : public ::testing::TestWithParam<BackendCase> {};

// ints: qGroupSize, innerKTiles (the packed B's size(3) * 2).
TEST_P(OpsInt4Tinygemm, MatchesTheFormula) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const Int4Tinygemm f = tinygemm_of(b);
  if (f == nullptr) GTEST_SKIP() << b.op_prefix << "_weight_int4pack_mm is missing";
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  Tensor out;
  const AOTITorchError rc = f(in[0].get(), in[1].get(), c.ints[0], in[2].get(), out.out());
  AOTRT_SKIP_IF_NO_KERNEL(b, rc);
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  expect_matches(out.get(), c.outputs[0], c.name);
}

INSTANTIATE_TEST_SUITE_P(Formula, OpsInt4Tinygemm, ::testing::ValuesIn(all_backends(kInt4cudaCases)),
                         backend_case_name);

TEST(OpsInt4TinygemmRefusals, NameWhatIsWrong) {
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    const Int4Tinygemm f = tinygemm_of(b);
    ASSERT_NE(f, nullptr) << b.op_prefix << "_weight_int4pack_mm is missing";
    const std::string fn = b.is_cpu() ? kCpuTinygemm : "aoti_torch_cuda__weight_int4pack_mm";
    // K = 64, innerKTiles 2: B [N/8, 2, 32, 1]; N = 16.
    Tensor a = empty(b, {3, 64}, kBF16), w = empty(b, {2, 2, 32, 1}, kI32);
    Tensor sz = empty(b, {2, 16, 2}, kBF16);
    Tensor out;
    auto refused = [&](const Tensor& x, const Tensor& wt, int64_t group, const Tensor& s,
                       const std::string& what) {
      expect_refused(f(x.get(), wt.get(), group, s.get(), out.out()), fn, what);
      EXPECT_EQ(out.get(), nullptr);
    };
    Tensor a32 = empty(b, {3, 64}, kF32), a3 = empty(b, {1, 3, 64}, kBF16);
    refused(a32, w, 32, sz, "expected 'A' to be bfloat16, but got float32");
    refused(a3, w, 32, sz, "expect A to be 2D tensor");
    Tensor wu8 = empty(b, {2, 2, 32, 1}, kU8), w3 = empty(b, {2, 64, 1}, kI32);
    refused(a, wu8, 32, sz, "expected 'B' to be int32, but got uint8");
    refused(a, w3, 32, sz, "expect B to be the 4-d int4 pack");
    Tensor w_inner = empty(b, {2, 2, 32, 3}, kI32), w_k = empty(b, {2, 1, 32, 1}, kI32);
    refused(a, w_inner, 32, sz, "expect B.size(3) * 2 (innerKTiles) to be 2, 4 or 8, got 6");
    refused(a, w_k, 32, sz, "expect K = A.size(1) = 64 to be B.size(1) * innerKTiles * 16 = 1 * 2 * 16");
    refused(a, w, 16, sz, "expect qGroupSize to be 32, 64, 128 or 256, got 16");
    refused(a, w, 128, sz, "expect K to be a multiple of qGroupSize, got K:64, qGroupSize:128");
    Tensor sz32 = empty(b, {2, 16, 2}, kF32), sz_n = empty(b, {2, 8, 2}, kBF16);
    refused(a, w, 32, sz32, "expected 'qScaleAndZeros' to be bfloat16, but got float32");
    refused(a, w, 32, sz_n, "expect qScaleAndZeros to be [2, 16, 2] (K/qGroupSize, N, 2), got [2, 8, 2]");
  }
}

}  // namespace
}  // namespace aotrt::test
