// A kernel path of aotrt's own beside a library's (decode attention, the decode GEMV): an
// environment variable read once sets its mode, tests and benchmarks override that for the
// process, and it counts the calls it served (tests check that a case took the path).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace aotrt::cuda {

// kOn: the path serves every call it can; kAuto: only the calls its own rule gives it (a
// path without such a rule treats kAuto as kOn); kOff: none.
enum class SwitchMode : int { kOff = 0, kOn = 1, kAuto = 2 };

class KernelSwitch {
 public:
  // `env`: the variable: "0" is kOff, "1" kOn, anything else (or unset) `default_mode`.
  constexpr KernelSwitch(const char* env, SwitchMode default_mode)
      : env_(env), default_mode_(default_mode) {}

  SwitchMode mode() const {
    int v = override_.load(std::memory_order_relaxed);
    if (v < 0) v = from_env_.load(std::memory_order_relaxed);
    if (v < 0) {
      const char* s = std::getenv(env_);
      const SwitchMode m = s != nullptr && std::strcmp(s, "0") == 0   ? SwitchMode::kOff
                           : s != nullptr && std::strcmp(s, "1") == 0 ? SwitchMode::kOn
                                                                      : default_mode_;
      v = static_cast<int>(m);
      from_env_.store(v, std::memory_order_relaxed);
    }
    return static_cast<SwitchMode>(v);
  }
  bool enabled() const { return mode() != SwitchMode::kOff; }
  void set(SwitchMode m) { override_.store(static_cast<int>(m), std::memory_order_relaxed); }
  void served() { calls_.fetch_add(1, std::memory_order_relaxed); }
  int64_t calls() const { return calls_.load(std::memory_order_relaxed); }

 private:
  const char* env_;
  SwitchMode default_mode_;
  std::atomic<int> override_{-1};          // -1: the environment decides
  mutable std::atomic<int> from_env_{-1};  // the variable's answer, once read
  std::atomic<int64_t> calls_{0};
};

}  // namespace aotrt::cuda
