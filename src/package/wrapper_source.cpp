#include "package/wrapper_source.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>
#include <unordered_map>

#include "package/shim_writes.h"

namespace aotrt::package {
namespace {

// Parses a decimal integer (a trailing 'L' allowed) at the start of `s`.
std::optional<int64_t> integer(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  return v;
}

// "{4, 8}" -> {4, 8}; "{}" -> {}.
std::optional<std::vector<int64_t>> int_list(std::string_view s) {
  const size_t open = s.find('{'), close = s.find('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  std::vector<int64_t> out;
  std::string_view body = s.substr(open + 1, close - open - 1);
  while (true) {
    while (!body.empty() && (body.front() == ' ' || body.front() == ',')) body.remove_prefix(1);
    if (body.empty()) break;
    const auto v = integer(body);
    if (!v) return std::nullopt;
    out.push_back(*v);
    const size_t comma = body.find(',');
    if (comma == std::string_view::npos) break;
    body.remove_prefix(comma + 1);
  }
  return out;
}

std::string identifier_after(std::string_view line, std::string_view prefix) {
  const size_t at = line.find(prefix);
  if (at == std::string_view::npos) return "";
  size_t end = at + prefix.size();
  while (end < line.size() && (std::isalnum(static_cast<unsigned char>(line[end])) || line[end] == '_')) {
    ++end;
  }
  return std::string(line.substr(at + prefix.size(), end - at - prefix.size()));
}

// The index in "<what>[<i>]" found in `line`, and where it ends.
std::optional<size_t> index_after(std::string_view line, std::string_view what, size_t* end) {
  const size_t at = line.find(what);
  if (at == std::string_view::npos) return std::nullopt;
  const size_t start = at + what.size();
  const auto v = integer(line.substr(start));
  if (!v || *v < 0 || *v > (1 << 20)) return std::nullopt;
  *end = line.find(']', start);
  if (*end == std::string_view::npos) return std::nullopt;
  return static_cast<size_t>(*v);
}

template <typename T>
T& at_index(std::vector<T>& v, size_t i) {
  if (v.size() <= i) v.resize(i + 1);
  return v[i];
}

// seen[i]: bit 0 once .shape was read, bit 1 once .stride was.
void read_constant_line(std::string_view line, WrapperSource& out, std::vector<uint8_t>& seen) {
  size_t end = 0;
  const auto index = index_after(line, "constants_info_[", &end);
  if (!index || end + 1 >= line.size() || line[end + 1] != '.') return;
  const size_t eq = line.find(" = ", end);
  if (eq == std::string_view::npos) return;
  const std::string_view field = line.substr(end + 2, eq - end - 2);
  const std::string_view value = line.substr(eq + 3);
  WrapperConstant& c = at_index(out.constants, *index);
  if (field == "name") {
    const size_t q1 = value.find('"'), q2 = value.rfind('"');
    if (q1 != std::string_view::npos && q2 > q1) c.name = std::string(value.substr(q1 + 1, q2 - q1 - 1));
  } else if (field == "dtype") {
    c.dtype = identifier_after(value, "dtype_");
  } else if (field == "shape" || field == "stride") {
    auto list = int_list(value);
    if (!list) return;
    (field == "shape" ? c.sizes : c.strides) = std::move(*list);
    at_index(seen, *index) |= field == "shape" ? 1 : 2;
  } else if (field == "offset") {
    if (const auto v = integer(value)) c.storage_offset = *v;
  } else if (field == "data_size") {
    if (const auto v = integer(value)) c.data_size = *v;
  } else if (field == "type") {
    constexpr std::pair<std::string_view, int32_t> kTypes[] = {
        {"ConstantType::Parameter", 1}, {"ConstantType::Buffer", 2},
        {"ConstantType::TensorConstant", 3}, {"ConstantType::FoldedConstant", 4}};
    for (const auto& [text, code] : kTypes) {
      if (value.find(text) != std::string_view::npos) c.type = code;
    }
  } else if (field == "layout") {
    c.mkldnn = value.find("cached_torch_layout__mkldnn") != std::string_view::npos;
  } else if (field == "opaque_metadata") {
    auto list = int_list(value);
    if (!list) return;
    c.opaque_metadata.clear();
    for (int64_t b : *list) {
      if (b < 0 || b > 255) {  // not bytes: left empty, which the decoder refuses
        c.opaque_metadata.clear();
        return;
      }
      c.opaque_metadata.push_back(static_cast<uint8_t>(b));
    }
  }
}

// Inside check_input_<i>: "if (N != x_size[d])", "if (N != x_stride[d])",
// "if (x_size[d] < N)" (the least size is N), "if (x_size[d] > N)" (the
// greatest is N), "x_expected_dtype = aoti_torch_dtype_<name>()".
void read_input_line(std::string_view line, WrapperInput& in) {
  if (line.find("_expected_dtype = aoti_torch_dtype_") != std::string_view::npos) {
    in.dtype = identifier_after(line, "aoti_torch_dtype_");
    return;
  }
  for (const bool stride : {false, true}) {
    const std::string_view key = stride ? "_stride[" : "_size[";
    size_t end = 0;
    const auto dim = index_after(line, key, &end);
    if (!dim || line.find("if (") == std::string_view::npos) continue;
    auto& values = stride ? in.strides : in.sizes;
    std::optional<int64_t>& slot = at_index(values, *dim);
    const size_t ne = line.find(" != ");
    if (ne != std::string_view::npos && ne < line.find(key)) {
      const size_t open = line.find("if (");
      slot = integer(line.substr(open + 4));
    } else if (!stride && line.compare(end, 4, "] < ") == 0) {
      at_index(in.min_sizes, *dim) = integer(line.substr(end + 4));
    } else if (!stride && line.compare(end, 4, "] > ") == 0) {
      at_index(in.max_sizes, *dim) = integer(line.substr(end + 4));
    }
    return;
  }
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The identifier that ends just before `end` (spaces skipped), or "".
std::string_view identifier_before(std::string_view text, size_t end) {
  while (end > 0 && text[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && ident_char(text[begin - 1])) --begin;
  return text.substr(begin, end - begin);
}

// "static __attribute__((noinline)) void call_triton_K(\n  const in_ptr0_type_& in_ptr0,\n
// int64_t xnumel, ...){": K -> its parameters' names, in order.
std::unordered_map<std::string, std::vector<std::string>> triton_launchers(std::string_view text) {
  std::unordered_map<std::string, std::vector<std::string>> out;
  constexpr std::string_view kDef = "void call_triton_";
  for (size_t at = text.find(kDef); at != std::string_view::npos; at = text.find(kDef, at + 1)) {
    const size_t name_begin = at + 5;  // "call_triton_..."
    const size_t open = text.find('(', name_begin);
    const size_t close = open == std::string_view::npos ? open : text.find("){", open);
    if (close == std::string_view::npos) continue;
    std::string name(trim(text.substr(name_begin, open - name_begin)));
    std::vector<std::string> params;
    std::string_view body = text.substr(open + 1, close - open - 1);
    while (!body.empty()) {
      size_t comma = body.find(',');
      std::string_view param = body.substr(0, comma);
      const size_t eq = param.find('=');
      if (eq != std::string_view::npos) param = param.substr(0, eq);
      param = trim(param);
      params.emplace_back(identifier_before(param, param.size()));
      if (comma == std::string_view::npos) break;
      body.remove_prefix(comma + 1);
    }
    out.emplace(std::move(name), std::move(params));
  }
  return out;
}

ConstantAccess stronger(ConstantAccess a, ConstantAccess b) { return a > b ? a : b; }

// Note [Shim arguments a run writes]
// Which argument of a fallback-op shim call ("aoti_torch_cuda__scaled_mm(buf0, w, ...)") the
// op writes comes from torch's operator schemas: scripts/gen_shim_writes.py maps each C
// parameter of every op row (src/shim/ops) to its schema argument by name (torch's
// hand-written mkldnn shims to the schema of the op they run) and writes
// package/shim_writes_table.inc, one letter per parameter: Tensor(a!) and out= arguments
// written, other tensors read, and a tensor a result aliases (a view) or anything else maybe
// written. tests/e2e/test_shim_writes.py fails when the installed torch's schemas say
// otherwise. An op the table does not hold (aotrt's own, the oneDNN quantized shims whose
// parameters are not the schema's) keeps every argument maybe written but for the naming
// rule (a '_' or "_out" callee writes its first argument), since nothing vouches for it: a
// read taken for a write costs a session a copy, a write taken for a read lets two sessions
// write one buffer. Nor is a call trusted whose argument count is not the table's (another
// signature of that name). A constant reaches an argument through a list
// (std::array<...>{X.get(), ...}), an optional (&temporary_reference(X.get())) or a view made
// for that call alone (reinterpret_tensor_wrapper(X, ...)); a view kept by name is not followed.

// Where "std::array<T, N>" begins when text[close] is its '>' (inductor passes a list as
// "std::array<AtenTensorHandle, 2>{a.get(), b.get()}.cbegin()"), else npos: its comma
// separates no arguments.
size_t array_type_begin(std::string_view text, size_t close) {
  constexpr std::string_view kArray = "std::array<";
  if (text[close] != '>') return std::string_view::npos;
  const size_t from = close >= 96 ? close - 96 : 0;
  const size_t at = text.substr(from, close - from).rfind(kArray);
  if (at == std::string_view::npos) return std::string_view::npos;
  const std::string_view inside = text.substr(from + at + kArray.size(), close - from - at - kArray.size());
  const bool plain = std::ranges::all_of(inside, [](char c) {
    return ident_char(c) || c == ' ' || c == '*' || c == ',' || c == ':';
  });
  return plain ? from + at : std::string_view::npos;
}

// The number of top-level arguments of the call whose '(' is at text[open], or nullopt when
// its ')' is not found within a bounded distance.
std::optional<size_t> argument_count(std::string_view text, size_t open) {
  int depth = 0;
  size_t commas = 0;
  bool empty = true;
  const size_t limit = std::min(text.size(), open + 8192);
  for (size_t i = open + 1; i < limit; ++i) {
    const char c = text[i];
    if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < limit && text[j] != c) j += text[j] == '\\' ? 2 : 1;
      i = j;
      empty = false;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
      empty = false;
    } else if (c == '<' && i >= 10 && text.substr(i - 10, 11) == "std::array<") {
      const size_t close = text.find('>', i);
      if (close == std::string_view::npos || array_type_begin(text, close) != i - 10) {
        return std::nullopt;
      }
      i = close;
    } else if (c == ')' || c == ']' || c == '}') {
      if (depth == 0) return c == ')' ? std::optional<size_t>(empty ? 0 : commas + 1) : std::nullopt;
      --depth;
    } else if (c == ',' && depth == 0) {
      ++commas;
    } else if (c == ';') {
      return std::nullopt;
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      empty = false;
    }
  }
  return std::nullopt;
}

// How argument `position` of the shim call `callee(` at text[open] treats what is passed there
// (Note [Shim arguments a run writes]).
ConstantAccess shim_use(std::string_view text, size_t open, std::string_view callee,
                        size_t position) {
  if (const auto access = shim_argument_access(callee)) {
    if (position >= access->size() || argument_count(text, open) != access->size()) {
      return ConstantAccess::kMaybeWritten;
    }
    switch (static_cast<ShimArgument>((*access)[position])) {
      case ShimArgument::kRead: return ConstantAccess::kRead;
      case ShimArgument::kWritten: return ConstantAccess::kWritten;
      case ShimArgument::kOther: return ConstantAccess::kMaybeWritten;
    }
    return ConstantAccess::kMaybeWritten;
  }
  if (position == 0 && (callee.back() == '_' ||
                        (callee.size() > 4 && callee.substr(callee.size() - 4) == "_out"))) {
    return ConstantAccess::kWritten;
  }
  return ConstantAccess::kMaybeWritten;
}

// How the use of a constant at text[at, at + len) treats it.
ConstantAccess classify_use(std::string_view text, size_t at, size_t len,
                            const std::unordered_map<std::string, std::vector<std::string>>& launchers) {
  const std::string_view after = text.substr(at + len, 16);
  // A C++ kernel's argument: "(const float*)(X.data_ptr())" or "(float*)(X.data_ptr())".
  if (after.substr(0, 12) == ".data_ptr())") {
    const size_t from = at >= 64 ? at - 64 : 0;
    const std::string_view before = text.substr(from, at - from);
    if (before.size() >= 3 && before.substr(before.size() - 3) == "*)(") {
      const size_t open = before.rfind('(', before.size() - 3);
      if (open != std::string_view::npos) {
        const std::string_view cast = before.substr(open + 1, before.size() - 3 - open - 1);
        return cast.find("const ") != std::string_view::npos ? ConstantAccess::kRead
                                                             : ConstantAccess::kWritten;
      }
    }
  }
  // An argument of a call: find the call's '(' and the argument's position.
  int depth = 0;
  size_t commas = 0;
  const size_t limit = at >= 8192 ? at - 8192 : 0;
  for (size_t i = at; i-- > limit;) {
    const char c = text[i];
    if (c == '"') {  // a string argument ("mean", "relu"): its commas separate nothing
      size_t j = i;
      while (j > limit && (text[j - 1] != '"' || (j >= 2 && text[j - 2] == '\\'))) --j;
      if (j == limit) break;
      i = j - 1;  // its opening quote
    } else if (c == '>' && depth == 0) {
      const size_t begin = array_type_begin(text, i);
      if (begin != std::string_view::npos) i = begin;
    } else if (c == ')' || c == ']' || c == '}') {
      ++depth;
    } else if (c == '(' || c == '[' || c == '{') {
      if (depth > 0) {
        --depth;
        continue;
      }
      // An element of a list argument: the table's letter for the list holds for each.
      if (c == '{' && i > 0) {
        const size_t begin = array_type_begin(text, i - 1);
        if (begin == std::string_view::npos) break;
        i = begin;
        commas = 0;
        continue;
      }
      if (c != '(') break;
      const std::string_view callee = identifier_before(text, i);
      if (callee.substr(0, 12) == "call_triton_") {
        const auto it = launchers.find(std::string(callee));
        if (it == launchers.end() || commas >= it->second.size()) break;
        const std::string& param = it->second[commas];
        if (param.rfind("in_ptr", 0) == 0) return ConstantAccess::kRead;
        if (param.rfind("out_ptr", 0) == 0 || param.rfind("in_out_ptr", 0) == 0) {
          return ConstantAccess::kWritten;
        }
        break;
      }
      if (callee.substr(0, 11) == "aoti_torch_") return shim_use(text, i, callee, commas);
      // Wrapped in a conversion (".get()", a handle macro, an optional tensor's
      // "&temporary_reference(X.get())") or a view made for this call alone
      // ("reinterpret_tensor_wrapper(X, 2, sizes, strides, 0L)", which the op reads or writes as
      // it would X): keep looking outward, through calls of which X is the first argument.
      if (commas == 0 && (callee.empty() || callee.find("handle") != std::string_view::npos ||
                          callee == "temporary_reference" || callee == "reinterpret_tensor_wrapper")) {
        continue;
      }
      break;
    } else if (depth == 0 && c == ',') {
      ++commas;
    } else if (depth == 0 && c == ';') {
      break;
    }
  }
  return ConstantAccess::kMaybeWritten;
}

// Note [Constants a run writes]: every use of every constant the run names.
void read_constant_access(std::string_view text, WrapperSource& out) {
  constexpr std::string_view kAt = " = constants_->at(";
  std::unordered_map<std::string, size_t> names;  // the run's name -> constant index
  for (size_t at = text.find(kAt); at != std::string_view::npos; at = text.find(kAt, at + 1)) {
    const std::string_view name = identifier_before(text, at);
    const auto index = integer(text.substr(at + kAt.size()));
    if (name.empty() || !index || *index < 0 || *index >= (1 << 20)) continue;
    names.emplace(std::string(name), static_cast<size_t>(*index));
    out.access_known = true;
  }
  if (!out.access_known) return;
  const auto launchers = triton_launchers(text);
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      i = text.find('\n', i);
      if (i == std::string_view::npos) break;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      i = text.find("*/", i + 2);
      if (i == std::string_view::npos) break;
      i += 2;
      continue;
    }
    if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < text.size() && text[j] != c) j += text[j] == '\\' ? 2 : 1;
      i = j + 1;
      continue;
    }
    if (!ident_char(c) || std::isdigit(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && ident_char(text[end])) ++end;
    // A raw string literal (in_spec_ = R"([1, {"type": ...}])"): skipped whole,
    // its quotes and backslashes are not C++'s.
    const std::string_view word = text.substr(i, end - i);
    if (end < text.size() && text[end] == '"' && !word.empty() && word.back() == 'R' &&
        (word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR")) {
      const size_t open = text.find('(', end + 1);
      if (open == std::string_view::npos) break;
      const std::string close = ")" + std::string(text.substr(end + 1, open - end - 1)) + "\"";
      const size_t stop = text.find(close, open + 1);
      if (stop == std::string_view::npos) break;
      i = stop + close.size();
      continue;
    }
    const auto it = names.find(std::string(word));
    if (it != names.end() && text.substr(end, kAt.size()) != kAt) {
      WrapperConstant& k = at_index(out.constants, it->second);
      k.access = stronger(k.access == ConstantAccess::kUnused ? ConstantAccess::kRead : k.access,
                          classify_use(text, i, end - i, launchers));
    }
    i = end;
  }
}

}  // namespace

WrapperSource parse_wrapper_source(std::string_view text) {
  WrapperSource out;
  WrapperInput* input = nullptr;
  std::vector<uint8_t> seen;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.find("constants_info_[") != std::string_view::npos) {
      read_constant_line(line, out, seen);
      continue;
    }
    const size_t fn = line.find("static void check_input_");
    if (fn != std::string_view::npos) {
      const auto i = integer(line.substr(fn + std::string_view("static void check_input_").size()));
      input = i && *i >= 0 && *i < (1 << 20) ? &at_index(out.inputs, static_cast<size_t>(*i)) : nullptr;
      continue;
    }
    if (input != nullptr && (line.find("_check_aoti_runtime_check_inputs_env") != std::string_view::npos ||
                             line.find("AOTInductorModel::run_impl") != std::string_view::npos)) {
      input = nullptr;
    }
    if (input != nullptr) read_input_line(line, *input);
  }
  read_constant_access(text, out);
  for (size_t i = 0; i < out.constants.size(); ++i) {
    WrapperConstant& c = out.constants[i];
    c.has_layout = i < seen.size() && seen[i] == 3 && c.sizes.size() == c.strides.size();
  }
  return out;
}

}  // namespace aotrt::package
