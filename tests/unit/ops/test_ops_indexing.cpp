// The indexing family through the C ABI on every built backend, against torch eager's
// values, dtypes and strides (reference_indexing.inc; Note [Indexing semantics]): index,
// index_put, nonzero(_static), masked_select, masked_scatter, scatter (src, value, reduce),
// index_reduce, repeat_interleave, histc, searchsorted, bucketize, and c/shim.h's aoti_torch_index_put_out / scatter_out / scatter_reduce_out.
#include <dlfcn.h>

#include <string>
#include <vector>

#include "ops_testing.h"

namespace aotrt::test {
namespace {

#include "reference_indexing.inc"

using Index = AOTITorchError (*)(AtenTensorHandle, const AtenTensorHandle**, int64_t,
                                 AtenTensorHandle*);
using IndexPut = AOTITorchError (*)(AtenTensorHandle, const AtenTensorHandle**, int64_t,
                                    AtenTensorHandle, int32_t, AtenTensorHandle*);
using Unary = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle*);
using NonzeroStatic = AOTITorchError (*)(AtenTensorHandle, int64_t, int64_t, AtenTensorHandle*);
using Binary = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle*);
using ScatterSrc = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, int64_t,
                                      AtenTensorHandle, AtenTensorHandle);
using ScatterValue = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, int64_t,
                                        AtenTensorHandle, double);
using ScatterReduce = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, int64_t,
                                         AtenTensorHandle, AtenTensorHandle, const char*, int32_t);
using Search = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, int32_t, int32_t,
                                  const char**, AtenTensorHandle*, AtenTensorHandle*);
using SearchScalar = AOTITorchError (*)(AtenTensorHandle, double, int32_t, int32_t, const char**,
                                        AtenTensorHandle*, AtenTensorHandle*);
using Bucketize = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, int32_t, int32_t,
                                     AtenTensorHandle*);
using Ternary = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle,
                                   AtenTensorHandle*);
using IndexReduce = AOTITorchError (*)(AtenTensorHandle, int64_t, AtenTensorHandle, AtenTensorHandle,
                                       const char*, int32_t, AtenTensorHandle*);
using RepeatInterleave = AOTITorchError (*)(AtenTensorHandle, int64_t*, AtenTensorHandle*);
using Histc = AOTITorchError (*)(AtenTensorHandle, int64_t, double, double, AtenTensorHandle*);
using IndexPutOut = AOTITorchError (*)(AtenTensorHandle, AtenTensorHandle, const AtenTensorHandle*,
                                       const uint32_t, const AtenTensorHandle, bool);

const char* const kReduces[] = {"sum", "prod", "mean", "amax", "amin"};

// Tensor?[] as generated code passes it: one AtenTensorHandle* per dim, null for None.
struct OptionalList {
  std::vector<AtenTensorHandle> handles;
  std::vector<const AtenTensorHandle*> ptrs;
  OptionalList(const std::vector<Tensor>& in, const std::vector<int64_t>& map) {
    handles.reserve(map.size());
    for (int64_t k : map) handles.push_back(k < 0 ? nullptr : in[k].get());
    for (size_t i = 0; i < map.size(); ++i) ptrs.push_back(map[i] < 0 ? nullptr : &handles[i]);
  }
};

// A new contiguous tensor of want's sizes and dtype for an _out op.
Tensor out_like(const Backend& b, const Values& want) {
  return empty(b, want.sizes, row_major(want.sizes), want.dtype);
}

class OpsIndexing : public ::testing::TestWithParam<BackendCase> {};

