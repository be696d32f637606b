// Entry points of the indexing family (ops/indexing.h), both devices, the
// device-generic aoti_torch_index_put_out / scatter_out /
// scatter_reduce_out of torch's c/shim.h, and index_add (no C shim; inductor
// leaves it to the proxy executor for bfloat16) through the proxy executor. Handles in are borrowed; ret0 gets
// a new owning handle; the _out forms write their result into `out` (any
// strides: through aotrt's copy). See Note [Op rows].
#include "core/copy.h"
#include "ops/indexing.h"
#include "runtime/proxy_executor.h"
#include "shim/ops/op_row.h"

using namespace aotrt;
using runtime::ProxyCall;

namespace {
// Writes a result into the caller's out (of the result's sizes).
void write_out(const TensorImpl& out, const TensorImpl& result, const char* fn) {
  AOTRT_CHECK(std::equal(out.sizes().begin(), out.sizes().end(), result.sizes().begin(),
                         result.sizes().end()),
              kInvalidArgument, fn, ": argument 'out' has the wrong sizes");
  copy_tensor(out, result, fn);
}
// scatter(self, ...) into out: the body of every scatter row.
// `src_form`: the variants that take a src tensor, which must then be a live
// handle (a null one is refused, not read as the value form).
void scatter_into(const OpArgs& args, AtenTensorHandle out, AtenTensorHandle self, int64_t dim,
                  AtenTensorHandle index, AtenTensorHandle src, double value, const char* reduce,
                  bool include_self, bool src_form = true) {
  AOTRT_CHECK(reduce != nullptr, kInvalidArgument, args.fn, ": argument 'reduce' is null");
  write_out(args.tensor(out, "out"),
            *ops::scatter(args.tensor(self, "self"), dim, args.tensor(index, "index"),
                          src_form ? &args.tensor(src, "src") : nullptr, value, reduce, include_self,
                          args.fn),
            args.fn);
}
}  // namespace

AOTRT_OP(index_Tensor,
         (AtenTensorHandle self, const AtenTensorHandle** indices, int64_t indices_len_,
          AtenTensorHandle* ret0),
         give(ret0, ops::index(args.tensor(self, "self"),
                               args.optional_tensor_list(indices, indices_len_, "indices"), fn)))

AOTRT_OP(index_put,
         (AtenTensorHandle self, const AtenTensorHandle** indices, int64_t indices_len_,
          AtenTensorHandle values, int32_t accumulate, AtenTensorHandle* ret0),
         give(ret0, ops::index_put(args.tensor(self, "self"),
                                   args.optional_tensor_list(indices, indices_len_, "indices"),
                                   args.tensor(values, "values"), accumulate != 0, fn)))

// indices: an array of handles, a null or undefined one meaning None.
AOTRT_OP_GENERIC(index_put_out,
                 (AtenTensorHandle out, AtenTensorHandle self, const AtenTensorHandle* indices,
                  const uint32_t num_indices, const AtenTensorHandle values, bool accumulate),
                 std::vector<const TensorImpl*> ix;
                 AOTRT_CHECK(indices != nullptr || num_indices == 0, kInvalidArgument, fn,
                             ": argument 'indices' is null");
                 for (uint32_t i = 0; i < num_indices; ++i) {
                   ix.push_back(indices[i] == nullptr
                                    ? nullptr
                                    : args.optional_tensor(const_cast<AtenTensorHandle*>(&indices[i]),
                                                           "indices"));
                 }
                 write_out(args.tensor(out, "out"),
                           *ops::index_put(args.tensor(self, "self"), ix, args.tensor(values, "values"),
                                           accumulate, fn),
                           fn))

AOTRT_OP(nonzero, (AtenTensorHandle self, AtenTensorHandle* ret0),
         give(ret0, ops::nonzero(args.tensor(self, "self"), fn)))

AOTRT_OP(nonzero_static,
         (AtenTensorHandle self, int64_t size, int64_t fill_value, AtenTensorHandle* ret0),
         give(ret0, ops::nonzero_static(args.tensor(self, "self"), size, fill_value, fn)))

AOTRT_OP(masked_select, (AtenTensorHandle self, AtenTensorHandle mask, AtenTensorHandle* ret0),
         give(ret0, ops::masked_select(args.tensor(self, "self"), args.tensor(mask, "mask"), fn)))

AOTRT_OP(scatter_src_out,
         (AtenTensorHandle out, AtenTensorHandle self, int64_t dim, AtenTensorHandle index,
          AtenTensorHandle src),
         scatter_into(args, out, self, dim, index, src, 0, "", true))

AOTRT_OP(scatter_value_out,
         (AtenTensorHandle out, AtenTensorHandle self, int64_t dim, AtenTensorHandle index,
          double value),
         scatter_into(args, out, self, dim, index, nullptr, value, "", true, /*src_form=*/false))

