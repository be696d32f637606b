// The table of tuned cuDNN convolution engines that cuda/conv.cpp keeps in
// memory and on disk (Note [Convolution autotuning] there). Host code only,
// so that the CPU build compiles it and its unit tests run without a GPU.
//
// Note [Convolution tuning file]
// One text file; a line per configuration, fields separated by one space:
//   <key> <engine> <knobs>
// <key> is printable ASCII without spaces (conv.cpp's holds the cuDNN
// version, the device's name and compute capability and the configuration's
// numbers); <engine> the engine's global index (>= 0); <knobs> the engine
// config's knob choices as type:value pairs joined by ',', or '-' for none.
// The first line is the header kConvTuningHeader; other lines starting with
// '#' are comments. A line that does not parse is ignored (and dropped by the
// next write). The file is read once, on the first lookup. Each new choice
// rewrites it: the file is read again (keeping what other processes added),
// this process's choices are put in, and the whole is written to a temporary
// file in the same folder that is then renamed over it, so a reader sees the
// old file or the new one, never half of one. A file that exists but does
// not start with the header is never written (it is not ours: a mistyped
// AOTRT_CUDNN_TUNING_CACHE must not destroy someone's file) and is read as
// empty. When the folder cannot be made or a write fails (read-only, full),
// choices stay in memory and the file is not tried again. Nothing here throws
// or fails a run: a bad file costs only the tuning it would have saved.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace aotrt::runtime {

inline constexpr std::string_view kConvTuningHeader = "# aotrt cudnn-conv-tuning v1";
inline constexpr std::string_view kConvTuningFileName = "cudnn-conv-tuning-v1.txt";

// An engine config as cuDNN rebuilds it: CUDNN_ATTR_ENGINE_GLOBAL_INDEX and
// the (CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, _KNOB_VALUE) pairs of
// CUDNN_ATTR_ENGINECFG_KNOB_CHOICES.
struct ConvTuningChoice {
  int64_t engine = -1;
  std::vector<std::pair<int64_t, int64_t>> knobs;
  bool operator==(const ConvTuningChoice&) const = default;
};

// Knob choices a line may hold (cuDNN 9.19 knows 44 knob types).
inline constexpr size_t kMaxConvTuningKnobs = 64;

// True for a key a line can hold: 1 to 1024 printable ASCII characters, no
// space, not starting with '#'.
bool valid_conv_tuning_key(std::string_view key);

// One line of the file, without its newline. `key` must be valid.
std::string format_conv_tuning_line(std::string_view key, const ConvTuningChoice& choice);

// The key and choice of a line (a trailing '\r' is allowed); nullopt for a
// comment, a blank line or a line that does not parse.
std::optional<std::pair<std::string, ConvTuningChoice>> parse_conv_tuning_line(
    std::string_view line);

// Where the file lives, from the environment's values (null when unset):
// AOTRT_CUDNN_TUNING_CACHE "0" -> "" (memory only), any other non-empty value
// -> that path; else $XDG_CACHE_HOME/aotrt/<file> when XDG_CACHE_HOME is an
// absolute path (the XDG spec ignores a relative one); else
// $HOME/.cache/aotrt/<file>; else "" (memory only).
std::string conv_tuning_path(const char* tuning_cache, const char* xdg_cache_home,
                             const char* home);

// The table, shared by all threads (a mutex; conv.cpp asks it only on a
// configuration's first call on a thread). `path` "" keeps it in memory.
class ConvTuningTable {
 public:
  explicit ConvTuningTable(std::string path = {});

  std::optional<ConvTuningChoice> find(const std::string& key);
  // Remembers the choice and writes the file (Note [Convolution tuning file]).
  void put(const std::string& key, const ConvTuningChoice& choice);

  // Forgets everything and starts over with `path` (read again lazily): what
  // a new process would see. For tests.
  void reset(std::string path);
  std::string path();
  // False once writing the file failed (or there is no file): choices stay
  // in memory.
  bool writes_file();

 private:
  void load_locked();
  bool write_locked();

  std::mutex mu_;
  std::string path_;
  bool loaded_ = false;
  bool write_failed_ = false;
  std::unordered_map<std::string, ConvTuningChoice> table_;  // read and put
  std::map<std::string, ConvTuningChoice> own_;                // put by this process
};

}  // namespace aotrt::runtime
