// The CUDA copy kernels (cuda/copy.cu) against cpu::copy_strided on the same
// bytes: every test runs the same copy on the device and on a host mirror of
// both storages and compares the whole destination storage, so a write
// outside the view is caught as well as a wrong element inside it. Float to
// integer conversions follow ATen's CUDA results, not its CPU ones, for NaN
// and out-of-range values (see FloatToIntegerMatchesTorchOnCuda).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "cpu/cpu.h"
#include "cuda_test_util.h"

namespace aotrt::cuda::test {
namespace {

struct CopyCase {
  Layout dst, src;
  ScalarType dst_dtype, src_dtype;
};

// Runs `c` on the device (copy_device) and on the host (cpu::copy_strided)
// and compares the destination storages.
void check_copy(std::mt19937_64& rng, const CopyCase& c, const std::string& label) {
  Mirrored src(static_cast<size_t>(c.src.storage_elems()) * element_size(c.src_dtype));
  Mirrored dst(static_cast<size_t>(c.dst.storage_elems()) * element_size(c.dst_dtype));
  fill_random(rng, c.src_dtype, src.host.data(), c.src.storage_elems());
  fill_random_bytes(rng, dst.host);  // poison: must survive outside the view
  src.upload();
  dst.upload();

  const Device dev = cuda0();
  copy_device(view_of(static_cast<char*>(dst.device.data()), c.dst, c.dst_dtype, dev),
              view_of(static_cast<char*>(src.device.data()), c.src, c.src_dtype, dev),
              current_cuda_stream(0));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << label;
  cpu::copy_strided(view_of(dst.host.data(), c.dst, c.dst_dtype, cpu_device()),
                    view_of(src.host.data(), c.src, c.src_dtype, cpu_device()));
  apply_cuda_float_to_int(dst.host.data(), c.dst, c.dst_dtype, src.host.data(), c.src,
                          c.src_dtype);
  const std::string diff = compare_storages(c.dst_dtype, dst.download(), dst.host);
  EXPECT_EQ(diff, "") << label << "\n  " << dtype_name(c.src_dtype) << " -> "
                      << dtype_name(c.dst_dtype) << "\n  dst " << describe(c.dst) << "\n  src "
                      << describe(c.src);
}

std::vector<int64_t> random_sizes(std::mt19937_64& rng, int max_dims, int64_t max_size) {
  std::vector<int64_t> sizes(rng() % (max_dims + 1));
  for (int64_t& s : sizes) s = rng() % 20 == 0 ? 0 : 1 + static_cast<int64_t>(rng() % max_size);
  return sizes;
}

TEST(CudaCopy, RandomViewsSameDtype) {
  require_device();
  std::mt19937_64 rng(1234);
  const ScalarType dtypes[] = {ScalarType::Bool,     ScalarType::Int16,   ScalarType::Float16,
                               ScalarType::Float32,  ScalarType::Float64, ScalarType::Complex128,
                               ScalarType::Float8_e4m3fn};
  for (int i = 0; i < 400; ++i) {
    const ScalarType dt = dtypes[rng() % std::size(dtypes)];
    const std::vector<int64_t> sizes = random_sizes(rng, 5, 9);
    const CopyCase c{random_layout(rng, sizes, false), random_layout(rng, sizes, true), dt, dt};
    check_copy(rng, c, "random same-dtype case " + std::to_string(i));
    if (HasFailure()) return;
  }
}

TEST(CudaCopy, RandomViewsConvertingDtypes) {
  require_device();
  std::mt19937_64 rng(99);
  const auto& dtypes = device_dtypes();
  for (size_t d = 0; d < dtypes.size(); ++d) {
    for (size_t s = 0; s < dtypes.size(); ++s) {
      for (int i = 0; i < 3; ++i) {
        const std::vector<int64_t> sizes = random_sizes(rng, 4, 7);
        const CopyCase c{random_layout(rng, sizes, false), random_layout(rng, sizes, true),
                         dtypes[d], dtypes[s]};
        check_copy(rng, c, "conversion case " + std::to_string(i));
        if (HasFailure()) return;
      }
    }
  }
}

// torch 2.11's own results on an H200 for x.cuda().to(dtype), x float32 or
// float64 (tmp probe, 2026-11-30); they anchor the reference rule above.
TEST(CudaCopy, FloatToIntegerMatchesTorchOnCuda) {
  require_device();
  const double nan = NAN, inf = INFINITY;
  const std::vector<double> x = {300.7,  -300.7, 1e10,  -1e10, nan,   inf,   -inf,
                                 2.5e9,  -2.5e9, 40000.5, -40000.5, 70000.0, 127.9, -128.9,
                                 255.9,  256.0,  -1.5,  3e19,  -3e19, 65504.0, 4294967296.5};
  const int64_t lo = INT64_MIN, hi = INT64_MAX, lo32 = INT32_MIN, hi32 = INT32_MAX;
  struct Expect {
    ScalarType dst;
    std::vector<int64_t> from_float, from_double;
  };
  const std::vector<int64_t> u8 = {44, 212, 0, 0, 0, 255, 0, 0, 0, 64, 192, 112, 127, 128, 255,
                                   0, 255, 255, 0, 224, 0};
  const std::vector<int64_t> i8 = {44, -44, -1, 0, 0, -1, 0, -1, 0, 64, -64, 112, 127, -128, -1,
                                   0, -1, -1, 0, -32, -1};
  const std::vector<int64_t> i16 = {300, -300, -1, 0, 0, -1, 0, -1, 0, -25536, 25536, 4464, 127,
                                    -128, 255, 256, -1, -1, 0, -32, -1};
  std::vector<int64_t> i32 = {300, -300, hi32, lo32, 0, hi32, lo32, hi32, lo32, 40000, -40000,
                              70000, 127, -128, 255, 256, -1, hi32, lo32, 65504, hi32};
  std::vector<int64_t> i32_from_double = i32;
  i32_from_double[4] = lo32;  // NaN
  const std::vector<int64_t> i64 = {300, -300, 10000000000, -10000000000, lo, hi, lo,
                                    2500000000, -2500000000, 40000, -40000, 70000, 127, -128,
                                    255, 256, -1, hi, lo, 65504, 4294967296};
  const std::vector<Expect> table = {{ScalarType::UInt8, u8, u8},
                                     {ScalarType::Int8, i8, i8},
                                     {ScalarType::Int16, i16, i16},
                                     {ScalarType::Int32, i32, i32_from_double},
                                     {ScalarType::Int64, i64, i64}};
  const int64_t n = static_cast<int64_t>(x.size());
  const std::vector<int64_t> sizes = {n}, strides = {1};
  for (const ScalarType st : {ScalarType::Float32, ScalarType::Float64}) {
    std::vector<char> src_host(n * element_size(st));
    for (int64_t i = 0; i < n; ++i) {
      if (st == ScalarType::Float32) {
        const float f = static_cast<float>(x[i]);
        std::memcpy(src_host.data() + 4 * i, &f, 4);
      } else {
        std::memcpy(src_host.data() + 8 * i, &x[i], 8);
      }
    }
    DeviceBuffer src(0, src_host.size());
    CUDA_OK(cudaMemcpy(src.data(), src_host.data(), src_host.size(), cudaMemcpyHostToDevice));
    for (const Expect& e : table) {
      const std::vector<int64_t>& want = st == ScalarType::Float64 ? e.from_double : e.from_float;
      const size_t dsz = element_size(e.dst);
      DeviceBuffer dst(0, n * dsz);
      copy_device(StridedView{static_cast<char*>(dst.data()), sizes, strides, e.dst, cuda0()},
                  StridedView{static_cast<char*>(src.data()), sizes, strides, st, cuda0()},
                  current_cuda_stream(0));
      std::vector<char> got(n * dsz);
      CUDA_OK(cudaMemcpy(got.data(), dst.data(), got.size(), cudaMemcpyDeviceToHost));
      for (int64_t i = 0; i < n; ++i) {
        int64_t g = 0;
        switch (e.dst) {
          case ScalarType::UInt8: g = static_cast<uint8_t>(got[i]); break;
          case ScalarType::Int8: g = static_cast<int8_t>(got[i]); break;
          case ScalarType::Int16: { int16_t v; std::memcpy(&v, got.data() + 2 * i, 2); g = v; break; }
          case ScalarType::Int32: { int32_t v; std::memcpy(&v, got.data() + 4 * i, 4); g = v; break; }
          default: std::memcpy(&g, got.data() + 8 * i, 8); break;
        }
        EXPECT_EQ(g, want[i]) << dtype_name(st) << " " << x[i] << " -> " << dtype_name(e.dst);
        const double xi = st == ScalarType::Float32 ? static_cast<float>(x[i]) : x[i];
        EXPECT_EQ(cuda_float_to_int(xi, st == ScalarType::Float64, e.dst), want[i])
            << "the tests' reference rule: " << dtype_name(st) << " " << x[i] << " -> "
            << dtype_name(e.dst);
      }
    }
  }
}

TEST(CudaCopy, LargeRandomViewsHitEveryKernel) {
  // Big enough for many blocks, vectorised units and partial tiles.
  require_device();
  std::mt19937_64 rng(7);
  for (int i = 0; i < 40; ++i) {
    const ScalarType dt = i % 3 == 0 ? ScalarType::Float16 : ScalarType::Float32;
    const std::vector<int64_t> sizes = {1 + static_cast<int64_t>(rng() % 3),
                                        1 + static_cast<int64_t>(rng() % 70),
                                        1 + static_cast<int64_t>(rng() % 90),
                                        1 + static_cast<int64_t>(rng() % 40)};
    const CopyCase c{random_layout(rng, sizes, false), random_layout(rng, sizes, i % 4 == 0), dt,
                     i % 5 == 0 ? ScalarType::BFloat16 : dt};
    check_copy(rng, c, "large case " + std::to_string(i));
    if (HasFailure()) return;
  }
}

// The channel half of a channels-last [N, C, H, W] tensor, as the seed's
// hazard produces it, into NCHW-dense (tiled transpose) and channels-last
// dense (16-byte units), and back.
TEST(CudaCopy, ChannelHalfOfChannelsLast) {
  require_device();
  std::mt19937_64 rng(3);
  for (const ScalarType dt : {ScalarType::Float32, ScalarType::Float16, ScalarType::Float64,
                              ScalarType::UInt8}) {
    for (const int64_t first_channel : {int64_t{0}, int64_t{16}, int64_t{1}}) {
      const int64_t n = 2, c = 32, h = 9, w = 37, hc = 16;
      Layout half;
      half.sizes = {n, hc, h, w};
      half.strides = {c * h * w, 1, w * c, c};
      half.offset = first_channel;
      Layout nchw = dense_layout(half.sizes);
      Layout cl;
      cl.sizes = half.sizes;
      cl.strides = {hc * h * w, 1, w * hc, hc};
      check_copy(rng, {nchw, half, dt, dt}, "half -> NCHW");
      check_copy(rng, {cl, half, dt, dt}, "half -> channels-last");
      check_copy(rng, {half, nchw, dt, dt}, "NCHW -> half");
      check_copy(rng, {half, cl, dt, dt}, "channels-last -> half");
      check_copy(rng, {nchw, half, ScalarType::Float32, dt}, "half -> NCHW float32");
      if (HasFailure()) return;
    }
  }
}

TEST(CudaCopy, Transposes) {
  require_device();
  std::mt19937_64 rng(5);
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {1000, 3}, {3, 1000}, {33, 65}, {64, 64}, {257, 129}, {8, 8}, {7, 9}}) {
    for (const ScalarType dt : {ScalarType::Float32, ScalarType::Int8, ScalarType::Int64,
                                ScalarType::Complex128}) {
      Layout src = dense_layout({cols, rows});
      std::swap(src.sizes[0], src.sizes[1]);
      std::swap(src.strides[0], src.strides[1]);
      src.offset = 3;
      check_copy(rng, {dense_layout({rows, cols}), src, dt, dt},
                 "transpose " + std::to_string(rows) + "x" + std::to_string(cols));
    }
  }
  // A batched transpose with the batch dim innermost in neither side.
  Layout src;
  src.sizes = {5, 40, 50};
  src.strides = {1, 5 * 50, 5};
  check_copy(rng, {dense_layout(src.sizes), src, ScalarType::Float32, ScalarType::Float32},
             "batched transpose");
}