TEST_P(OpsIndexing, MatchesTorch) {
  const Backend& b = GetParam().backend;
  const OpCase& c = GetParam().c;
  const std::string op = c.op;
  std::vector<Tensor> in;
  for (const Values& v : c.inputs) in.push_back(make_tensor(b, v));
  Tensor out;
  bool out_strides = true;  // _out ops write into our contiguous out
  AOTITorchError rc;
  if (op == "index_Tensor") {
    AOTRT_FIND_OP(f, Index, b, op);
    OptionalList l(in, c.ints);
    rc = f(in[0].get(), l.ptrs.data(), static_cast<int64_t>(l.ptrs.size()), out.out());
  } else if (op == "index_put") {
    AOTRT_FIND_OP(f, IndexPut, b, op);
    OptionalList l(in, std::vector<int64_t>(c.ints.begin() + 1, c.ints.end()));
    rc = f(in[0].get(), l.ptrs.data(), static_cast<int64_t>(l.ptrs.size()), in[1].get(),
           static_cast<int32_t>(c.ints[0]), out.out());
  } else if (op == "nonzero") {
    AOTRT_FIND_OP(f, Unary, b, op);
    rc = f(in[0].get(), out.out());
  } else if (op == "nonzero_static") {
    AOTRT_FIND_OP(f, NonzeroStatic, b, op);
    rc = f(in[0].get(), c.ints[0], c.ints[1], out.out());
  } else if (op == "masked_select") {
    AOTRT_FIND_OP(f, Binary, b, op);
    rc = f(in[0].get(), in[1].get(), out.out());
  } else if (op == "scatter_src_out") {
    AOTRT_FIND_OP(f, ScatterSrc, b, op);
    out = out_like(b, c.outputs[0]);
    out_strides = false;
    rc = f(out.get(), in[0].get(), c.ints[0], in[1].get(), in[2].get());
  } else if (op == "scatter_value_out") {
    AOTRT_FIND_OP(f, ScatterValue, b, op);
    out = out_like(b, c.outputs[0]);
    out_strides = false;
    rc = f(out.get(), in[0].get(), c.ints[0], in[1].get(), c.floats[0]);
  } else if (op == "scatter_reduce_two_out") {
    AOTRT_FIND_OP(f, ScatterReduce, b, op);
    out = out_like(b, c.outputs[0]);
    out_strides = false;
    rc = f(out.get(), in[0].get(), c.ints[0], in[1].get(), in[2].get(), kReduces[c.ints[1]],
           static_cast<int32_t>(c.ints[2]));
  } else if (op == "searchsorted_Tensor" || op == "searchsorted_Scalar") {
    const char* sides[] = {"left", "right"};
    const char** side = c.ints[2] < 0 ? nullptr : &sides[c.ints[2]];
    if (op == "searchsorted_Tensor") {
      AOTRT_FIND_OP(f, Search, b, op);
      AtenTensorHandle sorter = in.size() > 2 ? in[2].get() : nullptr;
      rc = f(in[0].get(), in[1].get(), static_cast<int32_t>(c.ints[0]),
             static_cast<int32_t>(c.ints[1]), side, in.size() > 2 ? &sorter : nullptr, out.out());
    } else {
      AOTRT_FIND_OP(f, SearchScalar, b, op);
      rc = f(in[0].get(), c.floats[0], static_cast<int32_t>(c.ints[0]),
             static_cast<int32_t>(c.ints[1]), side, nullptr, out.out());
    }
  } else if (op == "masked_scatter") {
    AOTRT_FIND_OP(f, Ternary, b, op);
    rc = f(in[0].get(), in[1].get(), in[2].get(), out.out());
  } else if (op == "index_reduce") {
    AOTRT_FIND_OP(f, IndexReduce, b, op);
    rc = f(in[0].get(), c.ints[0], in[1].get(), in[2].get(), kReduces[c.ints[1]],
           static_cast<int32_t>(c.ints[2]), out.out());
  } else if (op == "repeat_interleave_Tensor") {
    AOTRT_FIND_OP(f, RepeatInterleave, b, op);
    int64_t size = c.ints[0];
    rc = f(in[0].get(), size == kNone ? nullptr : &size, out.out());
  } else if (op == "histc") {
    AOTRT_FIND_OP(f, Histc, b, op);
    rc = f(in[0].get(), c.ints[0], c.floats[0], c.floats[1], out.out());
  } else {
    AOTRT_FIND_OP(f, Bucketize, b, op);
    rc = f(in[0].get(), in[1].get(), static_cast<int32_t>(c.ints[0]),
           static_cast<int32_t>(c.ints[1]), out.out());
  }
  AOTRT_SKIP_IF_NO_KERNEL(b, rc);
  ASSERT_EQ(rc, AOTI_TORCH_SUCCESS) << aotrt_last_error();
  expect_matches(out.get(), c.outputs[0], c.name, out_strides);
}

