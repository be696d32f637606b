// CUDA kernels of the FFT family (ops/fft.h) on cuFFT.
//
// Note [cuFFT passes]
// Every kernel is a sequence of 1-D passes, one per transformed dim: a batch
// of lines along that dim, read from one view and written to another (the
// same one for the later passes of c2c, in place). cuFFT's advanced layout
// addresses element k of line b at b * dist + k * stride, so a pass reads
// and writes the views in place when every other dim of both collapses into
// one batch dim (ordered by the output's strides, merged where both views
// allow), all strides are positive and the real side of r2c/c2r is aligned
// as a complex element (as ATen finds cuFFT needs); otherwise the pass
// gathers its input into dense rows and writes through dense rows (Note
// [Rows along a dim]). c2r always transforms a copy: cuFFT's C2R overwrites
// its input; the copy holds the first last_dim_size / 2 + 1 bins (zeros for
// missing ones) and is handed to cuFFT as it is, so the imaginary parts of
// the DC and Nyquist bins are treated as cuFFT - and so ATen's CUDA kernel
// - treats them. Length-1 passes are copies (the DFT of one point is that
// point). The normalization is one elementwise pass over the output.
//
// Precisions: float16 (complex32; powers of two only, which the family
// checks, and a unit-stride real input for r2c), float32, float64, in plans
// made with cufftXtMakePlanMany and run with cufftXtExec, as ATen's.
// Plans are made once per (device, transform, precision, length, batch and
// layout) and kept in a per-thread LRU of kPlanCacheSize plans (so no lock:
// a plan is configured and executed by one thread only). Each plan is made
// with cuFFT's auto-allocation off; its work area comes from aotrt's caching
// allocator at every execution, on the current stream of the tensors'
// device, to which the plan is bound before it runs. Nothing syncs the host.
#include <cufft.h>
#include <cufftXt.h>

#include <algorithm>
#include <cstdint>
#include <list>
#include <optional>
#include <tuple>
#include <vector>

#include "cuda/ops/common.cuh"
#include "ops/dispatch.h"
#include "ops/fft.h"

namespace aotrt::cuda {
namespace {
using namespace op_common;
using aotrt::ops::FftKernels;

const char* cufft_status_name(cufftResult r) {
  switch (r) {
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "an unknown cuFFT status";
  }
}

// Quotes the failing call, file and line, as AOTRT_CUDA_CHECK does.
#define AOTRT_CUFFT_CHECK(expr)                                                           \
  do {                                                                                    \
    const cufftResult aotrt_status_ = (expr);                                             \
    if (aotrt_status_ != CUFFT_SUCCESS) {                                                 \
      AOTRT_FAIL(kBackend, "cuFFT: ", #expr, " failed: ", cufft_status_name(aotrt_status_), \
                 " (", __FILE__, ":", __LINE__, ")");                                     \
    }                                                                                     \
  } while (0)

enum class Kind { kC2C, kR2C, kC2R };
// The precision a transform runs in (cuFFT's half needs powers of two: the
// family checks).
enum class Precision { kHalf, kFloat, kDouble };

Precision precision_of(ScalarType t) {
  switch (t) {
    case ScalarType::Float16:
    case ScalarType::Complex32: return Precision::kHalf;
    case ScalarType::Float64:
    case ScalarType::Complex128: return Precision::kDouble;
    default: return Precision::kFloat;
  }
}

// A batch of lines in a view: line b starts at element b * dist, its element
// k lies at k * stride from there.
struct Lines {
  int64_t count = 1, dist = 1, stride = 1;
};

struct PlanKey {
  int device;
  Kind kind;
  Precision precision;
  int64_t n, batch, istride, idist, ostride, odist;
  bool operator==(const PlanKey&) const = default;
};

// cuFFT's data types of the real and complex sides.
cudaDataType real_type(Precision p) {
  return p == Precision::kHalf ? CUDA_R_16F : p == Precision::kFloat ? CUDA_R_32F : CUDA_R_64F;
}
cudaDataType complex_type(Precision p) {
  return p == Precision::kHalf ? CUDA_C_16F : p == Precision::kFloat ? CUDA_C_32F : CUDA_C_64F;
}

// A cuFFT handle, destroyed with its owner (errors there are ignored).
struct CufftHandle {
  cufftHandle handle = 0;
  CufftHandle() { AOTRT_CUFFT_CHECK(cufftCreate(&handle)); }
  CufftHandle(const CufftHandle&) = delete;
  CufftHandle& operator=(const CufftHandle&) = delete;
  ~CufftHandle() { (void)cufftDestroy(handle); }
};

// A cuFFT plan for key (made with key.device current) and the work area it
// needs. A plan that cuFFT refuses is destroyed as it is thrown.
class Plan {
 public:
  explicit Plan(const PlanKey& k) {
    AOTRT_CUFFT_CHECK(cufftSetAutoAllocation(plan_.handle, 0));
    const long long bins = k.n / 2 + 1;
    long long n[1] = {k.n};
    // Non-null embeds select the advanced layout (rank 1: only the strides
    // and distances count).
    long long inembed[1] = {k.kind == Kind::kC2R ? bins : k.n};
    long long onembed[1] = {k.kind == Kind::kR2C ? bins : k.n};
    // As ATen makes its plans: cufftXtMakePlanMany, any precision.
    const cudaDataType complex = complex_type(k.precision), real = real_type(k.precision);
    AOTRT_CUFFT_CHECK(cufftXtMakePlanMany(
        plan_.handle, 1, n, inembed, k.istride, k.idist, k.kind == Kind::kR2C ? real : complex,
        onembed, k.ostride, k.odist, k.kind == Kind::kC2R ? real : complex, k.batch,
        &work_bytes_, complex));
  }
  cufftHandle handle() const { return plan_.handle; }
  size_t work_bytes() const { return work_bytes_; }

