// .npy reading and writing: headers byte-for-byte as numpy writes them,
// round trips of every dtype, Fortran order, and what is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "package/temp_dir.h"
#include "package_test_util.h"
#include "runtime/npy.h"

using aotrt::Error;
using aotrt::ScalarType;
using aotrt::Tensor;
using aotrt::package::TempDir;
using namespace aotrt::testing;

namespace {

// numpy 2.4's np.save header for a C-order array, padded to 128 bytes.
std::string numpy_header(const std::string& dict) {
  std::string h = std::string("\x93NUMPY\x01\x00v\x00", 10) + dict;
  h += std::string(127 - h.size(), ' ') + "\n";
  return h;
}

std::string npy_bytes(const std::string& dict, const std::string& data) {
  return numpy_header(dict) + data;
}

template <typename T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

}  // namespace

TEST(Npy, HeadersMatchNumpy) {
  // Expected bytes are what numpy 2.4 wrote for the same arrays.
  const int64_t s34[] = {3, 4}, s5[] = {5}, s203[] = {2, 0, 3};
  EXPECT_EQ(aotrt::npy::make_header(ScalarType::Float32, s34),
            numpy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }"));
  EXPECT_EQ(aotrt::npy::make_header(ScalarType::Int64, s5),
            numpy_header("{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }"));
  EXPECT_EQ(aotrt::npy::make_header(ScalarType::UInt8, {}),
            numpy_header("{'descr': '|u1', 'fortran_order': False, 'shape': (), }"));
  EXPECT_EQ(aotrt::npy::make_header(ScalarType::Bool, s203),
            numpy_header("{'descr': '|b1', 'fortran_order': False, 'shape': (2, 0, 3), }"));
  EXPECT_THROW(aotrt::npy::make_header(ScalarType::BFloat16, s5), Error);
  EXPECT_EQ(aotrt::npy::descr_of(ScalarType::Float16), std::string("<f2"));
  EXPECT_EQ(aotrt::npy::descr_of(ScalarType::BFloat16), nullptr);
}

