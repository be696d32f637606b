#include "runtime/npy.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>

#include "core/handles.h"
#include "core/view.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "npy.cpp reads and writes little-endian ('<') data as host memory");

namespace aotrt::npy {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr uint64_t kMaxHeaderBytes = 1 << 20;

struct DescrEntry {
  const char* descr;
  ScalarType dtype;
};
constexpr DescrEntry kDescrs[] = {
    {"f2", ScalarType::Float16}, {"f4", ScalarType::Float32}, {"f8", ScalarType::Float64},
    {"i1", ScalarType::Int8},    {"i2", ScalarType::Int16},   {"i4", ScalarType::Int32},
    {"i8", ScalarType::Int64},   {"u1", ScalarType::UInt8},   {"u2", ScalarType::UInt16},
    {"u4", ScalarType::UInt32},  {"u8", ScalarType::UInt64},  {"b1", ScalarType::Bool},
    {"c8", ScalarType::Complex64}, {"c16", ScalarType::Complex128},
};

ScalarType dtype_of(std::string_view descr, const std::string& what) {
  AOTRT_CHECK(!descr.empty(), kInvalidArgument, what, ": empty dtype descr");
  const char order = descr.front();
  std::string_view code = descr;
  if (order == '<' || order == '>' || order == '|' || order == '=') code.remove_prefix(1);
  for (const DescrEntry& e : kDescrs) {
    if (code != e.descr) continue;
    AOTRT_CHECK(order != '>' || element_size(e.dtype) == 1, kUnsupported, what, ": dtype '",
                descr, "' is big-endian; save the array as little-endian ('<')");
    return e.dtype;
  }
  AOTRT_FAIL(kUnsupported, what, ": dtype '", descr, "' is not one aotrt reads (", 
             "f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1 c8 c16)");
}

// A reader of the Python literal numpy writes as the header: a dict of
// string keys to strings, True/False and tuples of ints.
class Literal {
 public:
  Literal(std::string_view text, const std::string& what) : s_(text), what_(what) {}

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' ||
                                s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool peek(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    AOTRT_CHECK(peek(c), kInvalidArgument, what_, ": malformed header: expected '", c,
                "' at byte ", pos_, " of: ", s_);
    ++pos_;
  }
  std::string string() {
    skip_space();
    AOTRT_CHECK(pos_ < s_.size() && (s_[pos_] == '\'' || s_[pos_] == '"'), kInvalidArgument,
                what_, ": malformed header: expected a string at byte ", pos_, " of: ", s_);
    const char quote = s_[pos_++];
    const size_t end = s_.find(quote, pos_);
    AOTRT_CHECK(end != std::string_view::npos, kInvalidArgument, what_,
                ": malformed header: unterminated string");
    std::string out(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    for (auto [word, value] : {std::pair{std::string_view("True"), true},
                               std::pair{std::string_view("False"), false}}) {
      if (s_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    AOTRT_FAIL(kInvalidArgument, what_, ": malformed header: expected True or False at byte ",
               pos_, " of: ", s_);
  }
  int64_t integer() {
    skip_space();
    const size_t start = pos_;
    int64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      AOTRT_CHECK(v <= (INT64_MAX - 9) / 10, kInvalidArgument, what_,
                  ": shape entry overflows int64");
      v = v * 10 + (s_[pos_++] - '0');
    }
    AOTRT_CHECK(pos_ > start, kInvalidArgument, what_,
                ": malformed header: expected a non-negative integer at byte ", start, " of: ", s_);
    if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 longs
    return v;
  }
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> out;
    while (!peek(')')) {
      out.push_back(integer());
      if (!peek(')')) expect(',');
    }
    expect(')');
    return out;
  }
  bool at_end() {
    skip_space();
    return pos_ == s_.size();
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  const std::string& what_;
};

struct FileCloser {
  void operator()(std::FILE* f) const noexcept {
    if (f != nullptr) std::fclose(f);
  }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

}  // namespace

const char* descr_of(ScalarType dtype) {
  switch (dtype) {
    case ScalarType::Float16: return "<f2";
    case ScalarType::Float32: return "<f4";
    case ScalarType::Float64: return "<f8";
    case ScalarType::Int8: return "|i1";
    case ScalarType::Int16: return "<i2";
    case ScalarType::Int32: return "<i4";
    case ScalarType::Int64: return "<i8";
    case ScalarType::UInt8: return "|u1";
    case ScalarType::UInt16: return "<u2";
    case ScalarType::UInt32: return "<u4";
    case ScalarType::UInt64: return "<u8";
    case ScalarType::Bool: return "|b1";
    case ScalarType::Complex64: return "<c8";
    case ScalarType::Complex128: return "<c16";
    default: return nullptr;
  }
}

Header parse_header(std::span<const uint8_t> bytes, const std::string& what) {
  AOTRT_CHECK(bytes.size() >= kMagicLen + 4 && std::memcmp(bytes.data(), kMagic, kMagicLen) == 0,
              kInvalidArgument, what, " is not a .npy file (no \\x93NUMPY magic)");
  const uint8_t major = bytes[6];
  AOTRT_CHECK(major >= 1 && major <= 3, kUnsupported, what, ": .npy format version ",
              int{major}, ".", int{bytes[7]}, " is not one aotrt reads (1.0, 2.0, 3.0)");
  uint64_t header_len = 0, prefix = 0;
  if (major == 1) {
    header_len = bytes[8] | (uint64_t{bytes[9]} << 8);
    prefix = 10;
  } else {
    AOTRT_CHECK(bytes.size() >= 12, kInvalidArgument, what, ": truncated .npy header");
    header_len = bytes[8] | (uint64_t{bytes[9]} << 8) | (uint64_t{bytes[10]} << 16) |
                 (uint64_t{bytes[11]} << 24);
    prefix = 12;
  }
  AOTRT_CHECK(header_len <= kMaxHeaderBytes && prefix + header_len <= bytes.size(),
              kInvalidArgument, what, ": .npy header of ", header_len,
              " bytes runs past the end of the file");
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + prefix),
                              static_cast<size_t>(header_len));

