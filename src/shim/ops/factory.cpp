// Entry points of the factory family (ops/factory.h). ret0 gets a new
// owning handle. See Note [Op rows].
#include "ops/factory.h"
#include "shim/ops/op_row.h"

using namespace aotrt;

AOTRT_OP(hann_window,
         (int64_t window_length, int32_t* dtype, int32_t* layout, int32_t* device,
          int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0),
         give(ret0, ops::hann_window(window_length, args.optional_dtype(dtype, "dtype"),
                                     args.factory_device(layout, device_index_), fn)))

AOTRT_OP(_efficientzerotensor,
         (const int64_t* size, int64_t size_len_, int32_t* dtype, int32_t* layout,
          int32_t* device, int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0),
         give(ret0, ops::efficient_zero_tensor(args.ints(size, size_len_, "size"),
                                               args.optional_dtype(dtype, "dtype"),
                                               args.factory_device(layout, device_index_), fn)))
