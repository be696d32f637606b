// Copies between CUDA views: the plan is made on the host, the kernels are in
// cuda/copy_kernels.cuh. Mirrors cpu/copy.cpp (the same dim merging); the
// conversions are ATen's on CUDA (Note [Float to integer conversion on CUDA]).
//
// Note [Copy plans]
// A same-dtype copy is planned in bytes: every dim's strides are scaled to
// bytes and an innermost dim of itemsize bytes is added; size-1 dims are
// dropped, the rest ordered by destination stride (innermost last) and
// neighbours merged wherever both sides step over the inner dim exactly, as
// cpu/copy.cpp's make_nest does. The copy then moves units of W bytes, the
// widest of 16, 8, 4, 2, 1 that divides both pointers, every stride and the
// innermost run. One plan, three kernels:
//  - one dense run on both sides: cudaMemcpyAsync;
//  - the destination's innermost dim is not the source's, and the source has
//    a unit-stride dim of its own: a tiled transpose (Note [Tiled transpose]);
//  - otherwise an element-wise kernel over units (16-byte accesses wherever
//    the layout allows: the channel half of a channels-last tensor copies in
//    16-byte units).
// Index arithmetic is 32-bit when every index and offset fits, else 64-bit;
// divisions use IntDivider (Note [Fast integer division]).
// A copy that converts dtypes is planned the same way in elements and runs a
// typed element-wise kernel with 64-bit indices.
#include <cstring>
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>

#include "core/view.h"
#include "cuda/copy_kernels.cuh"
#include "cuda/runtime.h"

namespace aotrt::cuda {
namespace {

using kernels::kMaxDims;

constexpr int kMaxViewDims = 64;
// Below this many units along either tile dim the transpose wastes most of
// its tile; the element-wise kernel is used instead.
constexpr int64_t kMinTransposeSize = 8;

struct Dim {
  int64_t size, dst, src;
};

// A loop nest, outermost dim first.
struct Nest {
  int ndim = 0;
  std::array<Dim, kMaxViewDims + 1> dims{};
  const Dim& inner() const { return dims[ndim - 1]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int k = 0; k < ndim; ++k) n *= dims[k].size;
    return n;
  }
};

// Note [Copy plans]. `src_strides` is empty for a fill; `scale` multiplies
// every stride (the itemsize for a byte plan) and `unit_dim` adds an
// innermost dim of `scale` contiguous units. Destination dims of stride 0
// are kept for copies (callers refuse them) and dropped for fills.
Nest make_nest(std::span<const int64_t> sizes, std::span<const int64_t> dst_strides,
               std::span<const int64_t> src_strides, int64_t scale, bool unit_dim) {
  AOTRT_CHECK(sizes.size() <= kMaxViewDims, kUnsupported, "CUDA copy: ", sizes.size(),
              " dims; at most ", kMaxViewDims, " are served");
  // No source strides is a fill (src stride 0); a 0-d view has none either, and there the
  // element's bytes must still be read in order (a misaligned 0-d copy went byte-wise and
  // broadcast its first byte: the H200 run of CudaCopy.FillWritesTheValueThroughAnyView).
  const bool fill = src_strides.empty() && !sizes.empty();
  std::array<Dim, kMaxViewDims + 1> in{};
  int n = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 1 || (fill && dst_strides[i] == 0)) continue;
    in[n++] = Dim{sizes[i], dst_strides[i] * scale, fill ? 0 : src_strides[i] * scale};
  }
  std::stable_sort(in.begin(), in.begin() + n,
                   [](const Dim& a, const Dim& b) { return a.dst > b.dst; });
  if (unit_dim) in[n++] = Dim{scale, 1, fill ? 0 : 1};
  Nest nest;
  for (int k = 0; k < n; ++k) {
    const Dim& d = in[k];
    if (nest.ndim > 0) {
      Dim& outer = nest.dims[nest.ndim - 1];
      if (outer.dst == d.dst * d.size && outer.src == d.src * d.size) {
        outer = Dim{outer.size * d.size, d.dst, d.src};
        continue;
      }
    }
    nest.dims[nest.ndim++] = d;
  }
  if (nest.ndim == 0) nest.dims[nest.ndim++] = Dim{1, 1, 1};  // one element
  return nest;
}

