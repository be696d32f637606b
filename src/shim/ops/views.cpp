// Entry points of the views (ops/views.h), both devices: each ret0 is a new
// handle on its input's storage (reshape's only when a view can express it).
// Handles in are borrowed. See Note [Op rows].
#include "ops/views.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

AOTRT_OP(narrow,
         (AtenTensorHandle self, int64_t dim, int64_t start, int64_t length,
          AtenTensorHandle* ret0),
         give(ret0, ops::narrow(args.tensor(self, "self"), dim, start, length, fn)))

AOTRT_OP_ATEN(narrow,
              (AtenTensorHandle self, int64_t dim, int64_t start, int64_t length,
               AtenTensorHandle* ret0),
              give(ret0, ops::narrow(args.tensor(self, "self"), dim, start, length, fn)))

AOTRT_OP(slice_Tensor,
         (AtenTensorHandle self, int64_t dim, int64_t* start, int64_t* end, int64_t step,
          AtenTensorHandle* ret0),
         give(ret0, ops::slice(args.tensor(self, "self"), dim, OpArgs::optional(start),
                               OpArgs::optional(end), step, fn)))

AOTRT_OP(permute, (AtenTensorHandle self, const int64_t* dims, int64_t dims_len_, AtenTensorHandle* ret0),
         give(ret0, ops::permute(args.tensor(self, "self"), args.ints(dims, dims_len_, "dims"), fn)))

AOTRT_OP(squeeze_dim, (AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0),
         give(ret0, ops::squeeze_dim(args.tensor(self, "self"), dim, fn)))

AOTRT_OP(reshape,
         (AtenTensorHandle self, const int64_t* shape, int64_t shape_len_, AtenTensorHandle* ret0),
         give(ret0, ops::reshape(args.tensor(self, "self"), args.ints(shape, shape_len_, "shape"),
                                 fn)))

AOTRT_OP(view_dtype, (AtenTensorHandle self, int32_t dtype, AtenTensorHandle* ret0),
         give(ret0, ops::view_dtype(args.tensor(self, "self"), *args.optional_dtype(&dtype, "dtype"),
                                    fn)))

AOTRT_OP(view_as_real, (AtenTensorHandle self, AtenTensorHandle* ret0),
         give(ret0, ops::view_as_real(args.tensor(self, "self"), fn)))

AOTRT_OP(view_as_complex, (AtenTensorHandle self, AtenTensorHandle* ret0),
         give(ret0, ops::view_as_complex(args.tensor(self, "self"), fn)))

// In place: self's handle keeps its identity and takes the new sizes (and,
// for set_, source's storage). Note [Resizing in place].
AOTRT_OP(resize_,
         (AtenTensorHandle self, const int64_t* size, int64_t size_len_, int32_t* memory_format),
         ops::resize_(args.mutable_tensor(self, "self"), args.ints(size, size_len_, "size"),
                      args.optional_memory_format(memory_format, "memory_format"), fn))

AOTRT_OP(resize_as_, (AtenTensorHandle self, AtenTensorHandle the_template, int32_t* memory_format),
         ops::resize_as_(args.mutable_tensor(self, "self"), args.tensor(the_template, "the_template"),
                         args.optional_memory_format(memory_format, "memory_format"), fn))

AOTRT_OP(set__source_Tensor, (AtenTensorHandle self, AtenTensorHandle source),
         ops::set_(args.mutable_tensor(self, "self"), args.tensor(source, "source"), fn))
