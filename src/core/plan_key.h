// PlanKey: the configuration of a library call (a cuDNN convolution or
// attention graph, a cuBLASLt matmul) as up to 48 integers kept in place, so
// that finding the call's cached plan allocates nothing. A configuration that
// would need more is an internal error (the callers' counts are bounded).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/error.h"

namespace aotrt {

struct PlanKey {
  static constexpr size_t kCapacity = 48;
  std::array<int64_t, kCapacity> v{};
  size_t n = 0;

  void push(int64_t x) {
    AOTRT_CHECK(n < v.size(), kInternal, "a library plan key needs more than ", kCapacity,
                " values");
    v[n++] = x;
  }
  void push(std::span<const int64_t> xs) {
    for (int64_t x : xs) push(x);
  }
  std::span<const int64_t> values() const { return {v.data(), n}; }
  bool operator==(const PlanKey& o) const {
    return n == o.n && std::equal(v.begin(), v.begin() + n, o.v.begin());
  }
};

// FNV-1a over the values.
struct PlanKeyHash {
  size_t operator()(const PlanKey& key) const noexcept {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < key.n; ++i) h = (h ^ static_cast<uint64_t>(key.v[i])) * 0x100000001b3ull;
    return static_cast<size_t>(h);
  }
};

}  // namespace aotrt
