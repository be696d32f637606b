// Warp-level tensor-core pieces (sm_80 and later) shared by the int4 matmul
// (int4_tinygemm.cu) and decode attention (attention_decode.cu) kernels:
// mma.sync on bfloat16/float16 fragments, ldmatrix, movmatrix and cp.async.
//
// Note [mma fragments]
// For mma.sync.m16n8k16 (A 16 x 16 row-major, B 16 x 8 column-major, C and D
// 16 x 8 float32), with g = lane / 4 and c = lane % 4, each register holding
// two 16-bit values, the lower k (or column) in the low half:
//   A: a[0] = A[g][2c, 2c+1], a[1] = A[g+8][2c, 2c+1], a[2] = A[g][2c+8, 2c+9],
//      a[3] = A[g+8][2c+8, 2c+9]
//   B: b[0] = B[2c, 2c+1][g], b[1] = B[2c+8, 2c+9][g]
//   C: c[0], c[1] = C[g][2c, 2c+1]; c[2], c[3] = C[g+8][2c, 2c+1]
// m16n8k8 takes a[0], a[1] and b[0] alone (k < 8). The C fragment of one
// product is, converted to 16 bits, the A fragment of the next: pairs
// (c[0], c[1]) and (c[2], c[3]) are a[0] and a[1] of 8 k values.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace aotrt::cuda::mma {

// Whether this compilation pass has the instructions below (the host pass and
// sm_80+ device passes; an older architecture's kernels compile to a trap).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define AOTRT_HAS_MMA 1
#else
#define AOTRT_HAS_MMA 0
#endif

template <typename T>
__device__ __forceinline__ void m16n8k16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
#if AOTRT_HAS_MMA
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
#else
  __trap();
#endif
}

template <typename T>
__device__ __forceinline__ void m16n8k8(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t b0) {
#if AOTRT_HAS_MMA
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(b0));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(b0));
  }
#else
  __trap();
#endif
}

// The 8 x 8 matrix of 16-bit values the warp holds (lane: row g, columns
// 2c, 2c+1), transposed: afterwards the lane holds the transpose's row g.
__device__ __forceinline__ uint32_t transpose8x8(uint32_t x) {
#if AOTRT_HAS_MMA
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
#else
  __trap();
  return x;
#endif
}

// ldmatrix.x4: lane l gives the shared address of row (l % 8) of matrix l / 8;
// register i receives matrix i in the A/B fragment layout (row g, columns 2c, 2c+1).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem_row) {
#if AOTRT_HAS_MMA
  const auto addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem_row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
#else
  __trap();
#endif
}

// 16 bytes global -> shared, asynchronously; fewer than 16 source bytes
// (src_bytes 0 .. 16) zero-fill the rest.
__device__ __forceinline__ void cp_async16(void* smem, const void* global, int src_bytes) {
#if AOTRT_HAS_MMA
  const auto addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(addr), "l"(global),
               "r"(src_bytes));
#else
  __trap();
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if AOTRT_HAS_MMA
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
#if AOTRT_HAS_MMA
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
#endif
}

// Two 16-bit floats of T packed into a register (x in the low half).
template <typename T>
__device__ __forceinline__ uint32_t pack2(float x, float y) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(x, y);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(x, y);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

}  // namespace aotrt::cuda::mma