// The widest unit (16, 8, 4, 2 or 1 bytes) a byte nest can be copied in.
int64_t choose_unit(const Nest& nest, const void* dst, const void* src) {
  const auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  for (int64_t w = 16; w > 1; w /= 2) {
    const auto uw = static_cast<uintptr_t>(w);
    if (d % uw != 0 || s % uw != 0 || nest.inner().size % w != 0) continue;
    bool ok = true;
    for (int k = 0; k < nest.ndim - 1; ++k) {
      ok = ok && nest.dims[k].dst % w == 0 && nest.dims[k].src % w == 0;
    }
    if (ok) return w;
  }
  return 1;
}

// A byte nest whose innermost dim has unit strides, re-expressed in units of w.
Nest to_units(Nest nest, int64_t w) {
  for (int k = 0; k < nest.ndim - 1; ++k) {
    nest.dims[k].dst /= w;
    nest.dims[k].src /= w;
  }
  Dim& in = nest.dims[nest.ndim - 1];
  in.size /= w;
  if (in.size == 1 && nest.ndim > 1) --nest.ndim;  // one unit per element: no dim left
  return nest;
}

// Largest offset (in units) a side of the nest reaches.
int64_t max_offset(const Nest& nest, bool dst_side) {
  int64_t off = 0;
  for (int k = 0; k < nest.ndim; ++k) {
    off += (nest.dims[k].size - 1) * (dst_side ? nest.dims[k].dst : nest.dims[k].src);
  }
  return off;
}

// 32-bit indices when the linear index (and its grid-stride step) and every
// offset fit (Note [Fast integer division] needs indices < 2^31).
bool fits_32bit(const Nest& nest, int64_t count) {
  constexpr int64_t kLimit = int64_t{1} << 30;
  return count < kLimit && nest.numel() < kLimit && max_offset(nest, true) < 2 * kLimit &&
         max_offset(nest, false) < 2 * kLimit;
}

// Offsets over dims [0, end) of the nest, innermost first.
template <typename I>
kernels::Offsets<I> make_offsets(const Nest& nest, int end) {
  AOTRT_CHECK(end <= kMaxDims, kUnsupported, "CUDA copy: the views need ", end,
              " dims after merging; at most ", kMaxDims, " are served");
  kernels::Offsets<I> g;
  g.ndim = end;
  for (int d = 0; d < end; ++d) {
    const Dim& dim = nest.dims[end - 1 - d];
    g.sizes[d] = IntDivider<I>(static_cast<I>(dim.size));
    g.dst[d] = static_cast<I>(dim.dst);
    g.src[d] = static_cast<I>(dim.src);
  }
  return g;
}

unsigned grid_for(int64_t work_items, int64_t per_block) {
  const int64_t blocks = (work_items + per_block - 1) / per_block;
  return static_cast<unsigned>(std::min<int64_t>(blocks, std::numeric_limits<int32_t>::max()));
}

void check_launch(const char* kernel) {
  const cudaError_t e = cudaGetLastError();
  AOTRT_CHECK(e == cudaSuccess, kBackend, "launch of the CUDA ", kernel,
              " kernel failed: ", cudaGetErrorString(e));
}

template <typename T, typename I>
void launch_elementwise(const Nest& nest, char* dst, const char* src, cudaStream_t stream) {
  const int64_t n = nest.numel();
  kernels::copy_units<T, I>
      <<<grid_for(n, kernels::kThreads * kernels::unroll_for<T>()), kernels::kThreads, 0, stream>>>(
          make_offsets<I>(nest, nest.ndim), reinterpret_cast<T*>(dst),
          reinterpret_cast<const T*>(src), static_cast<I>(n));
  check_launch("copy");
}

// The transpose of dims A (innermost of dst, index a) and B (index b) of a
// unit nest; the other dims form the batch.
template <typename T, typename I>
void launch_transpose(const Nest& nest, int a, int b, char* dst, const char* src,
                      cudaStream_t stream) {
  Nest batch;
  for (int k = 0; k < nest.ndim; ++k) {
    if (k != a && k != b) batch.dims[batch.ndim++] = nest.dims[k];
  }
  const Dim& da = nest.dims[a];
  const Dim& db = nest.dims[b];
  constexpr int64_t tile = kernels::kTile;
  const int64_t tiles_a = (da.size + tile - 1) / tile;
  const int64_t tiles_b = (db.size + tile - 1) / tile;
  const int64_t num_tiles = tiles_a * tiles_b * batch.numel();
  kernels::TileGeometry<I> g;
  g.size_a = static_cast<I>(da.size);
  g.size_b = static_cast<I>(db.size);
  g.dst_a = static_cast<I>(da.dst);
  g.dst_b = static_cast<I>(db.dst);
  g.src_a = static_cast<I>(da.src);
  g.src_b = static_cast<I>(db.src);
  g.tiles_a = IntDivider<I>(static_cast<I>(tiles_a));
  g.tiles_b = IntDivider<I>(static_cast<I>(tiles_b));
  g.batch = make_offsets<I>(batch, batch.ndim);
  const dim3 block(32, kernels::kTileRows);
  kernels::transpose_units<T, I><<<grid_for(num_tiles, 1), block, 0, stream>>>(
      g, reinterpret_cast<T*>(dst), reinterpret_cast<const T*>(src), static_cast<I>(num_tiles));
  check_launch("transpose");
}