 private:
  CufftHandle plan_;
  size_t work_bytes_ = 0;
};

class PlanCache {
 public:
  // Enough for every transform of a model: an eviction destroys a plan
  // (cudaFree inside cuFFT, which may wait for the device) and the next
  // call of its shape plans again, which a CUDA graph capture cannot do.
  static constexpr size_t kPlanCacheSize = 256;

  // The plan for key, most recently used first. Destroyed at thread exit,
  // which for the main thread is before the CUDA runtime's own teardown.
  const Plan& get(const PlanKey& key) {
    for (auto it = plans_.begin(); it != plans_.end(); ++it) {
      if (it->first == key) {
        plans_.splice(plans_.begin(), plans_, it);
        return plans_.front().second;
      }
    }
    if (plans_.size() >= kPlanCacheSize) plans_.pop_back();
    plans_.emplace_front(std::piecewise_construct, std::forward_as_tuple(key),
                         std::forward_as_tuple(key));
    return plans_.front().second;
  }

 private:
  std::list<std::pair<PlanKey, Plan>> plans_;
};

thread_local PlanCache t_plans;

// Runs one batch of 1-D transforms of length n from src to dst.
void execute(Kind kind, Precision precision, int64_t n, const Lines& in, const Lines& out,
             void* src, void* dst, bool forward, int device, cudaStream_t stream) {
  const PlanKey key{device,  kind,     precision, n,       in.count,
                    in.stride, in.dist, out.stride, out.dist};
  const Plan& p = t_plans.get(key);
  const cufftHandle plan = p.handle();
  // A null work area would leave cuFFT without one: at least one byte.
  DeviceBuffer work(device, std::max<size_t>(p.work_bytes(), 1));
  AOTRT_CUFFT_CHECK(cufftSetStream(plan, stream));
  AOTRT_CUFFT_CHECK(cufftSetWorkArea(plan, work.data()));
  AOTRT_CUFFT_CHECK(cufftXtExec(plan, src, dst, forward ? CUFFT_FORWARD : CUFFT_INVERSE));
}

// The other dims of dst and src (the same sizes but along `dim`) as one batch
// of lines in each (Note [cuFFT passes]), or nothing when they do not collapse.
std::optional<std::pair<Lines, Lines>> collapse(const StridedView& dst, const StridedView& src,
                                                int64_t dim) {
  std::vector<int64_t> others;
  for (int64_t d = 0; d < dst.dim(); ++d) {
    if (d != dim && dst.sizes[d] != 1) others.push_back(d);
  }
  std::stable_sort(others.begin(), others.end(), [&](int64_t a, int64_t b) {
    return dst.strides[a] != dst.strides[b] ? dst.strides[a] > dst.strides[b]
                                            : src.strides[a] > src.strides[b];
  });
  Lines out{1, dst.sizes[dim] * dst.strides[dim], dst.strides[dim]};
  Lines in{1, src.sizes[dim] * src.strides[dim], src.strides[dim]};
  if (!others.empty()) {
    const int64_t inner = others.back();
    out.count = in.count = dst.sizes[inner];
    out.dist = dst.strides[inner];
    in.dist = src.strides[inner];
    for (size_t k = others.size() - 1; k-- > 0;) {
      const int64_t d = others[k];
      if (dst.strides[d] != out.dist * out.count || src.strides[d] != in.dist * in.count) {
        return std::nullopt;
      }
      out.count = in.count *= dst.sizes[d];
    }
  }
  if (out.stride <= 0 || in.stride <= 0 || out.dist <= 0 || in.dist <= 0) return std::nullopt;
  return std::make_pair(out, in);
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

StridedView with_sizes(const StridedView& v, std::span<const int64_t> sizes,
                       std::span<const int64_t> strides) {
  return StridedView{v.data, sizes, strides, v.dtype, v.device};
}

ScalarType real_of(ScalarType complex) {
  return complex == ScalarType::Complex128  ? ScalarType::Float64
         : complex == ScalarType::Complex32 ? ScalarType::Float16
                                            : ScalarType::Float32;
}

// The real parts of a complex view: sizes as v's, strides in real elements.
struct RealPart {
  std::vector<int64_t> strides;
  StridedView view;
  explicit RealPart(const StridedView& v)
      : strides(v.strides.begin(), v.strides.end()),
        view{v.data, v.sizes, {}, real_of(v.dtype), v.device} {
    for (int64_t& s : strides) s *= 2;
    view.strides = strides;
  }
};

// One pass of kind along `dim` of n points from src to dst (Note [cuFFT passes]).
// Not for c2r, whose input is always copied first (see c2r below).
void pass(Kind kind, int64_t n, const StridedView& dst, const StridedView& src, int64_t dim,
          bool forward, cudaStream_t stream) {
  const int device = device_of(dst);
  const Precision precision = precision_of(dst.dtype);
  if (n == 1) {
    if (kind == Kind::kC2C) {
      if (dst.data != src.data) copy_device(dst, src, stream);
    } else {  // r2c: the point is its own real bin
      fill_zero_device(dst, stream);
      copy_device(RealPart(dst).view, src, stream);
    }
    return;
  }
  const auto lines = collapse(dst, src, dim);
  // The real input of r2c: aligned as a complex element, and (half) with
  // unit stride, as ATen finds cuFFT needs.
  const bool real_ok = kind != Kind::kR2C ||
                       (aligned(src.data, 2 * src.itemsize()) &&
                        (precision != Precision::kHalf || (lines && lines->second.stride == 1)));
  if (lines && real_ok) {
    execute(kind, precision, n, lines->second, lines->first, src.data, dst.data, forward, device,
            stream);
    return;
  }
  Rows in(src, dim, src.dtype, stream, /*read=*/true, /*own=*/!real_ok);
  Rows out(dst, dim, dst.dtype, stream, /*read=*/false);
  execute(kind, precision, n, Lines{in.count(), in.length(), 1}, Lines{out.count(), out.length(), 1},
          in.data<char>(), out.data<char>(), forward, device, stream);
  out.write_back(stream);
}

// out[i] *= scale over any view of float16/float32/float64 elements, in
// their opmath type (float for float16), as ATen's mul_ does.
template <typename T>
__global__ void scale_kernel(char* data, ShapeIndexer<1> ix, int64_t n, acc_t<T> scale) {
  AOTRT_GRID_STRIDE(i, n) {
    int64_t off[1];
    ix.offsets(i, off);
    T& x = reinterpret_cast<T*>(data)[off[0]];
    x = from_acc<T>(to_acc(x) * scale);
  }
}

void apply_scale(const StridedView& v, double scale, cudaStream_t stream) {
  if (scale == 1.0 || v.numel() == 0) return;
  // A complex view as its (re, im) pairs: one more dim of 2, stride 1.
  const bool is_complex = v.dtype == ScalarType::Complex32 ||
                          v.dtype == ScalarType::Complex64 || v.dtype == ScalarType::Complex128;
  std::vector<int64_t> sizes(v.sizes.begin(), v.sizes.end());
  std::vector<int64_t> strides(v.strides.begin(), v.strides.end());
  if (is_complex) {
    for (int64_t& s : strides) s *= 2;
    sizes.push_back(2);
    strides.push_back(1);
  }
  const std::span<const int64_t> st[1] = {strides};
  const auto ix = make_indexer<1>(sizes, st, "FFT normalization");
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  switch (precision_of(v.dtype)) {
    case Precision::kDouble:
      scale_kernel<double><<<blocks_for(n), kThreads, 0, stream>>>(v.data, ix, n, scale);
      break;
    case Precision::kFloat:
      scale_kernel<float><<<blocks_for(n), kThreads, 0, stream>>>(v.data, ix, n,
                                                                static_cast<float>(scale));
      break;
    case Precision::kHalf:
      scale_kernel<__half><<<blocks_for(n), kThreads, 0, stream>>>(v.data, ix, n,
                                                                 static_cast<float>(scale));
      break;
  }
  AOTRT_CUDA_CHECK_LAUNCH();
}

void c2c(const TensorImpl& out, const TensorImpl& in, std::span<const int64_t> dims, bool forward,
         double scale) {
  const StridedView o = strided_view(out), i = strided_view(in);
  DeviceGuard guard(device_of(o));
  cudaStream_t stream = current_cuda_stream(device_of(o));
  for (size_t k = 0; k < dims.size(); ++k) {
    pass(Kind::kC2C, o.sizes[dims[k]], o, k == 0 ? i : o, dims[k], forward, stream);
  }
  apply_scale(o, scale, stream);
}

void r2c(const TensorImpl& out, const TensorImpl& in, int64_t last, double scale) {
  const StridedView o = strided_view(out), i = strided_view(in);
  const int64_t n = i.sizes[last];
  AOTRT_CHECK(o.sizes[last] == n / 2 + 1, kInternal, "cuFFT r2c: ", o.sizes[last],
              " bins for ", n, " points (one-sided transforms only)");
  DeviceGuard guard(device_of(o));
  cudaStream_t stream = current_cuda_stream(device_of(o));
  pass(Kind::kR2C, n, o, i, last, true, stream);
  apply_scale(o, scale, stream);
}

void c2r(const TensorImpl& out, const TensorImpl& in, int64_t last, double scale) {
  const StridedView o = strided_view(out), i = strided_view(in);
  const int device = device_of(o);
  DeviceGuard guard(device);
  cudaStream_t stream = current_cuda_stream(device);
  const int64_t n = o.sizes[last], bins = n / 2 + 1;
  // The input's lines as dense rows of `bins` elements (dim `last`
  // innermost): its first bins, zeros for any it lacks.
  const RowsLayout r = rows_layout(i, last);
  const int64_t keep = std::min(r.length, bins);
  std::vector<int64_t> rows_sizes = r.sizes, keep_sizes = r.sizes;
  rows_sizes.back() = bins;
  keep_sizes.back() = keep;
  const std::vector<int64_t> rows_strides = dense_strides(rows_sizes);
  DeviceBuffer copy(device, static_cast<size_t>(r.count * bins) * i.itemsize());
  const StridedView rows{static_cast<char*>(copy.data()), rows_sizes, rows_strides, i.dtype,
                         i.device};
  if (keep < bins) fill_zero_device(rows, stream);
  if (keep > 0 && r.count > 0) {
    copy_device(with_sizes(rows, keep_sizes, rows_strides), with_sizes(i, keep_sizes, r.strides),
                stream);
  }
  if (n == 1) {  // one point: the real part of its DC bin
    Rows dst(o, last, o.dtype, stream, /*read=*/false);
    copy_device(StridedView{dst.data<char>(), rows_sizes, rows_strides, o.dtype, o.device},
                RealPart(rows).view, stream);
    dst.write_back(stream);
  } else {
    Rows dst(o, last, o.dtype, stream, /*read=*/false,
             /*own=*/!aligned(o.data, 2 * o.itemsize()));
    execute(Kind::kC2R, precision_of(o.dtype), n, Lines{r.count, bins, 1},
            Lines{dst.count(), dst.length(), 1}, copy.data(), dst.data<char>(), false, device,
            stream);
    dst.write_back(stream);
  }
  apply_scale(o, scale, stream);
}

constexpr FftKernels kFft{.c2c = c2c, .r2c = r2c, .c2r = c2r};
AOTRT_REGISTER_KERNELS(FftKernels, cuda, kFft);

}  // namespace
}  // namespace aotrt::cuda
