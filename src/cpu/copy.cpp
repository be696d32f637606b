// Strided element loops for the CPU: copy with dtype conversion, and fill.
//
// Dims of size 1 are dropped, the rest ordered by the destination's strides
// (innermost last) and merged where both sides are contiguous across them;
// the innermost run becomes one memcpy when both sides are dense there.
// All index arithmetic is 64-bit.
#include <algorithm>
#include <array>
#include <complex>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/error.h"
#include "cpu/cpu.h"
#include "cpu/elements.h"

namespace aotrt::cpu {
namespace {

constexpr int kMaxDims = 64;

// Dims of a loop nest over one or two views, in bytes.
struct LoopNest {
  int ndim = 0;
  std::array<int64_t, kMaxDims> sizes{};
  std::array<int64_t, kMaxDims> dst{};
  std::array<int64_t, kMaxDims> src{};
};

LoopNest make_nest(const StridedView& d, const StridedView* s) {
  AOTRT_CHECK(d.dim() <= kMaxDims, kUnsupported, "copy: ", d.dim(),
              " dims; at most ", kMaxDims, " are served");
  const int64_t di = static_cast<int64_t>(d.itemsize());
  const int64_t si = s ? static_cast<int64_t>(s->itemsize()) : 0;
  std::array<int, kMaxDims> order{};
  int n = 0;
  for (int i = 0; i < d.dim(); ++i) {
    if (d.sizes[i] != 1) order[n++] = i;
  }
  // Innermost = smallest destination stride; stable keeps row-major ties.
  std::stable_sort(order.begin(), order.begin() + n,
                   [&](int a, int b) { return d.strides[a] > d.strides[b]; });
  LoopNest nest;
  for (int k = 0; k < n; ++k) {
    const int i = order[k];
    const int64_t size = d.sizes[i], ds = d.strides[i] * di, ss = s ? s->strides[i] * si : 0;
    if (nest.ndim > 0) {
      const int j = nest.ndim - 1;
      // Merge into the previous (outer) dim when it steps over exactly this one.
      if (nest.dst[j] == ds * size && nest.src[j] == ss * size) {
        nest.sizes[j] *= size;
        nest.dst[j] = ds;
        nest.src[j] = ss;
        continue;
      }
    }
    nest.sizes[nest.ndim] = size;
    nest.dst[nest.ndim] = ds;
    nest.src[nest.ndim] = ss;
    ++nest.ndim;
  }
  if (nest.ndim == 0) {  // a single element
    nest.ndim = 1;
    nest.sizes[0] = 1;
  }
  return nest;
}

// Runs inner(dst, src, n, dst_step, src_step) over every innermost run.
template <typename Inner>
void for_each_run(const LoopNest& nest, char* dst, const char* src, Inner&& inner) {
  const int outer = nest.ndim - 1;
  std::array<int64_t, kMaxDims> index{};
  while (true) {
    inner(dst, src, nest.sizes[outer], nest.dst[outer], nest.src[outer]);
    int d = outer - 1;
    for (; d >= 0; --d) {
      dst += nest.dst[d];
      src += nest.src[d];
      if (++index[d] < nest.sizes[d]) break;
      dst -= nest.dst[d] * nest.sizes[d];
      src -= nest.src[d] * nest.sizes[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

template <typename D, typename S>
void convert_run(char* dst, const char* src, int64_t n, int64_t ds, int64_t ss) {
  for (int64_t i = 0; i < n; ++i) {
    const S s = read_elem<S>(src + i * ss, 0);  // a bool's byte as read_elem reads it
    const D d = convert_value<D>(load(s));
    std::memcpy(dst + i * ds, &d, sizeof(D));
  }
}

using RunFn = void (*)(char*, const char*, int64_t, int64_t, int64_t);

// visit_dtype's types, complex32 (ComplexHalf) and the float8 dtypes, which
// only the copy converts.
template <typename F>
bool visit_copy_dtype(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::Complex32: f(ComplexHalf{}); return true;
    case ScalarType::Float8_e4m3fn: f(Float8<ScalarType::Float8_e4m3fn>{}); return true;
    case ScalarType::Float8_e5m2: f(Float8<ScalarType::Float8_e5m2>{}); return true;
    case ScalarType::Float8_e4m3fnuz: f(Float8<ScalarType::Float8_e4m3fnuz>{}); return true;
    case ScalarType::Float8_e5m2fnuz: f(Float8<ScalarType::Float8_e5m2fnuz>{}); return true;
    default: return visit_dtype(t, f);
  }
}

RunFn converter(ScalarType dst, ScalarType src) {
  RunFn fn = nullptr;
  visit_copy_dtype(dst, [&](auto d) {
    visit_copy_dtype(src, [&](auto s) { fn = &convert_run<decltype(d), decltype(s)>; });
  });
  return fn;
}

template <typename T>
void copy_run_typed(char* dst, const char* src, int64_t n, int64_t ds, int64_t ss) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * ds, src + i * ss, sizeof(T));
}

void copy_run_bytes(char* dst, const char* src, int64_t n, int64_t ds, int64_t ss,
                    size_t itemsize) {
  if (ds == static_cast<int64_t>(itemsize) && ss == ds) {
    std::memcpy(dst, src, static_cast<size_t>(n) * itemsize);
    return;
  }
  switch (itemsize) {
    case 1: copy_run_typed<uint8_t>(dst, src, n, ds, ss); return;
    case 2: copy_run_typed<uint16_t>(dst, src, n, ds, ss); return;
    case 4: copy_run_typed<uint32_t>(dst, src, n, ds, ss); return;
    case 8: copy_run_typed<uint64_t>(dst, src, n, ds, ss); return;
    default:
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * ds, src + i * ss, itemsize);
  }
}

}  // namespace

bool can_convert(ScalarType dst_dtype, ScalarType src_dtype) {
  return dst_dtype == src_dtype || converter(dst_dtype, src_dtype) != nullptr;
}

void copy_strided(const StridedView& dst, const StridedView& src) {
  AOTRT_CHECK(dst.sizes.size() == src.sizes.size(), kInternal,
              "copy_strided: views of different rank");
  if (dst.numel() == 0) return;
  const LoopNest nest = make_nest(dst, &src);
  if (dst.dtype == src.dtype) {
    const size_t itemsize = dst.itemsize();
    for_each_run(nest, dst.data, src.data,
                 [itemsize](char* d, const char* s, int64_t n, int64_t ds, int64_t ss) {
                   copy_run_bytes(d, s, n, ds, ss, itemsize);
                 });
    return;
  }
  const RunFn fn = converter(dst.dtype, src.dtype);
  AOTRT_CHECK(fn != nullptr, kUnsupported, "copy from ", dtype_name(src.dtype), " to ",
              dtype_name(dst.dtype), " is not served by aotrt");
  for_each_run(nest, dst.data, src.data, fn);
}

void fill_zero(const StridedView& dst) {
  if (dst.numel() == 0) return;
  const LoopNest nest = make_nest(dst, nullptr);
  const size_t itemsize = dst.itemsize();
  for_each_run(nest, dst.data, nullptr,
               [itemsize](char* d, const char*, int64_t n, int64_t ds, int64_t) {
                 if (ds == static_cast<int64_t>(itemsize)) {
                   std::memset(d, 0, static_cast<size_t>(n) * itemsize);
                 } else {
                   for (int64_t i = 0; i < n; ++i) std::memset(d + i * ds, 0, itemsize);
                 }
               });
}

}  // namespace aotrt::cpu