TEST(CudaCopy, EdgeShapes) {
  require_device();
  std::mt19937_64 rng(11);
  const ScalarType f = ScalarType::Float32;
  // 0-d
  check_copy(rng, {Layout{{}, {}, 2}, Layout{{}, {}, 5}, f, f}, "0-d");
  check_copy(rng, {Layout{{}, {}, 1}, Layout{{}, {}, 0}, ScalarType::Int64, f}, "0-d converting");
  // size 0
  check_copy(rng, {Layout{{3, 0, 2}, {0, 2, 1}, 0}, Layout{{3, 0, 2}, {4, 4, 1}, 1}, f, f},
             "size 0");
  // stride-0 source (broadcast) in every position
  check_copy(rng, {dense_layout({4, 5, 6}), Layout{{4, 5, 6}, {0, 6, 1}, 0}, f, f}, "bcast outer");
  check_copy(rng, {dense_layout({4, 5, 6}), Layout{{4, 5, 6}, {30, 0, 1}, 0}, f, f}, "bcast mid");
  check_copy(rng, {dense_layout({4, 5, 6}), Layout{{4, 5, 6}, {5, 1, 0}, 1}, f, f}, "bcast inner");
  check_copy(rng, {dense_layout({4, 5, 6}), Layout{{4, 5, 6}, {0, 0, 0}, 3}, f, f}, "scalar bcast");
  // one element viewed with odd strides; size-1 dims everywhere
  check_copy(rng, {Layout{{1, 1, 1}, {7, 0, 99}, 1}, Layout{{1, 1, 1}, {1, 1, 1}, 2}, f, f},
             "size-1 dims");
  // dense on both sides: the memcpy path, at an unaligned offset
  check_copy(rng, {Layout{{1000}, {1}, 1}, Layout{{1000}, {1}, 3}, f, f}, "memcpy unaligned");
  check_copy(rng, {Layout{{999}, {1}, 0}, Layout{{999}, {1}, 0}, ScalarType::Int8,
                   ScalarType::Int8}, "memcpy bytes");
  // 16-byte units possible on one side only
  check_copy(rng, {Layout{{64, 8}, {8, 1}, 0}, Layout{{64, 8}, {12, 1}, 4}, f, f},
             "rows of 32 bytes, source rows 48 bytes apart");
  check_copy(rng, {Layout{{64, 8}, {8, 1}, 0}, Layout{{64, 8}, {12, 1}, 1}, f, f},
             "rows at 4-byte alignment only");
  // negative-free but overlapping source (stride smaller than the row)
  check_copy(rng, {dense_layout({10, 8}), Layout{{10, 8}, {3, 1}, 0}, f, f}, "overlapping rows");
  // many dims, each of size 2, permuted: merging cannot help
  Layout many;
  for (int i = 0; i < 12; ++i) many.sizes.push_back(2);
  many.strides = contiguous_strides(many.sizes);
  std::reverse(many.strides.begin(), many.strides.end());
  check_copy(rng, {dense_layout(many.sizes), many, f, f}, "12 reversed dims");
}

