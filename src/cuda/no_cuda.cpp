// The CUDA backend of a build without CUDA: every entry point refuses with
// the same clear error, so the core needs no #ifdefs.
#include "core/error.h"
#include "cuda/cuda.h"

namespace aotrt::cuda {
namespace {
[[noreturn]] void not_built() {
  AOTRT_FAIL(kUnsupported,
             "this aotrt was built without CUDA (configure with -DAOTRT_CUDA=ON on a "
             "machine with the CUDA toolkit)");
}
}  // namespace

bool built() { return false; }
Allocator& allocator(int) { not_built(); }
int current_device() { not_built(); }
void* current_stream(int) { not_built(); }
void copy(const StridedView&, const StridedView&) { not_built(); }
void fill_zero(const StridedView&) { not_built(); }
void expose_runtime_symbols() { not_built(); }

}  // namespace aotrt::cuda
