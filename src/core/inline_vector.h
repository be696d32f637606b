// InlineVector<T, N>: up to N values kept in place, with the part of
// std::vector's interface the op code uses, so that describing a problem on
// every call (a convolution's dims and parameters) allocates nothing. More
// than N values is an internal error: callers bound their counts (as PlanKey's
// do in core/plan_key.h).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <initializer_list>
#include <type_traits>

#include "core/error.h"

namespace aotrt {

template <typename T, size_t N>
class InlineVector {
 public:
  InlineVector() = default;
  InlineVector(size_t n, const T& value) { resize(n, value); }
  InlineVector(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  template <typename It, typename = std::enable_if_t<!std::is_integral_v<It>>>
  InlineVector(It first, It last) {
    assign(first, last);
  }

  template <typename It>
  void assign(It first, It last) {
    n_ = 0;
    for (; first != last; ++first) push_back(*first);
  }
  void push_back(const T& value) {
    AOTRT_CHECK(n_ < N, kInternal, "an inline vector needs more than ", N, " values");
    v_[n_++] = value;
  }
  void resize(size_t n, const T& value = T()) {
    AOTRT_CHECK(n <= N, kInternal, "an inline vector needs more than ", N, " values");
    for (size_t i = n_; i < n; ++i) v_[i] = value;
    n_ = n;
  }

  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T* data() { return v_.data(); }
  const T* data() const { return v_.data(); }
  T* begin() { return v_.data(); }
  T* end() { return v_.data() + n_; }
  const T* begin() const { return v_.data(); }
  const T* end() const { return v_.data() + n_; }
  T& operator[](size_t i) { return v_[i]; }
  const T& operator[](size_t i) const { return v_[i]; }
  T& back() { return v_[n_ - 1]; }
  const T& back() const { return v_[n_ - 1]; }

  bool operator==(const InlineVector& o) const {
    return n_ == o.n_ && std::equal(begin(), end(), o.begin());
  }

 private:
  std::array<T, N> v_{};
  size_t n_ = 0;
};

}  // namespace aotrt