TEST(Npy, ParsesHeaderVariants) {
  auto parse = [](const std::string& bytes) {
    return aotrt::npy::parse_header(
        {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "t.npy");
  };
  auto h = parse(numpy_header("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }"));
  EXPECT_EQ(h.dtype, ScalarType::Float64);
  EXPECT_TRUE(h.fortran_order);
  EXPECT_EQ(h.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(h.data_offset, 128u);
  // Version 2.0: a 4-byte length; keys in any order, double quotes, 'L' longs.
  const std::string dict = "{\"shape\": (7L,), \"fortran_order\": False, \"descr\": \"=u2\"}\n";
  std::string v2 = std::string("\x93NUMPY\x02\x00", 8);
  const uint32_t len = static_cast<uint32_t>(dict.size());
  v2.append(reinterpret_cast<const char*>(&len), 4);
  v2 += dict;
  h = parse(v2);
  EXPECT_EQ(h.dtype, ScalarType::UInt16);
  EXPECT_EQ(h.shape, (std::vector<int64_t>{7}));
  EXPECT_EQ(h.data_offset, 12 + dict.size());

  EXPECT_THROW(parse(std::string("\x93NUMPX\x01\x00\x10\x00{}", 12)), Error);  // bad magic
  EXPECT_THROW(parse(numpy_header("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }")),
               Error);  // big-endian
  EXPECT_THROW(parse(numpy_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }")),
               Error);  // structured
  EXPECT_THROW(parse(numpy_header("{'descr': '<V2', 'fortran_order': False, 'shape': (1,), }")),
               Error);  // bfloat16 from ml_dtypes
  EXPECT_THROW(parse(numpy_header("{'descr': '<f4', 'shape': (1,), }")), Error);  // missing key
  EXPECT_THROW(parse(numpy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }")),
               Error);
  EXPECT_THROW(parse(numpy_header("{'descr': '<f4', 'fortran_order': maybe, 'shape': (1,), }")),
               Error);
  std::string longlen = numpy_header("{}");
  longlen[8] = '\xff';  // header length runs past the end
  EXPECT_THROW(parse(longlen), Error);
}

TEST(Npy, ReadsNumpyFilesAndFortranOrder) {
  TempDir dir;
  // C order, float32 (3, 2): values 0..5.
  const std::vector<float> c = {0, 1, 2, 3, 4, 5};
  write_file(dir.path() + "/c.npy",
             npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", raw(c)));
  Tensor t = aotrt::npy::read(dir.path() + "/c.npy");
  EXPECT_EQ(t.dtype(), ScalarType::Float32);
  EXPECT_EQ(std::vector<int64_t>(t.sizes().begin(), t.sizes().end()), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(std::vector<int64_t>(t.strides().begin(), t.strides().end()), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(std::memcmp(t.data_ptr(), c.data(), 24), 0);

  // Fortran order: the same logical array a[i][j] = 2i + j stored column-major
  // (0, 2, 4, 1, 3, 5) reads as a column-major view of those bytes.
  const std::vector<int32_t> f = {0, 2, 4, 1, 3, 5};
  write_file(dir.path() + "/f.npy",
             npy_bytes("{'descr': '<i4', 'fortran_order': True, 'shape': (3, 2), }", raw(f)));
  Tensor tf = aotrt::npy::read(dir.path() + "/f.npy");
  EXPECT_EQ(std::vector<int64_t>(tf.strides().begin(), tf.strides().end()), (std::vector<int64_t>{1, 3}));
  EXPECT_FALSE(tf.is_contiguous());
  EXPECT_EQ(std::memcmp(tf.data_ptr(), f.data(), 24), 0);  // bytes as stored
  // Its dense copy is C order: 0 1 2 3 4 5.
  Tensor dense = tf.dense_host_copy();
  const int32_t* d = static_cast<const int32_t*>(dense.data_ptr());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(d[i], i);
  // Written back, it is C order with the same values.
  aotrt::npy::write(dir.path() + "/back.npy", tf);
  EXPECT_EQ(read_file(dir.path() + "/back.npy"),
            npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (3, 2), }",
                      raw(std::vector<int32_t>{0, 1, 2, 3, 4, 5})));
}

TEST(Npy, RoundTripsEveryDtype) {
  TempDir dir;
  for (ScalarType t : {ScalarType::Float16, ScalarType::Float32, ScalarType::Float64,
                       ScalarType::Int8, ScalarType::Int16, ScalarType::Int32, ScalarType::Int64,
                       ScalarType::UInt8, ScalarType::UInt16, ScalarType::UInt32,
                       ScalarType::UInt64, ScalarType::Bool, ScalarType::Complex64,
                       ScalarType::Complex128}) {
    Tensor a = Tensor::empty({2, 3, 4}, t);
    const size_t n = 24 * aotrt::element_size(t);
    auto* bytes = static_cast<uint8_t*>(a.data_ptr());
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(t == ScalarType::Bool ? i % 2 : i * 7 + 3);
    const std::string path = dir.path() + "/" + aotrt::dtype_name(t) + ".npy";
    aotrt::npy::write(path, a);
    Tensor b = aotrt::npy::read(path);
    EXPECT_EQ(b.dtype(), t);
    EXPECT_EQ(std::vector<int64_t>(b.sizes().begin(), b.sizes().end()), (std::vector<int64_t>{2, 3, 4}));
    EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), n), 0) << aotrt::dtype_name(t);
    EXPECT_EQ(read_file(path).size() % 64, n % 64) << "data must start 64-byte aligned";
  }
  // Scalars and empty arrays.
  Tensor s = Tensor::empty({}, ScalarType::Float64);
  *static_cast<double*>(s.data_ptr()) = 2.5;
  aotrt::npy::write(dir.path() + "/s.npy", s);
  Tensor s2 = aotrt::npy::read(dir.path() + "/s.npy");
  EXPECT_EQ(s2.dim(), 0);
  EXPECT_EQ(*static_cast<double*>(s2.data_ptr()), 2.5);
  aotrt::npy::write(dir.path() + "/e.npy", Tensor::empty({2, 0, 3}, ScalarType::Bool));
  EXPECT_EQ(aotrt::npy::read(dir.path() + "/e.npy").numel(), 0);
}

TEST(Npy, WritesStridedViewsDense) {
  TempDir dir;
  // A transposed, offset view of caller memory: rows of the 4x3 block starting at 1.
  std::vector<float> mem(20);
  for (int i = 0; i < 20; ++i) mem[i] = static_cast<float>(i);
  Tensor v = Tensor::from_blob(mem.data(), {3, 4}, {1, 4}, ScalarType::Float32, aotrt::cpu_device(), 1);
  aotrt::npy::write(dir.path() + "/v.npy", v);
  std::vector<float> expect;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) expect.push_back(static_cast<float>(1 + i + 4 * j));
  EXPECT_EQ(read_file(dir.path() + "/v.npy"),
            npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", raw(expect)));
  EXPECT_THROW(aotrt::npy::write(dir.path() + "/bf.npy", Tensor::empty({2}, ScalarType::BFloat16)),
               Error);
}

TEST(Npy, RefusesBadFiles) {
  TempDir dir;
  EXPECT_THROW(aotrt::npy::read(dir.path() + "/missing.npy"), Error);
  write_file(dir.path() + "/short.npy",
             npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", std::string(20, '\0')));
  try {
    aotrt::npy::read(dir.path() + "/short.npy");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds 20 bytes"), std::string::npos) << e.what();
  }
  write_file(dir.path() + "/long.npy",
             npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0')));
  EXPECT_THROW(aotrt::npy::read(dir.path() + "/long.npy"), Error);
  write_file(dir.path() + "/tiny.npy", "\x93NUM");
  EXPECT_THROW(aotrt::npy::read(dir.path() + "/tiny.npy"), Error);
  write_file(dir.path() + "/huge.npy",
             npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", ""));
  EXPECT_THROW(aotrt::npy::read(dir.path() + "/huge.npy"), Error);
}