  Header h;
  h.data_offset = prefix + header_len;
  bool have_descr = false, have_order = false, have_shape = false;
  Literal lit(text, what);
  lit.expect('{');
  while (!lit.peek('}')) {
    const std::string key = lit.string();
    lit.expect(':');
    if (key == "descr") {
      AOTRT_CHECK(!lit.peek('['), kUnsupported, what,
                  ": structured (record) dtypes are not supported");
      h.dtype = dtype_of(lit.string(), what);
      have_descr = true;
    } else if (key == "fortran_order") {
      h.fortran_order = lit.boolean();
      have_order = true;
    } else if (key == "shape") {
      h.shape = lit.tuple();
      have_shape = true;
    } else {
      AOTRT_FAIL(kInvalidArgument, what, ": unexpected key '", key, "' in the .npy header");
    }
    if (!lit.peek('}')) lit.expect(',');
  }
  lit.expect('}');
  AOTRT_CHECK(lit.at_end(), kInvalidArgument, what, ": malformed header: text after the dict");
  AOTRT_CHECK(have_descr && have_order && have_shape, kInvalidArgument, what,
              ": the .npy header lacks one of 'descr', 'fortran_order', 'shape'");
  return h;
}

std::string make_header(ScalarType dtype, std::span<const int64_t> shape) {
  const char* descr = descr_of(dtype);
  AOTRT_CHECK(descr != nullptr, kUnsupported, "npy: ", dtype_name(dtype),
              " has no numpy dtype; convert it (e.g. to float32) before writing");
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) dict += shape.size() == 1 ? "," : ", ";
  }
  dict += "), }";
  // Pad with spaces and a final newline so the data starts 64-byte aligned.
  auto padded = [&](size_t prefix) {
    const size_t unpadded = prefix + dict.size() + 1;
    return dict + std::string((64 - unpadded % 64) % 64, ' ') + "\n";
  };
  std::string header = padded(10);
  std::string out(kMagic, kMagicLen);
  if (header.size() <= 0xffff) {
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
  } else {
    header = padded(12);
    out += '\x02';
    out += '\x00';
    for (int b = 0; b < 4; ++b) out += static_cast<char>((header.size() >> (8 * b)) & 0xff);
  }
  return out + header;
}

