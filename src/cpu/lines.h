// Lines of a tensor along one dim, for the CPU kernels of ops that work a
// line at a time (scans, sorts): every index of the other dims names one
// line; f gets the element offset of the line's first element in each of two
// views of the same sizes (their strides may differ). Lines run in parallel
// (OpenMP) when there is enough work.
#pragma once

#include <cstdint>
#include <span>

namespace aotrt::cpu {

template <typename F>
void for_each_line(std::span<const int64_t> sizes, int64_t dim, std::span<const int64_t> a,
                   std::span<const int64_t> b, F&& f) {
  const int64_t ndim = static_cast<int64_t>(sizes.size());
  int64_t lines = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    if (d != dim) lines *= sizes[d];
  }
  const int64_t length = ndim == 0 ? 1 : sizes[dim];
  if (lines == 0 || length == 0) return;
#pragma omp parallel for schedule(static) if (lines * length >= 32768 && lines > 1)
  for (int64_t line = 0; line < lines; ++line) {
    int64_t rest = line, off_a = 0, off_b = 0;
    for (int64_t d = ndim - 1; d >= 0; --d) {
      if (d == dim) continue;
      const int64_t i = rest % sizes[d];
      rest /= sizes[d];
      off_a += i * a[d];
      off_b += i * b[d];
    }
    f(off_a, off_b);
  }
}

}  // namespace aotrt::cpu
