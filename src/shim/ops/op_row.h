// The one declaration of a fallback op's entry points.
//
// Note [Op rows]
// Each op is one row in its family's shim file (src/shim/ops/<family>.cpp):
//   AOTRT_OP(cumsum, (AtenTensorHandle self, int64_t dim, int32_t* dtype,
//                     AtenTensorHandle* ret0),
//            give(ret0, ops::cumsum(args.tensor(self, "self"), dim,
//                                   args.optional_dtype(dtype, "dtype"), fn)))
// The name is the one after aoti_torch_<device>_; the parameter list is the C
// signature from torch's generated c_shim_{cpu,cuda}.h, copied as it is (a
// fact of the ABI: handles, Tensor? as AtenTensorHandle*, int lists as
// (pointer, length), optional scalars as pointers, ret pointers last); the
// body decodes with `args` (OpArgs, shim/args.h), calls the family's
// device-independent op (src/ops/<family>.h) and hands results out.
// AOTRT_OP makes aoti_torch_cpu_<name> and aoti_torch_cuda_<name>;
// AOTRT_OP_CPU / AOTRT_OP_CUDA one of them, for ops only one device has;
// AOTRT_OP_ATEN the device-generic aoti_torch_aten_<name> of c_shim_aten.h,
// AOTRT_OP_GENERIC the aoti_torch_<name> ops of torch's c/shim.h.
// Entry points of CUDA exist only in builds with CUDA (a CPU-only
// libaotrt.so exports no aoti_torch_cuda_*: `aotrt info` would call them
// provided). AOTRT_OP_ALIAS gives an entry point a second name (the name
// another torch version generates for the same signature): one symbol, two
// names. Inside a body: `fn` (the entry's name), `args`, and give().
// The C signatures are checked against torch's headers by
// tests/e2e/test_shim_coverage.py (which compiles every shim file against them).
#pragma once

#include <memory>
#include <optional>

#include "aotrt/shim.h"
#include "core/handles.h"
#include "shim/args.h"
#include "shim/boundary.h"
#include "shim/results.h"

namespace aotrt {
// Hands a single result out as *ret (dropped when ret is null: Note [Unused
// op outputs]).
inline void give(AtenTensorHandle* ret, std::unique_ptr<TensorImpl> t) {
  if (ret != nullptr) *ret = handle_register(std::move(t));
}
// Two results (values and indices): both handed out, or neither.
inline void give(AtenTensorHandle* ret0, AtenTensorHandle* ret1, std::unique_ptr<TensorImpl> t0,
                 std::unique_ptr<TensorImpl> t1) {
  ShimResults results;
  results.give(ret0, std::move(t0));
  results.give(ret1, std::move(t1));
  results.commit();
}
}  // namespace aotrt

#define AOTRT_OP_DEVICE_cpu ::aotrt::DeviceType::CPU
#define AOTRT_OP_DEVICE_cuda ::aotrt::DeviceType::CUDA
#define AOTRT_OP_DEVICE_aten std::nullopt
#define AOTRT_OP_DEVICE_generic std::nullopt

#define AOTRT_OP_ENTRY(device, name, params, ...)                                     \
  extern "C" AOTRT_EXPORT AOTITorchError aoti_torch_##device##_##name params {        \
    return ::aotrt::shim_boundary("aoti_torch_" #device "_" #name, [&] {              \
      [[maybe_unused]] static constexpr const char* fn = "aoti_torch_" #device "_" #name; \
      [[maybe_unused]] const ::aotrt::OpArgs args{fn, AOTRT_OP_DEVICE_##device};      \
      __VA_ARGS__;                                                                    \
    });                                                                               \
  }

#define AOTRT_OP_ALIAS_ENTRY(device, alias, name, params)                  \
  extern "C" AOTRT_EXPORT AOTITorchError aoti_torch_##device##_##alias params \
      __attribute__((alias("aoti_torch_" #device "_" #name)));

#define AOTRT_OP_CPU(name, params, ...) AOTRT_OP_ENTRY(cpu, name, params, __VA_ARGS__)
#define AOTRT_OP_ALIAS_CPU(alias, name, params) AOTRT_OP_ALIAS_ENTRY(cpu, alias, name, params)
#ifdef AOTRT_WITH_CUDA
#define AOTRT_OP_CUDA(name, params, ...) AOTRT_OP_ENTRY(cuda, name, params, __VA_ARGS__)
#define AOTRT_OP_ALIAS_CUDA(alias, name, params) AOTRT_OP_ALIAS_ENTRY(cuda, alias, name, params)
#else
#define AOTRT_OP_CUDA(name, params, ...)
#define AOTRT_OP_ALIAS_CUDA(alias, name, params)
#endif
#define AOTRT_OP(name, params, ...)               \
  AOTRT_OP_CPU(name, params, __VA_ARGS__)         \
  AOTRT_OP_CUDA(name, params, __VA_ARGS__)
// aoti_torch_aten_<name> (c_shim_aten.h): one entry for every device.
#define AOTRT_OP_ATEN(name, params, ...) AOTRT_OP_ENTRY(aten, name, params, __VA_ARGS__)
// aoti_torch_<name>: the device-generic fallback ops of torch's c/shim.h
// (aoti_torch_index_put_out, aoti_torch_scatter_out, ...).
#define AOTRT_OP_GENERIC(name, params, ...)                                           \
  extern "C" AOTRT_EXPORT AOTITorchError aoti_torch_##name params {                   \
    return ::aotrt::shim_boundary("aoti_torch_" #name, [&] {                          \
      [[maybe_unused]] static constexpr const char* fn = "aoti_torch_" #name;         \
      [[maybe_unused]] const ::aotrt::OpArgs args{fn, std::nullopt};                  \
      __VA_ARGS__;                                                                    \
    });                                                                               \
  }
#define AOTRT_OP_ALIAS(alias, name, params)  \
  AOTRT_OP_ALIAS_CPU(alias, name, params)    \
  AOTRT_OP_ALIAS_CUDA(alias, name, params)