// Assignments of several elements to one place keep the last on ATen's CPU and an
// unspecified one on CUDA (ATen's and aotrt's, Note [Indexing on CUDA]):
// tests/unit/cuda/test_cuda_ops.cpp checks that CUDA keeps one of them.
INSTANTIATE_TEST_SUITE_P(Torch, OpsIndexing,
                         ::testing::ValuesIn(all_backends(
                             kIndexingCases, {"index_put_duplicates_last_wins",
                                              "scatter_src_dim0",  // column 0 takes two
                                              "scatter_src_dim1_duplicates"})),
                         backend_case_name);

// c/shim.h's index_put_out and scatter_out, into a strided out (every other column of a
// wider buffer), against the generated-shim forms' results.
TEST(OpsIndexingGeneric, OutFormsWriteThroughAStridedOut) {
  const Backend b = built_backends()[0];
  auto put_out = reinterpret_cast<IndexPutOut>(dlsym(RTLD_DEFAULT, "aoti_torch_index_put_out"));
  auto scatter_out = reinterpret_cast<ScatterSrc>(dlsym(RTLD_DEFAULT, "aoti_torch_scatter_out"));
  ASSERT_NE(put_out, nullptr);
  ASSERT_NE(scatter_out, nullptr);
  Tensor self = make_tensor(b, Values{kF32, {2, 3}, {3, 1}, 0, {1, 2, 3, 4, 5, 6}});
  Tensor parent = make_tensor(b, Values{kF32, {2, 6}, {6, 1}, 0, std::vector<double>(12, -1)});
  Tensor out = reinterpret(parent.get(), {2, 3}, {6, 2}, 1);
  Tensor rows = make_tensor(b, Values{kI64, {2}, {1}, 0, {1, 1}});
  Tensor cols = make_tensor(b, Values{kI64, {2}, {1}, 0, {0, 2}});
  Tensor vals = make_tensor(b, Values{kF32, {2}, {1}, 0, {10, 20}});
  const AtenTensorHandle ix[] = {rows.get(), cols.get()};
  ASSERT_EQ(put_out(out.get(), self.get(), ix, 2, vals.get(), true), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_TRUE(same_values(values_of(parent.get()),
                          {-1, 1, -1, 2, -1, 3, -1, 14, -1, 5, -1, 26}, 0));
  Tensor index = make_tensor(b, Values{kI64, {1, 3}, {3, 1}, 0, {1, 0, 1}});
  ASSERT_EQ(scatter_out(out.get(), self.get(), 0, index.get(), vals.get()), AOTI_TORCH_FAILURE);
  Tensor src = make_tensor(b, Values{kF32, {1, 3}, {3, 1}, 0, {7, 8, 9}});
  ASSERT_EQ(scatter_out(out.get(), self.get(), 0, index.get(), src.get()), AOTI_TORCH_SUCCESS)
      << aotrt_last_error();
  EXPECT_TRUE(same_values(values_of(out.get()), {1, 8, 3, 7, 5, 9}, 0));
}

TEST(OpsIndexingRefusals, NameTheFunctionAndArgument) {
  const Backend b = built_backends()[0];
  AOTRT_FIND_OP(index, Index, b, "index_Tensor");
  Tensor x = make_tensor(b, Values{kF32, {2, 3}, {3, 1}, 0, {1, 2, 3, 4, 5, 6}});
  Tensor bad = make_tensor(b, Values{kI64, {1}, {1}, 0, {3}});
  AtenTensorHandle h = bad.get();
  const AtenTensorHandle* list[] = {&h};
  Tensor out;
  EXPECT_EQ(index(x.get(), list, 1, out.out()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("index 3 is out of bounds for dimension 0 with size 2"),
            std::string::npos) << aotrt_last_error();
  Tensor f = make_tensor(b, Values{kF32, {1}, {1}, 0, {0}});
  h = f.get();
  EXPECT_EQ(index(x.get(), list, 1, out.out()), AOTI_TORCH_FAILURE);
  EXPECT_NE(std::string(aotrt_last_error()).find("must be long, int, byte or bool"), std::string::npos);
  EXPECT_EQ(out.get(), nullptr);
}

}  // namespace
}  // namespace aotrt::test
