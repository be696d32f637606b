// aoti_torch_* shims for tensor lifetime, creation, views, copies, getters,
// items and scalars: device-generic, over core/ (see core/tensor.h).
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <span>
#include <vector>

#include "core/copy.h"
#include "core/error.h"
#include "core/handles.h"
#include "core/onednn_md.h"
#include "core/view.h"
#include "cuda/cuda.h"
#include "runtime/model_mmap.h"
#include "shim/boundary.h"

using namespace aotrt;

namespace {

// Sizes or strides passed as (pointer, ndim); null only when ndim is 0.
std::span<const int64_t> dims_arg(const int64_t* ptr, int64_t ndim, const char* fn,
                                  const char* name) {
  AOTRT_CHECK(ndim >= 0, kInvalidArgument, fn, ": ndim ", ndim, " is negative");
  AOTRT_CHECK(ndim <= 64, kUnsupported, fn, ": ndim ", ndim, " exceeds 64 dims");
  AOTRT_CHECK(ptr != nullptr || ndim == 0, kInvalidArgument, fn, ": '", name,
              "' is null for ", ndim, " dims");
  return {ptr, static_cast<size_t>(ndim)};
}

Device resolve_device(int32_t device_type, int32_t device_index, const char* fn) {
  Device d = make_device(device_type, device_index, fn);
  if (d.is_cuda() && d.index < 0) d.index = cuda::current_device();
  return d;
}

AtenTensorHandle give(std::unique_ptr<TensorImpl> t) { return handle_register(std::move(t)); }

std::unique_ptr<TensorImpl> alias_of(const TensorImpl& t, const char* fn) {
  if (!t.defined()) return std::make_unique<TensorImpl>();
  return make_tensor(t.storage(), t.sizes(), t.strides(), t.storage_offset(), t.dtype(), fn);
}

template <typename T>
AOTITorchError item(const char* fn, AtenTensorHandle h, ScalarType as, T* out) {
  return shim_boundary(fn, [&] {
    AOTRT_CHECK_OUT(out, fn);
    read_item(handle_get_defined(h, fn), as, out, fn);
  });
}

template <typename T>
AOTITorchError scalar(const char* fn, T value, ScalarType dtype, AtenTensorHandle* ret) {
  return shim_boundary(fn, [&] {
    AOTRT_CHECK_OUT(ret, fn);
    auto t = empty_strided({}, {}, dtype, cpu_device(), fn);
    std::memcpy(t->data_ptr(), &value, sizeof(T));
    *ret = give(std::move(t));
  });
}

}  // namespace

extern "C" {

// --- Lifetime and creation -----------------------------------------------------

AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor) {
  return shim_boundary(__func__, [&] { handle_delete(tensor, "aoti_torch_delete_tensor_object"); });
}

AOTITorchError aoti_torch_new_tensor_handle(AtenTensorHandle orig_handle,
                                            AtenTensorHandle* new_handle) {
  return shim_boundary(__func__, [&] {
    AOTRT_CHECK_OUT(new_handle, __func__);
    *new_handle = give(alias_of(handle_get(orig_handle, "aoti_torch_new_tensor_handle"), __func__));
  });
}

AOTITorchError aoti_torch_new_uninitialized_tensor(AtenTensorHandle* ret) {
  return shim_boundary(__func__, [&] {
    AOTRT_CHECK_OUT(ret, __func__);
    *ret = give(std::make_unique<TensorImpl>());
  });
}

AOTITorchError aoti_torch_empty_strided(int64_t ndim, const int64_t* sizes_ptr,
                                        const int64_t* strides_ptr, int32_t dtype,
                                        int32_t device_type, int32_t device_index,
                                        AtenTensorHandle* ret_new_tensor) {
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch_empty_strided";
    AOTRT_CHECK_OUT(ret_new_tensor, fn);
    auto sizes = dims_arg(sizes_ptr, ndim, fn, "sizes");
    auto strides = dims_arg(strides_ptr, ndim, fn, "strides");
    *ret_new_tensor = give(empty_strided(sizes, strides, to_dtype(dtype, fn),
                                         resolve_device(device_type, device_index, fn), fn));
  });
}

