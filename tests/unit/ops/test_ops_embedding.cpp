// The embedding family through the C ABI against torch eager's values, dtypes and
// strides (reference_embedding.inc; Note [Embedding bag semantics]): _embedding_bag and
// _embedding_bag_forward_only, their four outputs, and the refusals. CPU kernels only so
// far: on CUDA the rows report SKIPPED ("no CUDA kernel").
#include <string>
#include <vector>

#include "ops_testing.h"

namespace aotrt::test {
namespace {

#include "reference_embedding.inc"

using Bag = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle, int32_t,
                               int64_t, int32_t, AtenTensorHandle*, int32_t, int64_t,
                               AtenTensorHandle*, AtenTensorHandle*, AtenTensorHandle*,
                               AtenTensorHandle*);

class OpsEmbedding : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsEmbedding, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  AOTRT_FIND_OP(f, Bag, b, c.op);
  AtenTensorHandle psw = in.size() > 3 ? in[3].get() : nullptr;
  Tensor out[4];
  const AOTITorchError rc =
      f(in[0].get(), in[1].get(), in[2].get(), 0, c.ints[0], 0, in.size() > 3 ? &psw : nullptr,
        static_cast<int32_t>(c.ints[1]), c.ints[2], out[0].out(), out[1].out(), out[2].out(),
        out[3].out());
  AOTRT_SKIP_IF_NO_KERNEL(b, rc);
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  const char* names[] = {"output", "offset2bag", "bag_size", "max_indices"};
  for (int k = 0; k < 4; ++k) {
    expect_matches(out[k].get(), c.outputs[k], std::string(c.name) + " " + names[k]);
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsEmbedding, ::testing::ValuesIn(all_backends(kEmbeddingCases)),
                         backend_case_name);

// Enough bags for the parallel path: 300 bags of 1..7 rows of a [50, 33] float64 table
// of small integers (exact sums), against a serial sum.
void many_bags_match_a_serial_sum(const Backend& b) {
  AOTRT_FIND_OP(f, Bag, b, "_embedding_bag_forward_only");
  const int64_t R = 50, D = 33, B = 300;
  Values w{kF64, {R, D}, {D, 1}, 0, {}};
  for (int64_t i = 0; i < R * D; ++i) w.values.push_back(static_cast<double>((i * 7 + 3) % 11) - 5);
  Values ix{kI64, {0}, {1}, 0, {}}, of{kI64, {B}, {1}, 0, {}};
  for (int64_t bag = 0; bag < B; ++bag) {
    of.values.push_back(static_cast<double>(ix.values.size()));
    for (int64_t k = 0; k <= bag % 7; ++k) ix.values.push_back(static_cast<double>((bag * 13 + k * 5) % R));
  }
  ix.sizes[0] = static_cast<int64_t>(ix.values.size());
  Tensor tw = make_tensor(b, w), ti = make_tensor(b, ix), to = make_tensor(b, of);
  Tensor out;
  ASSERT_EQ(f(tw.get(), ti.get(), to.get(), 0, 0, 0, nullptr, 0, -1, out.out(), nullptr, nullptr,
              nullptr),
            AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  std::vector<double> want(static_cast<size_t>(B * D), 0.0);
  for (int64_t bag = 0; bag < B; ++bag) {
    const auto start = static_cast<int64_t>(of.values[static_cast<size_t>(bag)]);
    const int64_t end = bag + 1 < B ? static_cast<int64_t>(of.values[static_cast<size_t>(bag + 1)])
                                    : ix.sizes[0];
    for (int64_t i = start; i < end; ++i)
      for (int64_t d = 0; d < D; ++d)
        want[static_cast<size_t>(bag * D + d)] +=
            w.values[static_cast<size_t>(static_cast<int64_t>(ix.values[static_cast<size_t>(i)]) * D + d)];
  }
  expect_matches(out.get(), Values{kF64, {B, D}, {D, 1}, 0, want}, "output");
}

TEST(OpsEmbeddingLarge, ManyBagsMatchASerialSum) {
  for (const Backend& b : built_backends()) {
    SCOPED_TRACE(b.name);
    many_bags_match_a_serial_sum(b);
  }
}

TEST(OpsEmbeddingRefusals, NameTheFunctionAndArgument) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(f, Bag, b, "_embedding_bag_forward_only");
  Tensor w = make_tensor(b, Values{kF32, {3, 2}, {2, 1}, 0, {1, 2, 3, 4, 5, 6}});
  Tensor ix = make_tensor(b, Values{kI64, {3}, {1}, 0, {0, 2, 1}});
  Tensor of = make_tensor(b, Values{kI64, {2}, {1}, 0, {0, 1}});
  Tensor out;
  auto call = [&](AtenTensorHandle weight, AtenTensorHandle idx, AtenTensorHandle off,
                  int64_t mode, AtenTensorHandle* psw) {
    return f(weight, idx, off, 0, mode, 0, psw, 0, -1, out.out(), nullptr, nullptr, nullptr);
  };
  auto refused = [&](AOTITorchError rc, const char* what) {
    expect_refused(rc, "aoti_torch_cpu__embedding_bag_forward_only", what);
  };
  refused(call(w.get(), ix.get(), of.get(), 3, nullptr), "mode must be");
  Tensor fi = make_tensor(b, Values{kF32, {3}, {1}, 0, {0, 2, 1}});
  refused(call(w.get(), fi.get(), of.get(), 0, nullptr), "indices must be int64 or int32");
  Tensor wi = make_tensor(b, Values{kI32, {3, 2}, {2, 1}, 0, {1, 2, 3, 4, 5, 6}});
  refused(call(wi.get(), ix.get(), of.get(), 0, nullptr), "weight must be");
  Tensor bad_first = make_tensor(b, Values{kI64, {2}, {1}, 0, {1, 2}});
  refused(call(w.get(), ix.get(), bad_first.get(), 0, nullptr), "offsets[0] has to be 0");
  Tensor bad_last = make_tensor(b, Values{kI64, {2}, {1}, 0, {0, 4}});
  refused(call(w.get(), ix.get(), bad_last.get(), 0, nullptr), "offsets[-1]");
  Tensor far = make_tensor(b, Values{kI64, {3}, {1}, 0, {0, 3, 1}});
  refused(call(w.get(), far.get(), of.get(), 0, nullptr), "indices[1] is 3");
  Tensor psw = make_tensor(b, Values{kF32, {3}, {1}, 0, {1, 1, 1}});
  AtenTensorHandle p = psw.get();
  refused(call(w.get(), ix.get(), of.get(), 1, &p), "per_sample_weights is only supported");
  Tensor psw64 = make_tensor(b, Values{kF64, {3}, {1}, 0, {1, 1, 1}});
  p = psw64.get();
  refused(call(w.get(), ix.get(), of.get(), 0, &p), "per_sample_weights must have weight's dtype");
  refused(call(w.get(), nullptr, of.get(), 0, nullptr), "argument 'indices'");
  EXPECT_EQ(out.get(), nullptr);  // nothing handed out on failure
}

// Note [Embedding bags on CUDA]: what the CPU refuses, the device skips (an index out of
// range adds nothing and is not counted; offsets are clamped to the indices).
TEST(OpsEmbeddingCuda, OutOfRangeIndicesAndOffsetsAreSkipped) {
  AOTRT_SKIP_WITHOUT_CUDA();
  for (const Backend& b : built_backends()) {
    if (b.is_cpu()) continue;
    AOTRT_FIND_OP(f, Bag, b, "_embedding_bag_forward_only");
    Tensor w = make_tensor(b, Values{kF32, {3, 2}, {2, 1}, 0, {1, 2, 3, 4, 5, 6}});
    Tensor ix = make_tensor(b, Values{kI64, {4}, {1}, 0, {0, 3, -1, 2}});
    Tensor of = make_tensor(b, Values{kI64, {3}, {1}, 0, {0, 2, 9}});
    Tensor out, o2b, size, mi;
    ASSERT_EQ(f(w.get(), ix.get(), of.get(), 0, 1, 0, nullptr, 0, -1, out.out(), o2b.out(),
                size.out(), mi.out()),
              AOTI_TORCH_SUCCESS)
        << aotrt_last_error();
    // mean: bag 0 {0, 3 (skipped)} -> row 0; bag 1 {-1 (skipped), 2} -> row 2; bag 2
    // starts at 9, clamped to 4: empty.
    expect_matches(out.get(), Values{kF32, {3, 2}, {2, 1}, 0, {1, 2, 5, 6, 0, 0}}, "output");
    expect_matches(size.get(), Values{kI64, {3}, {1}, 0, {1, 1, 0}}, "bag_size");
  }
}

}  // namespace
}  // namespace aotrt::test
