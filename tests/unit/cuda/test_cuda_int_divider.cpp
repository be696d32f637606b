// IntDivider (cuda/int_divider.h), the fast division of the copy kernels'
// index arithmetic, against plain division on the host, near every edge
// Note [Fast integer division] names. Needs no device.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "cuda/int_divider.h"

namespace aotrt::cuda {
namespace {

template <typename T>
void check(T d, T n) {
  const IntDivider<T> div(d);
  const DivMod<T> qr = div.divmod(n);
  ASSERT_EQ(qr.div, n / d) << "n " << n << " d " << d;
  ASSERT_EQ(qr.mod, n % d) << "n " << n << " d " << d;
}

template <typename T>
void check_divisor(std::mt19937_64& rng, T d, T max_n) {
  const T ns[] = {0, 1, d - 1, d, d + 1, 2 * d - 1, max_n, max_n - 1, max_n / 2,
                  static_cast<T>(max_n - max_n % d), static_cast<T>(max_n - max_n % d - 1)};
  for (T n : ns) {
    if (n <= max_n) check(d, n);
  }
  for (int i = 0; i < 200; ++i) check(d, static_cast<T>(rng() % (uint64_t{max_n} + 1)));
}

template <typename T>
std::vector<T> divisors(std::mt19937_64& rng, int bits) {
  std::vector<T> ds = {1, 2, 3, 5, 7, 31, 32, 33, 255, 256, 257, 65535, 65536, 65537, 1000003};
  for (int b = 1; b < bits - 1; ++b) {
    const T p = T{1} << b;
    ds.insert(ds.end(), {static_cast<T>(p - 1), p, static_cast<T>(p + 1)});
  }
  for (int i = 0; i < 300; ++i) ds.push_back(static_cast<T>(1 + rng() % ((uint64_t{1} << (bits - 1)) - 1)));
  return ds;
}

TEST(CudaIntDivider, ThirtyTwoBitBelow2To31) {
  std::mt19937_64 rng(1);
  const uint32_t max_n = (uint32_t{1} << 31) - 1;
  for (uint32_t d : divisors<uint32_t>(rng, 32)) {
    check_divisor<uint32_t>(rng, d, max_n);
    if (HasFailure()) return;
  }
}

TEST(CudaIntDivider, SixtyFourBitBelow2To63) {
  std::mt19937_64 rng(2);
  const uint64_t max_n = (uint64_t{1} << 63) - 1;
  for (uint64_t d : divisors<uint64_t>(rng, 64)) {
    check_divisor<uint64_t>(rng, d, max_n);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace aotrt::cuda
