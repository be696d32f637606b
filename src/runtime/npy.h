// NumPy .npy files (format versions 1.0, 2.0 and 3.0): what `aotrt run`
// reads its inputs from and writes its outputs to.
//
// Dtypes: <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1 <c8 <c16 ('=' for
// native order is read as '<'; big-endian and structured dtypes are refused).
// bfloat16 and float8 have no numpy dtype: write() refuses them, the caller
// converts first.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "aotrt/aotrt.h"

namespace aotrt::npy {

struct Header {
  ScalarType dtype = ScalarType::Float32;
  bool fortran_order = false;
  std::vector<int64_t> shape;
  uint64_t data_offset = 0;  // bytes from the file start to the first element
};

// numpy's descr for a dtype ("<f4"), or null when numpy has none.
const char* descr_of(ScalarType dtype);

// Parses the magic, version and header dict at the start of `bytes`, which
// must hold at least the whole header. Throws kInvalidArgument naming `what`.
Header parse_header(std::span<const uint8_t> bytes, const std::string& what);

// The bytes of a .npy header (magic to padding) for a dense C-order array;
// version 1.0 unless the header needs 2.0's longer length field.
std::string make_header(ScalarType dtype, std::span<const int64_t> shape);

// Reads a file into a new CPU tensor owned by the caller. A fortran_order
// array keeps its bytes as they are and gets column-major strides.
Tensor read(const std::string& path);

// Writes any tensor (any strides, any device) as a dense C-order array.
void write(const std::string& path, const Tensor& tensor);

}  // namespace aotrt::npy
