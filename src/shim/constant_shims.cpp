// Constant getters, grad mode, checks and warnings. Generated code reads the
// constants in static initialisers, so they must resolve at dlopen.
#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "core/dtype.h"
#include "shim/boundary.h"

using aotrt::ScalarType;

namespace {
constexpr int32_t code(ScalarType t) { return static_cast<int32_t>(t); }
// Inference only: aotrt has no autograd, so grad mode is a flag that
// generated code saves and restores around each run.
thread_local bool t_grad_enabled = false;
}  // namespace

extern "C" {

int32_t aoti_torch_device_type_cpu(void) { return 0; }
int32_t aoti_torch_device_type_cuda(void) { return 1; }
int32_t aoti_torch_device_type_meta(void) { return 14; }
int32_t aoti_torch_device_type_xpu(void) { return 12; }
int32_t aoti_torch_device_type_mps(void) { return 13; }
int32_t aoti_torch_device_type_privateuse1(void) { return 20; }

int32_t aoti_torch_dtype_float8_e5m2(void) { return code(ScalarType::Float8_e5m2); }
int32_t aoti_torch_dtype_float8_e4m3fn(void) { return code(ScalarType::Float8_e4m3fn); }
int32_t aoti_torch_dtype_float8_e5m2fnuz(void) { return code(ScalarType::Float8_e5m2fnuz); }
int32_t aoti_torch_dtype_float8_e4m3fnuz(void) { return code(ScalarType::Float8_e4m3fnuz); }
int32_t aoti_torch_dtype_bfloat16(void) { return code(ScalarType::BFloat16); }
int32_t aoti_torch_dtype_float16(void) { return code(ScalarType::Float16); }
int32_t aoti_torch_dtype_float32(void) { return code(ScalarType::Float32); }
int32_t aoti_torch_dtype_float64(void) { return code(ScalarType::Float64); }
int32_t aoti_torch_dtype_uint8(void) { return code(ScalarType::UInt8); }
int32_t aoti_torch_dtype_uint16(void) { return code(ScalarType::UInt16); }
int32_t aoti_torch_dtype_uint32(void) { return code(ScalarType::UInt32); }
int32_t aoti_torch_dtype_uint64(void) { return code(ScalarType::UInt64); }
int32_t aoti_torch_dtype_int8(void) { return code(ScalarType::Int8); }
int32_t aoti_torch_dtype_int16(void) { return code(ScalarType::Int16); }
int32_t aoti_torch_dtype_int32(void) { return code(ScalarType::Int32); }
int32_t aoti_torch_dtype_int64(void) { return code(ScalarType::Int64); }
int32_t aoti_torch_dtype_bool(void) { return code(ScalarType::Bool); }
int32_t aoti_torch_dtype_complex32(void) { return code(ScalarType::Complex32); }
int32_t aoti_torch_dtype_complex64(void) { return code(ScalarType::Complex64); }
int32_t aoti_torch_dtype_complex128(void) { return code(ScalarType::Complex128); }
size_t aoti_torch_dtype_element_size(int32_t dtype) { return aotrt::element_size(dtype); }

int32_t aoti_torch_layout_strided(void) { return 0; }
// c10::Layout order: Strided, Sparse, SparseCsr, Mkldnn, SparseCsc, SparseBsr,
// SparseBsc, Jagged.
int32_t aoti_torch_layout_sparse_coo(void) { return 1; }
int32_t aoti_torch_layout_sparse_csr(void) { return 2; }
int32_t aoti_torch_layout__mkldnn(void) { return 3; }
int32_t aoti_torch_layout_sparse_csc(void) { return 4; }
int32_t aoti_torch_layout_sparse_bsr(void) { return 5; }
int32_t aoti_torch_layout_sparse_bsc(void) { return 6; }
int32_t aoti_torch_layout_jagged(void) { return 7; }

int32_t aoti_torch_memory_format_contiguous_format(void) { return 0; }
int32_t aoti_torch_memory_format_preserve_format(void) { return 1; }
int32_t aoti_torch_memory_format_channels_last(void) { return 2; }
int32_t aoti_torch_memory_format_channels_last_3d(void) { return 3; }

// libtorch reports its TORCH_ABI_VERSION here; aotrt implements the shim
// surface of torch 2.11-2.13 and reports that as 2.13.0 in the same packing
// (major << 56 | minor << 48 | patch << 40).
uint64_t aoti_torch_abi_version(void) {
  return (uint64_t{2} << 56) | (uint64_t{13} << 48);
}

bool aoti_torch_grad_mode_is_enabled(void) { return t_grad_enabled; }
void aoti_torch_grad_mode_set_enabled(bool enabled) { t_grad_enabled = enabled; }

// Note [aoti_torch_check throws]
// Generated code calls aoti_torch_check(false, ...) for a failed
// AOTI_TORCH_CHECK and relies on it not returning: libtorch throws there, and
// the model's own AOTInductorModelContainerRun catches the exception and
// returns an error code. So this is the one shim that throws: into the model's
// C++ code, never to a C caller. The message is also kept as the thread's
// last error, so the runtime can report it.
void aoti_torch_check(bool cond, const char* func, const char* file, uint32_t line,
                      const char* msg) {
  if (cond) return;
  std::string text = std::string("check failed in generated code: ") + (msg ? msg : "") +
                     " (" + (func ? func : "?") + " at " + (file ? file : "?") + ":" +
                     std::to_string(line) + ")";
  aotrt::set_last_error(text);
  throw std::runtime_error(text);
}

void aoti_torch_warn(const char* func, const char* file, uint32_t line, const char* msg) {
  std::fprintf(stderr, "aotrt: warning from generated code: %s (%s at %s:%u)\n",
               msg ? msg : "", func ? func : "?", file ? file : "?", line);
}

}  // extern "C"