template <typename T>
void launch_unit_copy(const Nest& nest, char* dst, const char* src, cudaStream_t stream) {
  // The transpose when dst's innermost dim is not src's (Note [Tiled transpose]).
  const int a = nest.ndim - 1;
  if (nest.ndim >= 2 && nest.dims[a].dst == 1 && nest.dims[a].src != 1 &&
      nest.dims[a].size >= kMinTransposeSize) {
    for (int b = a - 1; b >= 0; --b) {
      if (nest.dims[b].src == 1 && nest.dims[b].size >= kMinTransposeSize) {
        constexpr int64_t tile = kernels::kTile;
        const int64_t tiles = (nest.dims[a].size + tile - 1) / tile *
                              ((nest.dims[b].size + tile - 1) / tile) *
                              (nest.numel() / nest.dims[a].size / nest.dims[b].size);
        if (fits_32bit(nest, tiles)) {
          launch_transpose<T, uint32_t>(nest, a, b, dst, src, stream);
        } else {
          launch_transpose<T, uint64_t>(nest, a, b, dst, src, stream);
        }
        return;
      }
    }
  }
  if (fits_32bit(nest, nest.numel())) {
    launch_elementwise<T, uint32_t>(nest, dst, src, stream);
  } else {
    launch_elementwise<T, uint64_t>(nest, dst, src, stream);
  }
}

// A same-dtype copy of raw views (Note [Copy plans]).
void copy_bytes(char* dst, std::span<const int64_t> dst_strides, const char* src,
                std::span<const int64_t> src_strides, std::span<const int64_t> sizes,
                size_t itemsize, cudaStream_t stream) {
  const Nest bytes = make_nest(sizes, dst_strides, src_strides, static_cast<int64_t>(itemsize),
                               /*unit_dim=*/true);
  const int64_t w = choose_unit(bytes, dst, src);
  const Nest units = to_units(bytes, w);
  if (units.ndim == 1 && units.dims[0].dst == 1 && units.dims[0].src == 1) {
    AOTRT_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(units.dims[0].size * w),
                                     cudaMemcpyDeviceToDevice, stream));
    return;
  }
  switch (w) {
    case 16: return launch_unit_copy<kernels::Unit<16>::type>(units, dst, src, stream);
    case 8: return launch_unit_copy<kernels::Unit<8>::type>(units, dst, src, stream);
    case 4: return launch_unit_copy<kernels::Unit<4>::type>(units, dst, src, stream);
    case 2: return launch_unit_copy<kernels::Unit<2>::type>(units, dst, src, stream);
    default: return launch_unit_copy<kernels::Unit<1>::type>(units, dst, src, stream);
  }
}

// --- Conversions ------------------------------------------------------------------------

// Calls f(T{}) with the device type of a dtype the conversion kernels serve.
template <typename F>
bool visit_device_dtype(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::Bool: f(bool{}); return true;
    case ScalarType::UInt8: f(uint8_t{}); return true;
    case ScalarType::Int8: f(int8_t{}); return true;
    case ScalarType::Int16: f(int16_t{}); return true;
    case ScalarType::Int32: f(int32_t{}); return true;
    case ScalarType::Int64: f(int64_t{}); return true;
    case ScalarType::Float16: f(kernels::HalfBits{}); return true;
    case ScalarType::BFloat16: f(kernels::BFloat16Bits{}); return true;
    case ScalarType::Float32: f(float{}); return true;
    case ScalarType::Float64: f(double{}); return true;
    case ScalarType::Complex32: f(kernels::Complex32Bits{}); return true;
    case ScalarType::Complex64: f(kernels::ComplexOf<float>{}); return true;
    case ScalarType::Complex128: f(kernels::ComplexOf<double>{}); return true;
    default: return false;
  }
}

