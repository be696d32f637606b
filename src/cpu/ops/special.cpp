// CPU kernels of the special family (ops/special.h): one pass over the
// output's elements, each computed in double by ops/special_math.h (the
// functions the CUDA kernels run) and rounded to the output's dtype.
#include <array>
#include <span>
#include <type_traits>

#include "core/error.h"
#include "cpu/elements.h"
#include "ops/dispatch.h"
#include "ops/special.h"

namespace aotrt::cpu {
namespace {
using ops::SpecialKernels;
using ops::SpecialOp;

// f(T{}) for the floating dtypes the family computes in.
template <typename F>
void visit_floating(ScalarType t, const char* fn, F&& f) {
  switch (t) {
    case ScalarType::Float16: return f(Half{});
    case ScalarType::BFloat16: return f(BFloat16{});
    case ScalarType::Float32: return f(float{});
    case ScalarType::Float64: return f(double{});
    default:
      AOTRT_FAIL(kInternal, fn, ": dtype ", dtype_name(t), " reached the special kernels");
  }
}

void unary(SpecialOp op, int64_t n, const StridedView& x, const StridedView& out,
           const char* fn) {
  visit_floating(out.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    const std::array<std::span<const int64_t>, 2> st{x.strides, out.strides};
    for_each_element<2>(out.sizes, st, [&](const std::array<int64_t, 2>& off) {
      const double v = static_cast<double>(load(read_elem<T>(x.data, off[0])));
      write_elem<T>(out.data, off[1], convert_value<T>(ops::special_math::unary(op, n, v)));
    });
  });
}

void binary(SpecialOp op, const StridedView& a, const StridedView& b, const StridedView& out,
            const char* fn) {
  visit_floating(out.dtype, fn, [&](auto tag) {
    using T = decltype(tag);
    const std::array<std::span<const int64_t>, 3> st{a.strides, b.strides, out.strides};
    for_each_element<3>(out.sizes, st, [&](const std::array<int64_t, 3>& off) {
      const double va = static_cast<double>(load(read_elem<T>(a.data, off[0])));
      const double vb = static_cast<double>(load(read_elem<T>(b.data, off[1])));
      write_elem<T>(out.data, off[2], convert_value<T>(ops::special_math::binary(op, va, vb)));
    });
  });
}

constexpr SpecialKernels kSpecial{.unary = unary, .binary = binary};
AOTRT_REGISTER_KERNELS(SpecialKernels, cpu, kSpecial);

}  // namespace
}  // namespace aotrt::cpu