TEST(CudaCopy, MisalignedTypedConversion) {
  // A borrowed pointer need not be aligned to its element size.
  require_device();
  std::mt19937_64 rng(13);
  DeviceBuffer raw(0, 4096);
  std::vector<float> host(100);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) * 0.5f - 7.0f;
  char* odd = static_cast<char*>(raw.data()) + 1;
  CUDA_OK(cudaMemcpy(odd, host.data(), 400, cudaMemcpyHostToDevice));
  const std::vector<int64_t> sizes = {100}, strides = {1};
  DeviceBuffer out(0, 800);
  const Device dev = cuda0();
  copy_device(StridedView{static_cast<char*>(out.data()), sizes, strides, ScalarType::Float64, dev},
              StridedView{odd, sizes, strides, ScalarType::Float32, dev}, current_cuda_stream(0));
  std::vector<double> got(100);
  CUDA_OK(cudaMemcpy(got.data(), out.data(), 800, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], host[i]) << i;
}

TEST(CudaCopy, GatherScatterRoundTrip) {
  require_device();
  std::mt19937_64 rng(17);
  for (int i = 0; i < 100; ++i) {
    const ScalarType dt = i % 2 ? ScalarType::Float32 : ScalarType::BFloat16;
    const std::vector<int64_t> sizes = random_sizes(rng, 5, 12);
    const Layout l = random_layout(rng, sizes, false);
    const size_t isz = element_size(dt);
    Mirrored storage(static_cast<size_t>(l.storage_elems()) * isz);
    fill_random_bytes(rng, storage.host);
    storage.upload();
    const StridedView v = view_of(static_cast<char*>(storage.device.data()), l, dt, cuda0());
    const size_t dense_bytes = static_cast<size_t>(l.numel()) * isz;
    DeviceBuffer dense(0, dense_bytes);
    gather(dense.data(), v, current_cuda_stream(0));
    // The dense buffer equals the host's row-major packing of the view.
    std::vector<char> want(dense_bytes);
    const std::vector<int64_t> rm = contiguous_strides(sizes);
    cpu::copy_strided(StridedView{want.data(), sizes, rm, dt, cpu_device()},
                      view_of(storage.host.data(), l, dt, cpu_device()));
    std::vector<char> got(dense_bytes);
    if (dense_bytes) CUDA_OK(cudaMemcpy(got.data(), dense.data(), dense_bytes, cudaMemcpyDeviceToHost));
    ASSERT_EQ(got, want) << "gather of " << describe(l);
    // Scatter into a zeroed copy of the storage: the view's elements return,
    // the holes stay zero.
    CUDA_OK(cudaMemset(storage.device.data(), 0, storage.host.size()));
    scatter(v, dense.data(), current_cuda_stream(0));
    std::vector<char> zeroed(storage.host.size(), 0);
    cpu::copy_strided(view_of(zeroed.data(), l, dt, cpu_device()),
                      StridedView{want.data(), sizes, rm, dt, cpu_device()});
    ASSERT_EQ(storage.download(), zeroed) << "scatter of " << describe(l);
  }
}