// Pinned host memory only speeds up host/device copies; aotrt serves it as
// ordinary host memory, which every copy path accepts.
AOTITorchError aoti_torch_empty_strided_pinned(int64_t ndim, const int64_t* sizes_ptr,
                                               const int64_t* strides_ptr, int32_t dtype,
                                               int32_t device_type, int32_t device_index,
                                               AtenTensorHandle* ret_new_tensor) {
  return aoti_torch_empty_strided(ndim, sizes_ptr, strides_ptr, dtype, device_type,
                                  device_index, ret_new_tensor);
}

// ATen's for_blob: the storage starts at `data` and is as large as the view
// needs, offset included; the memory stays the caller's. A null `data` makes
// new memory instead, as libtorch's shim does.
AOTITorchError aoti_torch_create_tensor_from_blob(void* data, int64_t ndim,
                                                  const int64_t* sizes_ptr,
                                                  const int64_t* strides_ptr,
                                                  int64_t storage_offset, int32_t dtype,
                                                  int32_t device_type, int32_t device_index,
                                                  AtenTensorHandle* ret) {
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch_create_tensor_from_blob";
    AOTRT_CHECK_OUT(ret, fn);
    auto sizes = dims_arg(sizes_ptr, ndim, fn, "sizes");
    auto strides = dims_arg(strides_ptr, ndim, fn, "strides");
    const ScalarType t = to_dtype(dtype, fn);
    const Device device = resolve_device(device_type, device_index, fn);
    if (data == nullptr) {
      *ret = give(empty_strided(sizes, strides, t, device, fn));
      return;
    }
    const ViewSpan span = view_span(sizes, strides, storage_offset, element_size(t), fn);
    StorageRef storage = Storage::borrow(device, data, static_cast<size_t>(span.end_byte));
    *ret = give(make_tensor(std::move(storage), sizes, strides, storage_offset, t, fn));
  });
}