bool is_aligned(const void* p, size_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

void convert(const StridedView& dst, const StridedView& src, cudaStream_t stream) {
  AOTRT_CHECK(can_convert_device(dst.dtype, src.dtype), kUnsupported, "copy from ",
              dtype_name(src.dtype), " to ", dtype_name(dst.dtype),
              " is not served on CUDA devices");
  // Typed accesses need aligned elements; a borrowed pointer may not be.
  if (!is_aligned(src.data, src.itemsize())) {
    const std::vector<int64_t> strides = contiguous_strides(src.sizes);
    DeviceBuffer packed(src.device.index, static_cast<size_t>(src.numel()) * src.itemsize());
    gather(packed.data(), src, stream);
    convert(dst, StridedView{static_cast<char*>(packed.data()), src.sizes, strides, src.dtype,
                             src.device},
            stream);
    return;
  }
  if (!is_aligned(dst.data, dst.itemsize())) {
    const std::vector<int64_t> strides = contiguous_strides(dst.sizes);
    DeviceBuffer packed(dst.device.index, static_cast<size_t>(dst.numel()) * dst.itemsize());
    convert(StridedView{static_cast<char*>(packed.data()), dst.sizes, strides, dst.dtype,
                        dst.device},
            src, stream);
    scatter(dst, packed.data(), stream);
    return;
  }
  const Nest nest = make_nest(dst.sizes, dst.strides, src.strides, 1, /*unit_dim=*/false);
  const kernels::Offsets<uint64_t> g = make_offsets<uint64_t>(nest, nest.ndim);
  const auto n = static_cast<uint64_t>(nest.numel());
  const unsigned grid = std::min(grid_for(static_cast<int64_t>(n), kernels::kThreads), 1u << 20);
  visit_device_dtype(dst.dtype, [&](auto d) {
    visit_device_dtype(src.dtype, [&](auto s) {
      using D = decltype(d);
      using S = decltype(s);
      kernels::convert_elements<D, S><<<grid, kernels::kThreads, 0, stream>>>(
          g, reinterpret_cast<D*>(dst.data), reinterpret_cast<const S*>(src.data), n);
    });
  });
  check_launch("convert");
}

void check_same_sizes(const StridedView& dst, const StridedView& src, const char* what) {
  AOTRT_CHECK(dst.sizes.size() == src.sizes.size() &&
                  std::equal(dst.sizes.begin(), dst.sizes.end(), src.sizes.begin()),
              kInternal, what, ": views of different sizes");
  AOTRT_CHECK(dst.strides.size() == dst.sizes.size() && src.strides.size() == src.sizes.size(),
              kInternal, what, ": strides and sizes of different rank");
}

void check_no_broadcast_dst(const StridedView& dst, const char* what) {
  for (size_t i = 0; i < dst.sizes.size(); ++i) {
    AOTRT_CHECK(dst.strides[i] != 0 || dst.sizes[i] <= 1, kInvalidArgument, what,
                ": the destination has a stride-0 dim ", i, " of size ", dst.sizes[i],
                " (several elements would be written to one location)");
  }
}

}  // namespace

bool can_convert_device(ScalarType dst, ScalarType src) {
  if (dst == src) return true;
  bool ok = false;
  visit_device_dtype(dst, [&](auto) { ok = visit_device_dtype(src, [](auto) {}); });
  return ok;
}

void copy_device(const StridedView& dst, const StridedView& src, cudaStream_t stream) {
  check_same_sizes(dst, src, "copy_device");
  AOTRT_CHECK(dst.device.is_cuda() && src.device == dst.device, kInternal,
              "copy_device: views on ", src.device.str(), " and ", dst.device.str());
  if (dst.numel() == 0) return;
  check_no_broadcast_dst(dst, "copy_device");
  DeviceGuard guard(dst.device.index);
  if (dst.dtype == src.dtype) {
    copy_bytes(dst.data, dst.strides, src.data, src.strides, dst.sizes, dst.itemsize(), stream);
  } else {
    convert(dst, src, stream);
  }
}

void gather(void* dense_dst, const StridedView& src, cudaStream_t stream) {
  if (src.numel() == 0) return;
  const std::vector<int64_t> strides = contiguous_strides(src.sizes);
  DeviceGuard guard(src.device.index);
  copy_bytes(static_cast<char*>(dense_dst), strides, src.data, src.strides, src.sizes,
             src.itemsize(), stream);
}