TEST(CudaCopy, PackIfNeeded) {
  require_device();
  std::vector<float> host(6 * 4);
  std::iota(host.begin(), host.end(), 1.0f);
  DeviceBuffer buf(0, host.size() * 4);
  CUDA_OK(cudaMemcpy(buf.data(), host.data(), host.size() * 4, cudaMemcpyHostToDevice));
  const std::vector<int64_t> sizes = {4, 6}, t_strides = {1, 4}, c_strides = {6, 1};
  const StridedView contiguous{static_cast<char*>(buf.data()), sizes, c_strides,
                               ScalarType::Float32, cuda0()};
  PackedInput same = pack_if_needed(contiguous, current_cuda_stream(0));
  EXPECT_EQ(same.buffer.data(), nullptr);
  EXPECT_EQ(same.view.data, contiguous.data);

  const StridedView transposed{static_cast<char*>(buf.data()), sizes, t_strides,
                               ScalarType::Float32, cuda0()};
  PackedInput packed = pack_if_needed(transposed, current_cuda_stream(0));
  ASSERT_NE(packed.buffer.data(), nullptr);
  EXPECT_EQ(std::vector<int64_t>(packed.view.strides.begin(), packed.view.strides.end()),
            (std::vector<int64_t>{6, 1}));
  std::vector<float> got(24);
  CUDA_OK(cudaMemcpy(got.data(), packed.view.data, 96, cudaMemcpyDeviceToHost));
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) EXPECT_EQ(got[i * 6 + j], host[j * 4 + i]);
}

