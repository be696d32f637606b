// Read-only access to a .pt2 zip through libzip, with the checks a loader
// needs before it trusts any entry: the archive is consistent, every entry
// name is a plain relative path, and the declared sizes are bounded (see
// Note [Zip bomb bound]). Entries are extracted one at a time to a path the
// caller chooses, never to a path taken from the archive.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct zip;

namespace aotrt::package {

struct ZipEntry {
  std::string name;          // as stored, e.g. "lin/data/aotinductor/model/x.wrapper.so"
  uint64_t index = 0;        // libzip's index
  uint64_t size = 0;         // declared uncompressed bytes
  uint64_t compressed_size = 0;
  bool is_dir() const { return !name.empty() && name.back() == '/'; }
};

// Note [Zip bomb bound]
// Deflate, the only compression .pt2 writers use (PyTorchFileWriter stores
// entries uncompressed), cannot expand data more than about 1032:1. So an
// archive whose entries declare, in total, more than
//   kMaxExpansion * archive_bytes + kExpansionSlack
// uncompressed bytes is refused before anything is extracted; and extraction
// never writes more than an entry declares, so a header that lies cannot get
// past the bound either.
inline constexpr uint64_t kMaxExpansion = 1100;
inline constexpr uint64_t kExpansionSlack = uint64_t{1} << 20;  // 1 MiB

class ZipArchive {
 public:
  // Opens `path` and checks it (throws Error kPackage naming the path): a
  // readable regular file, a zip whose directory is consistent, entry names
  // that are relative and free of "..", "\" and NUL, sizes within the bound.
  static ZipArchive open(const std::string& path);

  ZipArchive(ZipArchive&&) noexcept;
  ZipArchive& operator=(ZipArchive&&) noexcept;
  ~ZipArchive();

  const std::string& path() const { return path_; }
  uint64_t archive_bytes() const { return archive_bytes_; }
  const std::vector<ZipEntry>& entries() const { return entries_; }
  // The entry with exactly this name, or null.
  const ZipEntry* find(std::string_view name) const;

  // Writes the entry's bytes to a new file dest_path (mode 0600; refuses to
  // overwrite). Throws kPackage if the data is corrupt (CRC), shorter or
  // longer than declared; a partial file is removed.
  void extract(const ZipEntry& entry, const std::string& dest_path) const;

  // The entry's bytes as a string; refuses entries over max_bytes.
  std::string read(const ZipEntry& entry, uint64_t max_bytes) const;

  // The entry's bytes in a new buffer of entry.size bytes (not zero-filled
  // first: every byte is written or the call throws), for entries too large
  // for a string, such as a weights blob; the same checks as extract.
  std::unique_ptr<uint8_t[]> read_bytes(const ZipEntry& entry) const;

 private:
  ZipArchive() = default;
  // Streams the entry to sink(data, n); checks size and CRC.
  template <typename Sink>
  void stream(const ZipEntry& entry, Sink&& sink) const;

  struct Closer {
    void operator()(zip* z) const noexcept;
  };
  std::unique_ptr<zip, Closer> zip_;
  std::string path_;
  uint64_t archive_bytes_ = 0;
  std::vector<ZipEntry> entries_;
};

// Whether an entry name is safe to reason about: not empty, relative, no
// ".." component, no backslash or NUL. (Names are never used as paths on
// disk; this refuses archives that were crafted to be.)
bool is_safe_entry_name(std::string_view name);

}  // namespace aotrt::package
