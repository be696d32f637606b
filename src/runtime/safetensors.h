// The safetensors format (Hugging Face): an 8-byte little-endian header
// length N, N bytes of a JSON object mapping each tensor's name to
// {"dtype": "F32"|"BF16"|..., "shape": [...], "data_offsets": [begin, end]}
// (offsets into the data that follows the header; an optional
// "__metadata__" entry maps strings to strings), then the raw row-major
// little-endian bytes. What Weights::from_safetensors reads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "aotrt/dtype.h"

namespace aotrt::safetensors {

struct Entry {
  std::string name;
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // bytes, from the start of the file
};

// Parses and checks the header of a whole file held in `bytes`: every entry
// has a known dtype, a shape of non-negative sizes, and offsets inside the
// data whose length is exactly shape x element size. Throws
// kInvalidArgument naming `what` and the entry at fault.
std::vector<Entry> parse(std::span<const uint8_t> bytes, const std::string& what);

// The dtype a safetensors code names ("BF16" -> BFloat16), or false.
bool dtype_of(const std::string& code, ScalarType* out);

}  // namespace aotrt::safetensors