TEST(CudaCopy, FillZero) {
  require_device();
  std::mt19937_64 rng(23);
  for (int i = 0; i < 60; ++i) {
    const ScalarType dt = i % 3 == 0 ? ScalarType::Float16 : ScalarType::Float32;
    const std::vector<int64_t> sizes = random_sizes(rng, 4, 10);
    // Destinations with stride-0 dims too: zero_ of an expanded view is valid.
    const Layout l = random_layout(rng, sizes, i % 4 == 0);
    Mirrored storage(static_cast<size_t>(l.storage_elems()) * element_size(dt));
    fill_random_bytes(rng, storage.host);
    storage.upload();
    fill_zero_device(view_of(static_cast<char*>(storage.device.data()), l, dt, cuda0()),
                     current_cuda_stream(0));
    cpu::fill_zero(view_of(storage.host.data(), l, dt, cpu_device()));
    ASSERT_EQ(storage.download(), storage.host) << describe(l);
  }
}

// Note [Complex conversions on CUDA], against ATen's copy_ semantics: a real value
// becomes (v, 0), complex narrows or widens part by part, complex to bool is "either part
// nonzero", complex to another real dtype keeps the real part.
TEST(CudaCopy, ComplexConversionsAsATen) {
  require_device();
  const Device dev = cuda0();
  const std::vector<int64_t> sizes = {4}, strides = {1};
  auto convert = [&](ScalarType to, ScalarType from, const std::vector<char>& in) {
    Mirrored src(in.size()), dst(4 * element_size(to));
    src.host = in;
    src.upload();
    copy_device(StridedView{static_cast<char*>(dst.device.data()), sizes, strides, to, dev},
                StridedView{static_cast<char*>(src.device.data()), sizes, strides, from, dev},
                current_cuda_stream(0));
    return dst.download();
  };
  auto bytes = [](const auto& values) {
    std::vector<char> b(sizeof(values[0]) * values.size());
    std::memcpy(b.data(), values.data(), b.size());
    return b;
  };
  const std::vector<float> reals = {1.5f, -2.0f, 0.0f, 65504.0f};
  const std::vector<char> c64 = convert(ScalarType::Complex64, ScalarType::Float32, bytes(reals));
  const std::vector<float> pairs = {1.5f, 0, -2.0f, 0, 0, 0, 65504.0f, 0};
  EXPECT_EQ(c64, bytes(pairs));
  const std::vector<float> z = {1, 2, 0, 0, 0, -3, -0.5f, 0.25f};
  const std::vector<char> zb = bytes(z);
  const std::vector<float> re = {1, 0, 0, -0.5f};
  EXPECT_EQ(convert(ScalarType::Float32, ScalarType::Complex64, zb), bytes(re));
  const std::vector<bool> truth = {true, false, true, true};
  const std::vector<char> as_bool = convert(ScalarType::Bool, ScalarType::Complex64, zb);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(as_bool[i] != 0, truth[i]) << i;
  const std::vector<double> wide = {1, 2, 0, 0, 0, -3, -0.5, 0.25};
  const std::vector<char> c128 = convert(ScalarType::Complex128, ScalarType::Complex64, zb);
  EXPECT_EQ(c128, bytes(wide));
  // complex32 and back: every value here is a half exactly.
  const std::vector<char> c32 = convert(ScalarType::Complex32, ScalarType::Complex64, zb);
  EXPECT_EQ(convert(ScalarType::Complex64, ScalarType::Complex32, c32), zb);
  const std::vector<int64_t> ints = {1, 0, 0, 0};  // real parts 1, 0, 0, -0.5 truncated
  EXPECT_EQ(convert(ScalarType::Int64, ScalarType::Complex64, zb), bytes(ints));
}

