#include "runtime/conv_tuning_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace aotrt::runtime {

namespace fs = std::filesystem;

namespace {

// Bounds on what is read: a larger file is not ours, a longer line not a choice.
constexpr uintmax_t kMaxFileBytes = 16u << 20;
constexpr size_t kMaxLineChars = 4096;
// Configurations a file keeps; past it, new choices stay in memory.
constexpr size_t kMaxEntries = 65536;

std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

// Splits at every `sep`; empty pieces are kept (and refused by the caller).
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

enum class FileState { kMissing, kOurs, kForeign };

// Reads the file's valid lines into `entries`; kForeign (and nothing read)
// when it exists but is not a tuning file, or cannot be read.
FileState read_file(const std::string& path,
                    std::map<std::string, ConvTuningChoice>& entries) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return FileState::kMissing;
  if (!fs::is_regular_file(status)) return FileState::kForeign;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec || size > kMaxFileBytes) return FileState::kForeign;
  std::ifstream in(path, std::ios::binary);
  if (!in) return FileState::kForeign;
  std::string line;
  if (!std::getline(in, line)) return FileState::kOurs;  // empty: ours to write
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line != kConvTuningHeader) return FileState::kForeign;
  while (std::getline(in, line)) {
    if (auto entry = parse_conv_tuning_line(line)) {
      entries.insert_or_assign(std::move(entry->first), std::move(entry->second));
    }
  }
  return FileState::kOurs;
}

bool write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool valid_conv_tuning_key(std::string_view key) {
  if (key.empty() || key.size() > 1024 || key.front() == '#') return false;
  for (char ch : key) {
    if (ch <= ' ' || ch > '~') return false;
  }
  return true;
}

std::string format_conv_tuning_line(std::string_view key, const ConvTuningChoice& choice) {
  std::string line(key);
  line += ' ';
  line += std::to_string(choice.engine);
  line += ' ';
  if (choice.knobs.empty()) line += '-';
  for (size_t i = 0; i < choice.knobs.size(); ++i) {
    if (i > 0) line += ',';
    line += std::to_string(choice.knobs[i].first);
    line += ':';
    line += std::to_string(choice.knobs[i].second);
  }
  return line;
}

std::optional<std::pair<std::string, ConvTuningChoice>> parse_conv_tuning_line(
    std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty() || line.front() == '#' || line.size() > kMaxLineChars) return std::nullopt;
  const auto fields = split(line, ' ');
  if (fields.size() != 3 || !valid_conv_tuning_key(fields[0])) return std::nullopt;
  ConvTuningChoice choice;
  const auto engine = parse_int(fields[1]);
  if (!engine || *engine < 0) return std::nullopt;
  choice.engine = *engine;
  if (fields[2] != "-") {
    const auto pairs = split(fields[2], ',');
    if (pairs.size() > kMaxConvTuningKnobs) return std::nullopt;
    for (std::string_view pair : pairs) {
      const size_t colon = pair.find(':');
      if (colon == std::string_view::npos) return std::nullopt;
      const auto type = parse_int(pair.substr(0, colon));
      const auto value = parse_int(pair.substr(colon + 1));
      if (!type || !value || *type < 0) return std::nullopt;
      choice.knobs.emplace_back(*type, *value);
    }
  }
  return std::pair{std::string(fields[0]), std::move(choice)};
}

std::string conv_tuning_path(const char* tuning_cache, const char* xdg_cache_home,
                             const char* home) {
  if (tuning_cache != nullptr && *tuning_cache != '\0') {
    return std::string_view(tuning_cache) == "0" ? std::string() : std::string(tuning_cache);
  }
  if (xdg_cache_home != nullptr && xdg_cache_home[0] == '/') {
    return (fs::path(xdg_cache_home) / "aotrt" / kConvTuningFileName).string();
  }
  if (home != nullptr && *home != '\0') {
    return (fs::path(home) / ".cache" / "aotrt" / kConvTuningFileName).string();
  }
  return {};
}

ConvTuningTable::ConvTuningTable(std::string path) : path_(std::move(path)) {}

void ConvTuningTable::reset(std::string path) {
  std::lock_guard<std::mutex> lock(mu_);
  path_ = std::move(path);
  loaded_ = false;
  write_failed_ = false;
  table_.clear();
  own_.clear();
}

std::string ConvTuningTable::path() {
  std::lock_guard<std::mutex> lock(mu_);
  return path_;
}

bool ConvTuningTable::writes_file() {
  std::lock_guard<std::mutex> lock(mu_);
  try {
    load_locked();
  } catch (...) {
    write_failed_ = true;
  }
  return !path_.empty() && !write_failed_;
}

void ConvTuningTable::load_locked() {
  if (loaded_) return;
  loaded_ = true;
  if (path_.empty()) return;
  // The folder (created when missing: the default one usually is).
  std::error_code ec;
  const fs::path parent = fs::path(path_).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    fs::create_directories(parent, ec);
    if (!fs::is_directory(parent, ec)) {
      write_failed_ = true;  // no folder: memory only
      return;
    }
  }
  std::map<std::string, ConvTuningChoice> entries;
  if (read_file(path_, entries) == FileState::kForeign) write_failed_ = true;
  for (auto& [key, choice] : entries) table_.emplace(key, std::move(choice));
}

std::optional<ConvTuningChoice> ConvTuningTable::find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  try {
    load_locked();
    const auto it = table_.find(key);
    if (it != table_.end()) return it->second;
  } catch (...) {
    // A failed read (out of memory) costs only the tuning it would have saved.
  }
  return std::nullopt;
}

void ConvTuningTable::put(const std::string& key, const ConvTuningChoice& choice) {
  std::lock_guard<std::mutex> lock(mu_);
  try {
    load_locked();
    table_.insert_or_assign(key, choice);
    if (!valid_conv_tuning_key(key)) return;  // a line could not hold it: memory only
    own_.insert_or_assign(key, choice);
    if (!path_.empty() && !write_failed_ && !write_locked()) write_failed_ = true;
  } catch (...) {
    write_failed_ = true;
  }
}

bool ConvTuningTable::write_locked() {
  std::map<std::string, ConvTuningChoice> merged;
  if (read_file(path_, merged) == FileState::kForeign) return false;
  for (const auto& [key, choice] : own_) merged.insert_or_assign(key, choice);
  if (merged.size() > kMaxEntries) return false;
  std::string text(kConvTuningHeader);
  text += '\n';
  for (const auto& [key, choice] : merged) {
    text += format_conv_tuning_line(key, choice);
    text += '\n';
  }

  // A temporary file beside the target, renamed over it.
  std::string temp = path_ + ".tmp.XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) return false;
  const bool written = ::fchmod(fd, 0644) == 0 && write_all(fd, text);
  const bool closed = ::close(fd) == 0;
  if (!written || !closed || std::rename(temp.c_str(), path_.c_str()) != 0) {
    (void)::unlink(temp.c_str());
    return false;
  }
  return true;
}

}  // namespace aotrt::runtime