void scatter(const StridedView& dst, const void* dense_src, cudaStream_t stream) {
  if (dst.numel() == 0) return;
  check_no_broadcast_dst(dst, "scatter");
  const std::vector<int64_t> strides = contiguous_strides(dst.sizes);
  DeviceGuard guard(dst.device.index);
  copy_bytes(dst.data, dst.strides, static_cast<const char*>(dense_src), strides, dst.sizes,
             dst.itemsize(), stream);
}

void fill_device(const StridedView& dst, const void* element, cudaStream_t stream) {
  if (dst.numel() == 0) return;
  DeviceGuard guard(dst.device.index);
  const auto itemsize = static_cast<int64_t>(dst.itemsize());
  const Nest bytes = make_nest(dst.sizes, dst.strides, {}, itemsize, /*unit_dim=*/true);
  const int64_t w = choose_unit(bytes, dst.data, dst.data);
  if (w < itemsize) {
    // A view not aligned to its elements (a borrowed odd address): fill a
    // dense aligned temporary, then copy it over byte by byte.
    const std::vector<int64_t> strides = contiguous_strides(dst.sizes);
    DeviceBuffer dense(dst.device.index, static_cast<size_t>(dst.numel()) * dst.itemsize());
    fill_device(StridedView{static_cast<char*>(dense.data()), dst.sizes, strides, dst.dtype,
                            dst.device},
                element, stream);
    scatter(dst, dense.data(), stream);
    return;
  }
  const Nest units = to_units(bytes, w);
  // Every unit holds w / itemsize whole elements (w >= itemsize, both powers
  // of two, and units start at element boundaries): its bytes repeat the element.
  unsigned char pattern[16];
  const auto* e = static_cast<const unsigned char*>(element);
  for (int64_t b = 0; b < w; ++b) pattern[b] = e[b % itemsize];
  const bool one_byte = std::all_of(e, e + itemsize, [&](unsigned char c) { return c == e[0]; });
  if (units.ndim == 1 && units.dims[0].dst == 1 && one_byte) {
    AOTRT_CUDA_CHECK(cudaMemsetAsync(dst.data, e[0], static_cast<size_t>(units.dims[0].size * w),
                                     stream));
    return;
  }
  const int64_t n = units.numel();
  auto launch = [&](auto unit) {
    using T = decltype(unit);
    T value;
    std::memcpy(&value, pattern, sizeof value);
    if (fits_32bit(units, n)) {
      kernels::fill_units<T, uint32_t><<<grid_for(n, kernels::kThreads), kernels::kThreads, 0,
                                         stream>>>(make_offsets<uint32_t>(units, units.ndim),
                                                   reinterpret_cast<T*>(dst.data), value,
                                                   static_cast<uint32_t>(n));
    } else {
      kernels::fill_units<T, uint64_t><<<grid_for(n, kernels::kThreads), kernels::kThreads, 0,
                                         stream>>>(make_offsets<uint64_t>(units, units.ndim),
                                                   reinterpret_cast<T*>(dst.data), value,
                                                   static_cast<uint64_t>(n));
    }
    check_launch("fill");
  };
  switch (w) {
    case 16: return launch(kernels::Unit<16>::type{});
    case 8: return launch(kernels::Unit<8>::type{});
    case 4: return launch(kernels::Unit<4>::type{});
    case 2: return launch(kernels::Unit<2>::type{});
    default: return launch(kernels::Unit<1>::type{});
  }
}

void fill_zero_device(const StridedView& dst, cudaStream_t stream) {
  static constexpr unsigned char kZero[16] = {};
  fill_device(dst, kZero, stream);
}

PackedInput pack_if_needed(const StridedView& src, cudaStream_t stream) {
  PackedInput packed;
  if (is_contiguous(src.sizes, src.strides)) {
    packed.view = src;
    return packed;
  }
  packed.strides = contiguous_strides(src.sizes);
  packed.buffer = DeviceBuffer(src.device.index, static_cast<size_t>(src.numel()) * src.itemsize());
  gather(packed.buffer.data(), src, stream);
  packed.view = StridedView{static_cast<char*>(packed.buffer.data()), src.sizes, packed.strides,
                            src.dtype, src.device};
  return packed;
}

}  // namespace aotrt::cuda