// fill_device writes one element's bytes through any view, aligned or not, as a CPU
// copy from a broadcast scalar of the same value writes them.
TEST(CudaCopy, FillWritesTheValueThroughAnyView) {
  require_device();
  std::mt19937_64 rng(31);
  const ScalarType dtypes[] = {ScalarType::Float32,   ScalarType::Float16, ScalarType::BFloat16,
                               ScalarType::Int64,     ScalarType::UInt8,   ScalarType::Bool,
                               ScalarType::Complex64, ScalarType::Complex128};
  for (int i = 0; i < 48; ++i) {
    const ScalarType dt = dtypes[i % 8];
    const size_t item = element_size(dt);
    const std::vector<int64_t> sizes = random_sizes(rng, 4, 9);
    const Layout l = random_layout(rng, sizes, false);
    // Every third case starts one byte in: a view not aligned to its elements.
    const size_t skew = i % 3 == 2 && item > 1 ? 1 : 0;
    Mirrored storage(static_cast<size_t>(l.storage_elems()) * item + skew);
    fill_random_bytes(rng, storage.host);
    storage.upload();
    double value = -2.5;
    alignas(16) unsigned char element[16] = {};
    const std::vector<int64_t> none;
    cpu::copy_strided(StridedView{reinterpret_cast<char*>(element), none, none, dt, cpu_device()},
                      StridedView{reinterpret_cast<char*>(&value), none, none,
                                  ScalarType::Float64, cpu_device()});
    fill_device(view_of(static_cast<char*>(storage.device.data()) + skew, l, dt, cuda0()), element,
                current_cuda_stream(0));
    const std::vector<int64_t> zero(sizes.size(), 0);
    cpu::copy_strided(view_of(storage.host.data() + skew, l, dt, cpu_device()),
                      StridedView{reinterpret_cast<char*>(&value), sizes, zero,
                                  ScalarType::Float64, cpu_device()});
    ASSERT_EQ(storage.download(), storage.host) << describe(l) << " dtype " << dtype_name(dt)
                                                << " skew " << skew;
  }
}

TEST(CudaCopy, RefusesWhatItCannotServe) {
  require_device();
  DeviceBuffer buf(0, 64);
  const std::vector<int64_t> sizes = {4}, strides = {1}, zero = {0};
  char* p = static_cast<char*>(buf.data());
  const Device dev = cuda0();
  try {
    copy_device(StridedView{p, sizes, strides, ScalarType::Float8_e4m3fn, dev},
                StridedView{p + 32, sizes, strides, ScalarType::Float32, dev},
                current_cuda_stream(0));
    FAIL() << "a float8 conversion was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("float8_e4m3fn"), std::string::npos) << e.what();
  }
  try {
    copy_device(StridedView{p, sizes, zero, ScalarType::Float32, dev},
                StridedView{p + 32, sizes, strides, ScalarType::Float32, dev},
                current_cuda_stream(0));
    FAIL() << "a stride-0 destination was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
  }
}

}  // namespace
}  // namespace aotrt::cuda::test