// Note [Opaque constants]
// Layout 3 (_mkldnn) is a oneDNN-blocked constant of a freezing=True package
// (Note [Frozen CPU packages] in runtime/preflight.cpp), registered by the
// model's update_constants_from_blob. Its descriptor is decoded (Note
// [Serialized oneDNN descriptors] in core/onednn_md.h) and the handle is a
// plain tensor of the constant's torch sizes, channels-last for a conv weight
// (3-d and more: the conv then returns channels-last, as the fused op's
// output must be) and row-major for a linear's [N, K], whose storage is
// deferred (Note [Deferred storages] in core/storage.h): the plain copy is
// made only if something reads the elements. The fused oneDNN ops do not:
// they read the model's blocked bytes, in place where the primitive wants
// that layout, else reordered once into the storage's cache (Note [Opaque
// weights in place] in cpu/onednn.cpp). Its address through the ABI is the
// blocked bytes, as torch's shim gives a _mkldnn tensor's
// (data_ptr_from_mkldnn): the model asks for every constant's address at
// load, and uses an opaque one's only as the fused ops' argument. The
// blocked bytes are the model's; the handle lives no longer than the model,
// as every constant's handle. Measured on resnet50 b1 (bench/results/
// cpu-ort-2026-12-04.md): before, the plain copy made at load and the
// reordered copy made at the first run held the weights twice more than the
// model's own 100 MB (peak RSS 324.6 MiB, 201.9 MiB from aotrt's allocator);
// now neither is made (210.2 MiB, 22.7 MiB), and the load no longer unpacks
// 25 M elements.
AOTITorchError aoti_torch_create_tensor_from_blob_v2(
    void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr,
    int64_t storage_offset, int32_t dtype, int32_t device_type, int32_t device_index,
    AtenTensorHandle* ret, int32_t layout, const uint8_t* opaque_metadata,
    int64_t opaque_metadata_size) {
  // A model registers each constant this way right after copying it out of
  // its weights (Note [Weights pages during load] in runtime/model_mmap.h).
  runtime::constant_registered();
  if (layout == 0) {
    return aoti_torch_create_tensor_from_blob(data, ndim, sizes_ptr, strides_ptr, storage_offset,
                                              dtype, device_type, device_index, ret);
  }
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch_create_tensor_from_blob_v2";
    AOTRT_CHECK(layout == 3, kUnsupported, fn, ": layout ", layout,
                " is not served; aotrt serves strided tensors (0) and oneDNN-blocked "
                "constants (3, _mkldnn)");
    AOTRT_CHECK_OUT(ret, fn);
    auto sizes = dims_arg(sizes_ptr, ndim, fn, "sizes");
    const ScalarType t = to_dtype(dtype, fn);
    const Device device = resolve_device(device_type, device_index, fn);
    AOTRT_CHECK(device.type == DeviceType::CPU, kUnsupported, fn,
                ": a oneDNN-blocked (_mkldnn) tensor on ", device.str(), "; they live on the CPU");
    AOTRT_CHECK(data != nullptr, kInvalidArgument, fn, ": 'data' of a _mkldnn tensor is null");
    AOTRT_CHECK(opaque_metadata != nullptr && opaque_metadata_size >= 0, kInvalidArgument, fn,
                ": a _mkldnn tensor needs its oneDNN descriptor ('opaque_metadata' is ",
                opaque_metadata == nullptr ? "null" : "of negative size", ")");
    AOTRT_CHECK(storage_offset == 0, kUnsupported, fn, ": a _mkldnn tensor with storage offset ",
                storage_offset);
    std::vector<int64_t> torch_sizes(sizes.begin(), sizes.end());
    const std::span<const uint8_t> blob(opaque_metadata, static_cast<size_t>(opaque_metadata_size));
    // The blob says how many bytes its layout spans; `data` holds at least that.
    const OnednnBlockedDesc desc =
        decode_onednn_md(blob, torch_sizes, t, std::numeric_limits<int64_t>::max(),
                         std::string(fn) + ": the _mkldnn constant");
    std::vector<int64_t> strides =
        ndim >= 3 ? channels_last_strides(torch_sizes) : contiguous_strides(torch_sizes);
    int64_t numel = 1;
    for (int64_t v : torch_sizes) numel = checked_mul(numel, v, fn);
    const size_t nbytes = static_cast<size_t>(numel) * element_size(t);
    auto source = std::make_unique<const OnednnBlockedSource>(data, desc, torch_sizes, strides, t);
    StorageRef storage = Storage::deferred(device, nbytes, std::move(source));
    // Nothing writes it: the model reaches an opaque tensor only as a fused
    // op's weight. So it is marked constant (Note [Constant storages]): what
    // the oneDNN ops derive from it is made once.
    storage->mark_constant();
    *ret = give(make_tensor(std::move(storage), torch_sizes, strides, 0, t, fn));
  });
}

// --- Views ------------------------------------------------------------------------

// ATen's _reinterpret_tensor: storage_offset is added to self's offset.
AOTITorchError aoti_torch__reinterpret_tensor(AtenTensorHandle self, int64_t ndim,
                                              const int64_t* sizes_ptr,
                                              const int64_t* strides_ptr,
                                              int64_t storage_offset,
                                              AtenTensorHandle* ret_new_tensor) {
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch__reinterpret_tensor";
    AOTRT_CHECK_OUT(ret_new_tensor, fn);
    const TensorImpl& t = handle_get_defined(self, fn);
    auto sizes = dims_arg(sizes_ptr, ndim, fn, "sizes");
    auto strides = dims_arg(strides_ptr, ndim, fn, "strides");
    const int64_t offset = checked_add(t.storage_offset(), storage_offset, fn);
    *ret_new_tensor = give(make_tensor(t.storage(), sizes, strides, offset, t.dtype(), fn));
  });
}

