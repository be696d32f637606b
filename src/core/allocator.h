// The allocator interface: small, per device, thread-safe, and able to say
// how many bytes it holds. Storage is the only caller of allocate/deallocate.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/device.h"

namespace aotrt {

struct AllocatorStats {
  int64_t live_bytes = 0;         // handed out and not yet given back
  int64_t peak_bytes = 0;         // highest live_bytes since the last reset_peak()
  int64_t cached_bytes = 0;       // held for reuse, not handed out
  int64_t live_allocations = 0;   // blocks handed out
  int64_t total_allocations = 0;  // allocate() calls that succeeded
  int64_t failed_allocations = 0; // allocate() calls that threw
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns memory of at least nbytes (nullptr for 0 bytes). Throws
  // Error(kOutOfMemory) naming the size on failure; never returns null
  // for nbytes > 0.
  virtual void* allocate(size_t nbytes) = 0;
  // Takes back a block from allocate(); nbytes is what was asked for.
  virtual void deallocate(void* ptr, size_t nbytes) noexcept = 0;
  virtual AllocatorStats stats() const = 0;
  virtual void reset_peak() = 0;
  // Caps live bytes (0 = no cap): an allocate() that would pass the cap
  // fails as if the device were full. For tests and for deployments that
  // share a machine.
  virtual void set_limit(int64_t max_live_bytes) = 0;
};

// Whether `live` bytes plus `nbytes` more pass a set_limit cap (limit > 0),
// computed so that no size overflows (nbytes may come near SIZE_MAX).
inline bool exceeds_limit(int64_t live, size_t nbytes, int64_t limit) {
  return limit > 0 && (nbytes > static_cast<size_t>(limit) || live > limit - static_cast<int64_t>(nbytes));
}

// The allocator of a device: the CPU one always, a CUDA one in CUDA builds
// (throws kUnsupported otherwise).
Allocator& allocator_for(Device device);

}  // namespace aotrt
