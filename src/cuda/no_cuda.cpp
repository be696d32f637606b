// The CUDA backend of a build without CUDA: every entry point refuses with
// the same clear error, so the core needs no #ifdefs.
#include "core/error.h"
#include "cuda/cuda.h"

namespace aotrt::cuda {
namespace {
[[noreturn]] void not_built() {
  AOTRT_FAIL(kUnsupported, kNotBuiltMessage);
}
}  // namespace

bool built() { return false; }
Allocator& allocator(int) { not_built(); }
int current_device() { not_built(); }
void* current_stream(int) { not_built(); }
void copy(const StridedView&, const StridedView&) { not_built(); }
void fill_zero(const StridedView&) { not_built(); }
void fill(const StridedView&, const void*) { not_built(); }
void expose_runtime_symbols() { not_built(); }
void synchronize(int) { not_built(); }
void synchronize_device(int) { not_built(); }
int64_t driver_allocations(int) { return 0; }
void profiler_range(bool) {}
size_t loaded_module_count() { return 0; }
void unload_model_modules(void*) noexcept {}

void* pooled_stream(int) { not_built(); }
void forget_stream(int, void*) noexcept {}
PinnedHostBuffer::PinnedHostBuffer(size_t) { not_built(); }
PinnedHostBuffer::~PinnedHostBuffer() = default;
Event::Event(int device_index) : device_(device_index) { not_built(); }
Event::~Event() = default;
void Event::record(void*) { not_built(); }
void Event::synchronize() { not_built(); }
void copy_to_host_async(void*, const void*, size_t, int, void*) { not_built(); }
StreamScope::StreamScope(int, void*) : device_(-1), previous_(nullptr) { not_built(); }
StreamScope::~StreamScope() = default;

// No Graph can be made, so its other members are never reached.
Graph::Graph(int) { not_built(); }
Graph::~Graph() = default;
int Graph::device() const { not_built(); }
void* Graph::stream() const { not_built(); }
void Graph::wait_for(void*) { not_built(); }
void Graph::prepare(void*) { not_built(); }
void Graph::begin_capture() { not_built(); }
void Graph::end_capture(const std::string&) { not_built(); }
void Graph::abandon_capture() noexcept {}
bool Graph::captured() const { return false; }
uint64_t Graph::pool_bytes() const { return 0; }
void Graph::replay(void*) { not_built(); }
Graph::OnPrivateStream::OnPrivateStream(const Graph&) : device_(-1), previous_(nullptr) {
  not_built();
}
Graph::OnPrivateStream::~OnPrivateStream() = default;

}  // namespace aotrt::cuda