// A view of self's storage at a byte offset from the storage's start, with
// its own dtype (inductor's memory planning pools).
AOTITorchError aoti_torch__alloc_from_pool(AtenTensorHandle self, int64_t offset_bytes,
                                           int32_t dtype, int64_t ndim,
                                           const int64_t* sizes_ptr,
                                           const int64_t* strides_ptr,
                                           AtenTensorHandle* ret_new_tensor) {
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch__alloc_from_pool";
    AOTRT_CHECK_OUT(ret_new_tensor, fn);
    const TensorImpl& t = handle_get_defined(self, fn);
    // ATen checks this too: the offset counts from the pool's storage start.
    AOTRT_CHECK(t.storage_offset() == 0, kInvalidArgument, fn, ": the pool tensor has storage offset ",
                t.storage_offset(), "; a pool must start at its storage (offset 0)");
    const ScalarType dt = to_dtype(dtype, fn);
    const auto itemsize = static_cast<int64_t>(element_size(dt));
    AOTRT_CHECK(offset_bytes >= 0 && offset_bytes % itemsize == 0, kInvalidArgument, fn,
                ": offset of ", offset_bytes, " bytes is not a non-negative multiple of the ",
                itemsize, "-byte ", dtype_name(dt), " element");
    auto sizes = dims_arg(sizes_ptr, ndim, fn, "sizes");
    auto strides = dims_arg(strides_ptr, ndim, fn, "strides");
    *ret_new_tensor = give(make_tensor(t.storage(), sizes, strides, offset_bytes / itemsize, dt, fn));
  });
}

// ATen's as_strided with self's rank and storage offset.
AOTITorchError aoti_torch_as_strided(AtenTensorHandle self, const int64_t* sizes_ptr,
                                     const int64_t* strides_ptr, AtenTensorHandle* ret) {
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch_as_strided";
    AOTRT_CHECK_OUT(ret, fn);
    const TensorImpl& t = handle_get_defined(self, fn);
    auto sizes = dims_arg(sizes_ptr, t.dim(), fn, "sizes");
    auto strides = dims_arg(strides_ptr, t.dim(), fn, "strides");
    *ret = give(make_tensor(t.storage(), sizes, strides, t.storage_offset(), t.dtype(), fn));
  });
}

// --- Copies -----------------------------------------------------------------------

AOTITorchError aoti_torch_clone(AtenTensorHandle self, AtenTensorHandle* ret) {
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch_clone";
    AOTRT_CHECK_OUT(ret, fn);
    *ret = give(clone_tensor(handle_get_defined(self, fn), fn));
  });
}

AOTITorchError aoti_torch_clone_preserve_strides(AtenTensorHandle self, AtenTensorHandle* ret) {
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch_clone_preserve_strides";
    AOTRT_CHECK_OUT(ret, fn);
    *ret = give(clone_preserve_strides(handle_get_defined(self, fn), fn));
  });
}

// self.copy_(src). non_blocking changes nothing: copies are ordered on the
// current stream either way, and a copy into host memory is complete on return.
AOTITorchError aoti_torch_copy_(AtenTensorHandle self, AtenTensorHandle src,
                                int32_t non_blocking) {
  (void)non_blocking;
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch_copy_";
    copy_tensor(handle_get_defined(self, "aoti_torch_copy_: argument 'self'"),
                handle_get_defined(src, "aoti_torch_copy_: argument 'src'"), fn);
  });
}

AOTITorchError aoti_torch_tensor_copy_(AtenTensorHandle src, AtenTensorHandle dst) {
  return aoti_torch_copy_(dst, src, 0);
}

