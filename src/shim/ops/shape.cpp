// Entry points of the factories and shape ops (ops/shape.h), both devices and
// c_shim_aten.h's device-generic forms. Handles in are borrowed; ret0 gets a
// new owning handle; fill_ writes into self. See Note [Op rows].
#include "core/view.h"
#include "ops/shape.h"
#include "runtime/proxy_executor.h"
#include "shim/ops/op_row.h"

using namespace aotrt;
using runtime::ProxyCall;

namespace {
// The (dtype, layout, device, pin_memory) options of a factory: dtype and device
// default to `like` (or float32 on the CPU); only the strided layout exists.
struct FactoryOptions {
  ScalarType dtype;
  Device device;
};
FactoryOptions factory_options(const OpArgs& args, const int32_t* dtype, const int32_t* layout,
                               const int32_t* device, int32_t device_index,
                               const TensorImpl* like) {
  AOTRT_CHECK(layout == nullptr || *layout == 0, kUnsupported, args.fn, ": layout ", *layout,
              " is not served (strided tensors only)");
  FactoryOptions o{like ? like->dtype() : ScalarType::Float32, like ? like->device() : cpu_device()};
  if (auto d = args.optional_dtype(dtype, "dtype")) o.dtype = *d;
  if (device != nullptr) o.device = make_device(*device, device_index, args.fn);
  return o;
}
}  // namespace

AOTRT_OP(fill__Scalar, (AtenTensorHandle self, double value),
         ops::fill(args.tensor(self, "self"), value, fn))

AOTRT_OP_ATEN(fill__Scalar, (AtenTensorHandle self, double value),
              ops::fill(args.tensor(self, "self"), value, fn))

AOTRT_OP_ATEN(full,
              (const int64_t* size, int64_t size_len_, double fill_value, int32_t* dtype,
               int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory,
               AtenTensorHandle* ret0),
              const auto o = factory_options(args, dtype, layout, device, device_index_, nullptr);
              give(ret0, ops::full(args.ints(size, size_len_, "size"), fill_value, o.dtype,
                                   o.device, fn)))

AOTRT_OP_ATEN(new_empty,
              (AtenTensorHandle self, const int64_t* size, int64_t size_len_, int32_t* dtype,
               int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory,
               AtenTensorHandle* ret0),
              const TensorImpl& like = args.tensor(self, "self");
              const auto o = factory_options(args, dtype, layout, device, device_index_, &like);
              const auto sizes = args.ints(size, size_len_, "size");
              give(ret0, empty_strided(sizes, contiguous_strides(sizes), o.dtype, o.device, fn)))

AOTRT_OP_ATEN(new_zeros,
              (AtenTensorHandle self, const int64_t* size, int64_t size_len_, int32_t* dtype,
               int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory,
               AtenTensorHandle* ret0),
              const TensorImpl& like = args.tensor(self, "self");
              const auto o = factory_options(args, dtype, layout, device, device_index_, &like);
              give(ret0, ops::full(args.ints(size, size_len_, "size"), 0.0, o.dtype, o.device,
                                   fn)))

AOTRT_OP(cat, (const AtenTensorHandle* tensors, int64_t tensors_len_, int64_t dim, AtenTensorHandle* ret0),
         give(ret0, ops::cat(args.tensor_list(tensors, tensors_len_, "tensors"), dim, fn)))

AOTRT_OP(pad,
         (AtenTensorHandle self, const int64_t* pad, int64_t pad_len_, const char* mode,
          double* value, AtenTensorHandle* ret0),
         AOTRT_CHECK(mode != nullptr, kInvalidArgument, fn, ": argument 'mode' is null");
         give(ret0, ops::pad(args.tensor(self, "self"), args.ints(pad, pad_len_, "pad"), mode,
                             OpArgs::optional(value), fn)))

AOTRT_OP_ATEN(pad,
              (AtenTensorHandle self, const int64_t* pad, int64_t pad_len_, const char* mode,
               double* value, AtenTensorHandle* ret0),
              AOTRT_CHECK(mode != nullptr, kInvalidArgument, fn, ": argument 'mode' is null");
              give(ret0, ops::pad(args.tensor(self, "self"), args.ints(pad, pad_len_, "pad"),
                                  mode, OpArgs::optional(value), fn)))

// Ops inductor leaves to the proxy executor (it emits them for complex
// tensors, which it has no codegen for, and for the FFTs' padding). The ops
// are device-generic, but only the CPU has run these rows.
// clone(Tensor self, *, MemoryFormat? memory_format=None).
AOTRT_PROXY_OP("aten::clone", {"self", "memory_format"}, runtime::kProxyCpu | runtime::kProxyCuda,
               [](ProxyCall& c) {
  c.set_output(0, ops::clone(c.tensor("self"), c.optional_memory_format("memory_format"),
                             c.what()));
});

// constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0): value is
// positional, so the JSON always has it (inductor fills positional defaults).
AOTRT_PROXY_OP("aten::constant_pad_nd", {"self", "pad", "value"},
               runtime::kProxyCpu | runtime::kProxyCuda,
               [](ProxyCall& c) {
                 const std::vector<int64_t> pad = c.ints("pad");
                 c.set_output(0, ops::pad(c.tensor("self"), pad, "constant",
                                          c.scalar_arg("value"), c.what()));
               });
