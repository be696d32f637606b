// The shim profile's table, and its public API in aotrt/aotrt.h. See Note
// [Shim profiling] in shim/profile.h.
#include "shim/profile.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "aotrt/aotrt.h"

namespace aotrt::profiling {

std::atomic<bool> g_shim_profiling{false};

namespace {

thread_local int t_depth = 0;  // shims entered on this thread, outermost included

struct Entry {
  std::string function;
  int64_t calls = 0, total_ns = 0, max_ns = 0;
  bool inside_shim = false;  // a LibraryCallTimer's
};

// One table behind one mutex. The lock is taken only while profiling is on,
// once per outermost shim call; models call shims from one thread, so it is
// uncontended (tens of ns) and far simpler than per-thread tables that
// would have to survive their threads. The clock is read before the lock,
// so the lock's cost is never counted as shim time.
struct Table {
  std::mutex mutex;
  std::vector<Entry> entries;
  std::unordered_map<const char*, size_t> index;  // name address -> entry
};

Table& table() {
  // Never destroyed: a shim may still end a call during static destruction.
  static Table* t = new Table;
  return *t;
}

int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The entry for `function`; call with the table's mutex held.
Entry& entry_for(Table& t, const char* function) {
  if (auto it = t.index.find(function); it != t.index.end()) return t.entries[it->second];
  // A new address: another copy of a name already seen shares its entry.
  size_t i = 0;
  while (i < t.entries.size() && t.entries[i].function != function) ++i;
  if (i == t.entries.size()) t.entries.push_back(Entry{function});
  t.index.emplace(function, i);
  return t.entries[i];
}

}  // namespace

int64_t shim_call_begin() noexcept { return t_depth++ == 0 ? now_ns() : -1; }

namespace {

void record(const char* function, int64_t ns, bool inside_shim) noexcept {
  if (function == nullptr) function = "(unnamed)";
  try {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mutex);
    Entry& e = entry_for(t, function);
    ++e.calls;
    e.total_ns += ns;
    e.max_ns = std::max(e.max_ns, ns);
    e.inside_shim = inside_shim;
  } catch (...) {
    // Out of memory for a new entry: this call goes unrecorded.
  }
}

}  // namespace

void shim_call_end(const char* function, int64_t start_ns) noexcept {
  --t_depth;
  if (start_ns < 0) return;
  record(function, now_ns() - start_ns, false);
}

int64_t LibraryCallTimer::clock_ns() noexcept { return now_ns(); }

void LibraryCallTimer::library_call_end(const char* name, int64_t start_ns) noexcept {
  record(name, now_ns() - start_ns, true);
}

}  // namespace aotrt::profiling

namespace aotrt {

void set_shim_profiling(bool on) noexcept {
  profiling::g_shim_profiling.store(on, std::memory_order_relaxed);
}

void reset_shim_profile() noexcept {
  profiling::Table& t = profiling::table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.entries.clear();
  t.index.clear();
}

std::vector<ShimTiming> shim_profile() {
  std::vector<ShimTiming> result;
  {
    profiling::Table& t = profiling::table();
    std::lock_guard<std::mutex> lock(t.mutex);
    result.reserve(t.entries.size());
    for (const profiling::Entry& e : t.entries) {
      result.push_back(ShimTiming{e.function, e.calls, e.total_ns, e.max_ns, e.inside_shim});
    }
  }
  std::sort(result.begin(), result.end(), [](const ShimTiming& a, const ShimTiming& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.function < b.function;
  });
  return result;
}

}  // namespace aotrt
