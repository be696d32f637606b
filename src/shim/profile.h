// An opt-in host-time profile of the C ABI, read with aotrt::shim_profile()
// (aotrt/aotrt.h).
//
// Note [Shim profiling]
// While profiling is on, shim_boundary() (shim/boundary.h) times each shim
// call with the steady clock and adds it to the entry of its `function` name:
// calls, total and longest time. Failed calls count too. Only the outermost
// shim on a thread is timed: a shim called inside another's body is part of
// the outer one's time, so no time is counted twice (a per-thread depth
// counter). While profiling is off, a shim pays one relaxed atomic load.
// Shims that are not run through shim_boundary (the constant getters such as
// aoti_torch_dtype_float32, which only return a number) are not timed.
// Entries are keyed by the address of the name (a literal or __func__, so
// static): the address is compared first and the text only when an address
// is seen for the first time, so two copies of one name share an entry.
#pragma once

#include <atomic>
#include <cstdint>

namespace aotrt::profiling {

// Whether shim calls are being timed (aotrt::set_shim_profiling).
extern std::atomic<bool> g_shim_profiling;

inline bool shim_profiling_on() noexcept {
  return g_shim_profiling.load(std::memory_order_relaxed);
}

// Starts a timed call on this thread: the start in steady-clock nanoseconds
// for an outermost shim, -1 for one called inside another shim.
int64_t shim_call_begin() noexcept;

// Ends the call begun by shim_call_begin(); adds it to `function`'s entry
// when it was outermost. `function` must have static storage (a literal).
void shim_call_end(const char* function, int64_t start_ns) noexcept;

// Times one library call made inside a shim (cudnnBackendExecute, a cuBLAS
// GEMM, ...) for its lifetime, while profiling is on: an entry of its own,
// marked as inside a shim, whose time is already part of that shim's. It
// shows how much of a fallback op's host time is the library's.
class LibraryCallTimer {
 public:
  explicit LibraryCallTimer(const char* name) noexcept
      : name_(name), start_ns_(shim_profiling_on() ? clock_ns() : -1) {}
  ~LibraryCallTimer() {
    if (start_ns_ >= 0) [[unlikely]] library_call_end(name_, start_ns_);
  }
  LibraryCallTimer(const LibraryCallTimer&) = delete;
  LibraryCallTimer& operator=(const LibraryCallTimer&) = delete;

  static int64_t clock_ns() noexcept;
  static void library_call_end(const char* name, int64_t start_ns) noexcept;

 private:
  const char* name_;
  int64_t start_ns_;
};

}  // namespace aotrt::profiling
