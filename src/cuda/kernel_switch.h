// A kernel path of aotrt's own beside a library's (decode attention, the decode GEMV): an
// environment variable read once turns it on or off, tests and benchmarks override that for
// the process, and it counts the calls it served (tests check that a case took the path).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace aotrt::cuda {

class KernelSwitch {
 public:
  // `env`: the variable ("0" turns a default-on path off, "1" a default-off path on).
  constexpr KernelSwitch(const char* env, bool default_on) : env_(env), default_on_(default_on) {}

  bool enabled() const {
    int v = override_.load(std::memory_order_relaxed);
    if (v < 0) v = from_env_.load(std::memory_order_relaxed);
    if (v < 0) {
      const char* s = std::getenv(env_);
      const bool on = s == nullptr ? default_on_
                      : default_on_ ? std::strcmp(s, "0") != 0
                                    : std::strcmp(s, "1") == 0;
      v = on ? 1 : 0;
      from_env_.store(v, std::memory_order_relaxed);
    }
    return v == 1;
  }
  void set(bool on) { override_.store(on ? 1 : 0, std::memory_order_relaxed); }
  void served() { calls_.fetch_add(1, std::memory_order_relaxed); }
  int64_t calls() const { return calls_.load(std::memory_order_relaxed); }

 private:
  const char* env_;
  bool default_on_;
  std::atomic<int> override_{-1};          // -1: the environment decides
  mutable std::atomic<int> from_env_{-1};  // the variable's answer, once read
  std::atomic<int64_t> calls_{0};
};

}  // namespace aotrt::cuda