AOTRT_OP(scatter_reduce_two_out,
         (AtenTensorHandle out, AtenTensorHandle self, int64_t dim, AtenTensorHandle index,
          AtenTensorHandle src, const char* reduce, int32_t include_self),
         scatter_into(args, out, self, dim, index, src, 0, reduce, include_self != 0))

// c/shim.h's forms, with the generated ones' signatures.
AOTRT_OP_GENERIC(scatter_out,
                 (AtenTensorHandle out, AtenTensorHandle self, int64_t dim, AtenTensorHandle index,
                  AtenTensorHandle src),
                 scatter_into(args, out, self, dim, index, src, 0, "", true))

AOTRT_OP_GENERIC(scatter_reduce_out,
                 (AtenTensorHandle out, AtenTensorHandle self, int64_t dim, AtenTensorHandle index,
                  AtenTensorHandle src, const char* reduce, int32_t include_self),
                 scatter_into(args, out, self, dim, index, src, 0, reduce, include_self != 0))

AOTRT_OP(searchsorted_Tensor,
         (AtenTensorHandle sorted_sequence, AtenTensorHandle self, int32_t out_int32, int32_t right,
          const char** side, AtenTensorHandle* sorter, AtenTensorHandle* ret0),
         give(ret0, ops::searchsorted(args.tensor(sorted_sequence, "sorted_sequence"),
                                      args.tensor(self, "self"), out_int32 != 0, right != 0,
                                      args.optional_string(side, "side"),
                                      args.optional_tensor(sorter, "sorter"), fn)))

// A Python float scalar is a 0-d float64 tensor (promoted with the boundaries).
AOTRT_OP(searchsorted_Scalar,
         (AtenTensorHandle sorted_sequence, double self, int32_t out_int32, int32_t right,
          const char** side, AtenTensorHandle* sorter, AtenTensorHandle* ret0),
         const TensorImpl& sorted = args.tensor(sorted_sequence, "sorted_sequence");
         auto value = ops::scalar_tensor(self, ScalarType::Float64, sorted.device(), fn);
         give(ret0, ops::searchsorted(sorted, *value, out_int32 != 0, right != 0,
                                      args.optional_string(side, "side"),
                                      args.optional_tensor(sorter, "sorter"), fn)))

AOTRT_OP(bucketize_Tensor,
         (AtenTensorHandle self, AtenTensorHandle boundaries, int32_t out_int32, int32_t right,
          AtenTensorHandle* ret0),
         const TensorImpl& b = args.tensor(boundaries, "boundaries");
         AOTRT_CHECK(b.dim() == 1, kInvalidArgument, fn,
                     ": boundaries tensor must be 1 dimension, but got dim(", b.dim(), ")");
         give(ret0, ops::searchsorted(b, args.tensor(self, "self"), out_int32 != 0, right != 0,
                                      std::nullopt, nullptr, fn)))

AOTRT_OP(masked_scatter,
         (AtenTensorHandle self, AtenTensorHandle mask, AtenTensorHandle source, AtenTensorHandle* ret0),
         give(ret0, ops::masked_scatter(args.tensor(self, "self"), args.tensor(mask, "mask"),
                                        args.tensor(source, "source"), fn)))

AOTRT_OP(index_reduce,
         (AtenTensorHandle self, int64_t dim, AtenTensorHandle index, AtenTensorHandle source,
          const char* reduce, int32_t include_self, AtenTensorHandle* ret0),
         AOTRT_CHECK(reduce != nullptr, kInvalidArgument, fn, ": argument 'reduce' is null");
         give(ret0, ops::index_reduce(args.tensor(self, "self"), dim, args.tensor(index, "index"),
                                      args.tensor(source, "source"), reduce, include_self != 0, fn)))

AOTRT_OP(repeat_interleave_Tensor, (AtenTensorHandle repeats, int64_t* output_size, AtenTensorHandle* ret0),
         give(ret0, ops::repeat_interleave(args.tensor(repeats, "repeats"),
                                           OpArgs::optional(output_size), fn)))

AOTRT_OP(histc, (AtenTensorHandle self, int64_t bins, double min, double max, AtenTensorHandle* ret0),
         give(ret0, ops::histc(args.tensor(self, "self"), bins, min, max, fn)))

// index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1).
AOTRT_PROXY_OP("aten::index_add", {"self", "dim", "index", "source", "alpha"},
               runtime::kProxyCpu | runtime::kProxyCuda, [](ProxyCall& c) {
                 c.set_output(0, ops::index_add(c.tensor("self"), c.int_arg("dim"),
                                                c.tensor("index"), c.tensor("source"),
                                                c.scalar_arg("alpha"), c.what()));
               },
               {{"alpha", 1}});
