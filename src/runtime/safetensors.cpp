#include "runtime/safetensors.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <limits>

#include "core/error.h"

namespace aotrt::safetensors {
namespace {

// A header larger than this is refused (safetensors' own limit is 100 MB).
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;

}  // namespace

bool dtype_of(const std::string& code, ScalarType* out) {
  static const std::pair<const char*, ScalarType> kCodes[] = {
      {"BOOL", ScalarType::Bool},          {"U8", ScalarType::UInt8},
      {"I8", ScalarType::Int8},            {"I16", ScalarType::Int16},
      {"U16", ScalarType::UInt16},         {"I32", ScalarType::Int32},
      {"U32", ScalarType::UInt32},         {"I64", ScalarType::Int64},
      {"U64", ScalarType::UInt64},         {"F16", ScalarType::Float16},
      {"BF16", ScalarType::BFloat16},      {"F32", ScalarType::Float32},
      {"F64", ScalarType::Float64},        {"F8_E4M3", ScalarType::Float8_e4m3fn},
      {"F8_E5M2", ScalarType::Float8_e5m2}, {"C64", ScalarType::Complex64},
  };
  for (const auto& [name, type] : kCodes) {
    if (code == name) {
      *out = type;
      return true;
    }
  }
  return false;
}

std::vector<Entry> parse(std::span<const uint8_t> bytes, const std::string& what) {
  AOTRT_CHECK(bytes.size() >= 8, kInvalidArgument, what, ": ", bytes.size(),
              " bytes, too short for a safetensors file (an 8-byte header length first)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[static_cast<size_t>(i)];
  AOTRT_CHECK(n <= kMaxHeaderBytes && n <= bytes.size() - 8, kInvalidArgument, what,
              ": header length ", n, " does not fit the file of ", bytes.size(),
              " bytes (not a safetensors file?)");
  const char* text = reinterpret_cast<const char*>(bytes.data() + 8);
  const auto header = nlohmann::json::parse(text, text + n, nullptr, /*allow_exceptions=*/false);
  AOTRT_CHECK(!header.is_discarded() && header.is_object(), kInvalidArgument, what,
              ": the header is not a JSON object (not a safetensors file?)");
  const uint64_t data_start = 8 + n, data_bytes = bytes.size() - data_start;

  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string where = what + ": tensor '" + name + "'";
    AOTRT_CHECK(value.is_object() && value.contains("dtype") && value["dtype"].is_string() &&
                    value.contains("shape") && value["shape"].is_array() &&
                    value.contains("data_offsets") && value["data_offsets"].is_array() &&
                    value["data_offsets"].size() == 2,
                kInvalidArgument, where, " is not {\"dtype\", \"shape\", \"data_offsets\": [begin, end]}");
    Entry e;
    e.name = name;
    const std::string code = value["dtype"].get<std::string>();
    AOTRT_CHECK(dtype_of(code, &e.dtype), kInvalidArgument, where, " has dtype '", code,
                "', which aotrt does not know");
    uint64_t numel = 1;
    for (const auto& s : value["shape"]) {
      AOTRT_CHECK(s.is_number_unsigned(), kInvalidArgument, where, ": shape ", value["shape"].dump(),
                  " holds something other than a non-negative integer");
      const uint64_t size = s.get<uint64_t>();
      AOTRT_CHECK(size <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) &&
                      (size == 0 || numel <= std::numeric_limits<uint64_t>::max() / size),
                  kInvalidArgument, where, ": shape ", value["shape"].dump(), " overflows");
      numel *= size;
      e.shape.push_back(static_cast<int64_t>(size));
    }
    const auto& offsets = value["data_offsets"];
    AOTRT_CHECK(offsets[0].is_number_unsigned() && offsets[1].is_number_unsigned(),
                kInvalidArgument, where, ": data_offsets ", offsets.dump(), " are not two non-negative integers");
    const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    AOTRT_CHECK(begin <= end && end <= data_bytes, kInvalidArgument, where, ": data_offsets [",
                begin, ", ", end, "] fall outside the ", data_bytes, " bytes of data");
    const uint64_t esize = element_size(e.dtype);
    AOTRT_CHECK(numel <= std::numeric_limits<uint64_t>::max() / esize && end - begin == numel * esize,
                kInvalidArgument, where, ": ", end - begin, " bytes of data for ", numel, " ",
                code, " elements (", numel * esize, " bytes)");
    e.begin = data_start + begin;
    e.end = data_start + end;
    entries.push_back(std::move(e));
  }
  return entries;
}

}  // namespace aotrt::safetensors