Tensor read(const std::string& path) {
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) {
    const int err = errno;
    AOTRT_FAIL(kInvalidArgument, "cannot open ", path, ": ", std::strerror(err));
  }
  struct stat st {};
  AOTRT_CHECK(::fstat(fileno(f.get()), &st) == 0 && S_ISREG(st.st_mode), kInvalidArgument,
              path, " is not a regular file");
  const auto file_bytes = static_cast<uint64_t>(st.st_size);
  std::vector<uint8_t> head(static_cast<size_t>(std::min<uint64_t>(file_bytes, 12)));
  AOTRT_CHECK(std::fread(head.data(), 1, head.size(), f.get()) == head.size(), kInvalidArgument,
              "cannot read ", path);
  // The header's length is in its first 12 bytes; read it whole, then parse.
  uint64_t header_end = 0;
  {
    AOTRT_CHECK(head.size() >= 10 && std::memcmp(head.data(), kMagic, kMagicLen) == 0,
                kInvalidArgument, path, " is not a .npy file (no \\x93NUMPY magic)");
    const bool v1 = head[6] == 1;
    AOTRT_CHECK(v1 || head.size() >= 12, kInvalidArgument, path, ": truncated .npy header");
    const uint64_t len = v1 ? (head[8] | (uint64_t{head[9]} << 8))
                            : (head[8] | (uint64_t{head[9]} << 8) | (uint64_t{head[10]} << 16) |
                               (uint64_t{head[11]} << 24));
    header_end = (v1 ? 10 : 12) + std::min(len, kMaxHeaderBytes + 1);
  }
  AOTRT_CHECK(header_end <= file_bytes, kInvalidArgument, path,
              ": .npy header runs past the end of the file");
  head.resize(static_cast<size_t>(header_end));
  const size_t have = std::min<size_t>(12, static_cast<size_t>(file_bytes));
  const size_t rest = head.size() - have;
  AOTRT_CHECK(std::fread(head.data() + have, 1, rest, f.get()) == rest, kInvalidArgument,
              "cannot read ", path);
  const Header h = parse_header(head, path);

  const char* fn = "npy::read";
  std::vector<int64_t> strides(h.shape.size());
  if (h.fortran_order) {
    // Column-major: the first dim moves fastest. The bytes stay as stored.
    int64_t s = 1;
    for (size_t i = 0; i < h.shape.size(); ++i) {
      strides[i] = s;
      s = checked_mul(s, std::max<int64_t>(h.shape[i], 1), fn);
    }
  } else {
    strides = contiguous_strides(h.shape);
  }
  const ViewSpan span = view_span(h.shape, strides, 0, element_size(h.dtype), path.c_str());
  const uint64_t data_bytes = static_cast<uint64_t>(span.numel) * element_size(h.dtype);
  AOTRT_CHECK(file_bytes - h.data_offset == data_bytes, kInvalidArgument, path, ": holds ",
              file_bytes - h.data_offset, " bytes of data but its header (", dtype_name(h.dtype),
              ", ", span.numel, " elements) says ", data_bytes);
  auto t = empty_strided(h.shape, strides, h.dtype, cpu_device(), fn);
  if (data_bytes > 0) {
    AOTRT_CHECK(std::fread(t->data_ptr(), 1, data_bytes, f.get()) == data_bytes,
                kInvalidArgument, "cannot read the data of ", path);
  }
  return Tensor::adopt(handle_register(std::move(t)));
}

void write(const std::string& path, const Tensor& tensor) {
  AOTRT_CHECK(tensor.defined(), kInvalidArgument, "npy::write ", path, ": the tensor is undefined");
  const std::string header = make_header(tensor.dtype(), tensor.sizes());
  const bool direct = tensor.device().is_cpu() && tensor.is_contiguous();
  const Tensor dense = direct ? tensor : tensor.dense_host_copy();
  File f(std::fopen(path.c_str(), "wb"));
  if (!f) {
    const int err = errno;
    AOTRT_FAIL(kInvalidArgument, "cannot create ", path, ": ", std::strerror(err));
  }
  const size_t nbytes = static_cast<size_t>(dense.numel()) * element_size(dense.dtype());
  bool ok = std::fwrite(header.data(), 1, header.size(), f.get()) == header.size();
  if (ok && nbytes > 0) ok = std::fwrite(dense.data_ptr(), 1, nbytes, f.get()) == nbytes;
  ok = (std::fclose(f.release()) == 0) && ok;
  AOTRT_CHECK(ok, kInvalidArgument, "cannot write ", path, ": ", std::strerror(errno));
}

}  // namespace aotrt::npy