AOTITorchError aoti_torch_assign_tensors(AtenTensorHandle src, AtenTensorHandle dst) {
  return shim_boundary(__func__, [&] {
    const TensorImpl& s = handle_get(src, "aoti_torch_assign_tensors: argument 'src'");
    handle_get(dst, "aoti_torch_assign_tensors: argument 'dst'").assign(s);
  });
}

AOTITorchError aoti_torch_assign_tensors_out(AtenTensorHandle src, AtenTensorHandle* ret_dst) {
  return shim_boundary(__func__, [&] {
    AOTRT_CHECK_OUT(ret_dst, __func__);
    *ret_dst = give(alias_of(handle_get(src, "aoti_torch_assign_tensors_out"), __func__));
  });
}

AOTITorchError aoti_torch_zero_(AtenTensorHandle self) {
  return shim_boundary(__func__, [&] {
    zero_tensor(handle_get_defined(self, "aoti_torch_zero_"), "aoti_torch_zero_");
  });
}

// --- Getters ----------------------------------------------------------------------

#define AOTRT_GETTER(name, type, expr)                                  \
  AOTITorchError name(AtenTensorHandle tensor, type* ret) {             \
    return shim_boundary(#name, [&] {                                   \
      AOTRT_CHECK_OUT(ret, #name);                                      \
      TensorImpl& t = handle_get_defined(tensor, #name);                \
      *ret = (expr);                                                    \
    });                                                                 \
  }

namespace {

// Note [Opaque constants]: a _mkldnn constant's address is its blocked bytes,
// as torch's shim gives (data_ptr_from_mkldnn); a model reads every constant's
// address at load (its ConstantHandles) and reaches an opaque one's elements
// only through the fused ops. Any other tensor's is its elements'.
void* shim_data_ptr(const TensorImpl& t) {
  if (const auto* blocked = dynamic_cast<const OnednnBlockedSource*>(t.storage()->source())) {
    return const_cast<void*>(blocked->data());
  }
  return t.data_ptr();
}

}  // namespace

AOTRT_GETTER(aoti_torch_get_data_ptr, void*, shim_data_ptr(t))
AOTRT_GETTER(aoti_torch_get_mutable_data_ptr, void*, shim_data_ptr(t))
AOTRT_GETTER(aoti_torch_get_const_data_ptr, const void*, shim_data_ptr(t))
AOTRT_GETTER(aoti_torch_get_storage_size, int64_t, static_cast<int64_t>(t.storage()->nbytes()))
AOTRT_GETTER(aoti_torch_get_storage_numel, int64_t,
             static_cast<int64_t>(t.storage()->nbytes() / t.itemsize()))
AOTRT_GETTER(aoti_torch_get_dim, int64_t, t.dim())
AOTRT_GETTER(aoti_torch_get_numel, int64_t, t.numel())
AOTRT_GETTER(aoti_torch_get_sizes, int64_t*, t.sizes_data())
AOTRT_GETTER(aoti_torch_get_strides, int64_t*, t.strides_data())
AOTRT_GETTER(aoti_torch_get_dtype, int32_t, static_cast<int32_t>(t.dtype()))
AOTRT_GETTER(aoti_torch_get_device_type, int32_t, static_cast<int32_t>(t.device().type))
AOTRT_GETTER(aoti_torch_get_device_index, int32_t, t.device().index)
AOTRT_GETTER(aoti_torch_get_layout, int32_t, (static_cast<void>(t), 0))
AOTRT_GETTER(aoti_torch_get_storage_offset, int64_t, t.storage_offset())
AOTRT_GETTER(aoti_torch_is_contiguous, bool, t.is_contiguous())
#undef AOTRT_GETTER

AOTITorchError aoti_torch_is_defined(AtenTensorHandle tensor, bool* ret) {
  return shim_boundary(__func__, [&] {
    AOTRT_CHECK_OUT(ret, __func__);
    *ret = handle_get(tensor, "aoti_torch_is_defined").defined();
  });
}

static int64_t wrap_dim(const TensorImpl& t, int64_t d, const char* fn) {
  const int64_t n = t.dim();
  AOTRT_CHECK(d >= -n && d < n, kInvalidArgument, fn, ": dimension ", d,
              " is out of range for a tensor of ", n, " dims");
  return d < 0 ? d + n : d;
}

AOTITorchError aoti_torch_get_size(AtenTensorHandle tensor, int64_t d, int64_t* ret) {
  return shim_boundary(__func__, [&] {
    AOTRT_CHECK_OUT(ret, __func__);
    const TensorImpl& t = handle_get_defined(tensor, "aoti_torch_get_size");
    *ret = t.sizes()[wrap_dim(t, d, "aoti_torch_get_size")];
  });
}

AOTITorchError aoti_torch_get_stride(AtenTensorHandle tensor, int64_t d, int64_t* ret) {
  return shim_boundary(__func__, [&] {
    AOTRT_CHECK_OUT(ret, __func__);
    const TensorImpl& t = handle_get_defined(tensor, "aoti_torch_get_stride");
    *ret = t.strides()[wrap_dim(t, d, "aoti_torch_get_stride")];
  });
}

// --- Items and scalars ----------------------------------------------------------------

AOTITorchError aoti_torch_item_float16(AtenTensorHandle t, uint16_t* r) { return item(__func__, t, ScalarType::Float16, r); }
AOTITorchError aoti_torch_item_bfloat16(AtenTensorHandle t, uint16_t* r) { return item(__func__, t, ScalarType::BFloat16, r); }
AOTITorchError aoti_torch_item_float32(AtenTensorHandle t, float* r) { return item(__func__, t, ScalarType::Float32, r); }
AOTITorchError aoti_torch_item_float64(AtenTensorHandle t, double* r) { return item(__func__, t, ScalarType::Float64, r); }
AOTITorchError aoti_torch_item_uint8(AtenTensorHandle t, uint8_t* r) { return item(__func__, t, ScalarType::UInt8, r); }
AOTITorchError aoti_torch_item_uint16(AtenTensorHandle t, uint16_t* r) { return item(__func__, t, ScalarType::UInt16, r); }
AOTITorchError aoti_torch_item_uint32(AtenTensorHandle t, uint32_t* r) { return item(__func__, t, ScalarType::UInt32, r); }
AOTITorchError aoti_torch_item_uint64(AtenTensorHandle t, uint64_t* r) { return item(__func__, t, ScalarType::UInt64, r); }
AOTITorchError aoti_torch_item_int8(AtenTensorHandle t, int8_t* r) { return item(__func__, t, ScalarType::Int8, r); }
AOTITorchError aoti_torch_item_int16(AtenTensorHandle t, int16_t* r) { return item(__func__, t, ScalarType::Int16, r); }
AOTITorchError aoti_torch_item_int32(AtenTensorHandle t, int32_t* r) { return item(__func__, t, ScalarType::Int32, r); }
AOTITorchError aoti_torch_item_int64(AtenTensorHandle t, int64_t* r) { return item(__func__, t, ScalarType::Int64, r); }
AOTITorchError aoti_torch_item_bool(AtenTensorHandle t, bool* r) { return item(__func__, t, ScalarType::Bool, r); }
AOTITorchError aoti_torch_item_complex64(AtenTensorHandle t, float* r) { return item(__func__, t, ScalarType::Complex64, r); }

AOTITorchError aoti_torch_scalar_to_tensor_float32(float v, AtenTensorHandle* r) { return scalar(__func__, v, ScalarType::Float32, r); }
AOTITorchError aoti_torch_scalar_to_tensor_float64(double v, AtenTensorHandle* r) { return scalar(__func__, v, ScalarType::Float64, r); }
AOTITorchError aoti_torch_scalar_to_tensor_uint8(uint8_t v, AtenTensorHandle* r) { return scalar(__func__, v, ScalarType::UInt8, r); }
AOTITorchError aoti_torch_scalar_to_tensor_uint16(uint16_t v, AtenTensorHandle* r) { return scalar(__func__, v, ScalarType::UInt16, r); }
AOTITorchError aoti_torch_scalar_to_tensor_uint32(uint32_t v, AtenTensorHandle* r) { return scalar(__func__, v, ScalarType::UInt32, r); }
AOTITorchError aoti_torch_scalar_to_tensor_uint64(uint64_t v, AtenTensorHandle* r) { return scalar(__func__, v, ScalarType::UInt64, r); }
AOTITorchError aoti_torch_scalar_to_tensor_int8(int8_t v, AtenTensorHandle* r) { return scalar(__func__, v, ScalarType::Int8, r); }
AOTITorchError aoti_torch_scalar_to_tensor_int16(int16_t v, AtenTensorHandle* r) { return scalar(__func__, v, ScalarType::Int16, r); }
AOTITorchError aoti_torch_scalar_to_tensor_int32(int32_t v, AtenTensorHandle* r) { return scalar(__func__, v, ScalarType::Int32, r); }
AOTITorchError aoti_torch_scalar_to_tensor_int64(int64_t v, AtenTensorHandle* r) { return scalar(__func__, v, ScalarType::Int64, r); }
AOTITorchError aoti_torch_scalar_to_tensor_bool(bool v, AtenTensorHandle* r) { return scalar(__func__, v, ScalarType::Bool, r); }

// --- Debugging hooks ---------------------------------------------------------------------

AOTITorchError aoti_torch_check_inf_and_nan(const char* tensor_name, AtenTensorHandle tensor) {
  return shim_boundary(__func__, [&] {
    const char* fn = "aoti_torch_check_inf_and_nan";
    const TensorImpl& t = handle_get_defined(tensor, fn);
    if (!is_floating(t.dtype()) || t.numel() == 0) return;
    // Read every element as float64 on the host, then look.
    const std::vector<int64_t> strides = contiguous_strides(t.sizes());
    auto host = empty_strided(t.sizes(), strides, ScalarType::Float64, cpu_device(), fn);
    copy_tensor(*host, t, fn);
    const double* v = static_cast<const double*>(host->data_ptr());
    for (int64_t i = 0; i < t.numel(); ++i) {
      AOTRT_CHECK(std::isfinite(v[i]), kInvalidArgument, fn, ": found ",
                  std::isnan(v[i]) ? "nan" : "inf", " in tensor '",
                  tensor_name ? tensor_name : "?", "' at flat index ", i);
    }
  });
}

void aoti_torch_print_tensor_handle(AtenTensorHandle self, const char* msg) {
  (void)shim_boundary(__func__, [&] {
    const TensorImpl& t = handle_get(self, "aoti_torch_print_tensor_handle");
    std::fprintf(stderr, "[aotrt] %s: ", msg ? msg : "");
    if (!t.defined()) {
      std::fprintf(stderr, "undefined tensor\n");
      return;
    }
    std::fprintf(stderr, "%s %s sizes=[", dtype_name(t.dtype()), t.device().str().c_str());
    for (int64_t s : t.sizes()) std::fprintf(stderr, "%lld,", static_cast<long long>(s));
    std::fprintf(stderr, "] strides=[");
    for (int64_t s : t.strides()) std::fprintf(stderr, "%lld,", static_cast<long long>(s));
    std::fprintf(stderr, "] offset=%lld\n", static_cast<long long>(t.storage_offset()));
  });
}

// Profiler hooks: aotrt has no profiler to feed; they succeed and do nothing.
AOTITorchError aoti_record_function_start(const char*, void*, const void*, uint64_t,
                                          void** guard) {
  if (guard != nullptr) *guard = nullptr;
  return AOTI_TORCH_SUCCESS;
}
AOTITorchError aoti_record_function_end(void*) { return AOTI_TORCH_SUCCESS; }

}  // extern "C"
