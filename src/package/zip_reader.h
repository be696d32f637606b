// Read-only access to a .pt2 zip through libzip, with the checks a loader
// needs before it trusts any entry: the archive is consistent, every entry
// name is a plain relative path, and the declared sizes are bounded (see
// Note [Zip bomb bound]). Entries are extracted one at a time to a path the
// caller chooses, never to a path taken from the archive.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
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
  uint32_t crc = 0;            // CRC-32 of the uncompressed bytes, as declared
  bool stored = false;         // kept uncompressed and unencrypted (ZIP_CM_STORE)
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
  // The same for a zip stored as `length` bytes at `offset` of `path` (a
  // stored entry of another zip: torch's pickle_weights); `what` names it.
  // Offsets this archive reports (stored_data_offset) count from the start
  // of `path`.
  static ZipArchive open_window(const std::string& path, uint64_t offset, uint64_t length,
                                const std::string& what);

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

  // Note [Stored entries read in place]
  // Writers of .pt2 files (torch's PyTorchFileWriter) store every entry
  // uncompressed, 64-byte aligned: an entry's bytes are a contiguous range
  // of the archive file, which can be mapped instead of extracted (a 16 GB
  // model .so or weights blob is then never written out or read into
  // memory). libzip does not say where that range starts; the central
  // directory and the entry's local header do (APPNOTE 4.3.7, 4.3.12, and
  // the Zip64 records of 4.3.14-4.3.15 and 4.5.3), read here with every
  // offset checked. A mapped range skips libzip's CRC check on read, so
  // check_crc() checks it instead.
  //
  // The offset of a stored entry's bytes in the archive file; nullopt for a
  // compressed or encrypted one. Throws kPackage when the archive's records
  // do not agree with what libzip read (name, sizes, a range past the end).
  std::optional<uint64_t> stored_data_offset(const ZipEntry& entry) const;
  // Checks a stored entry's bytes in the archive file against its CRC-32
  // (several threads for large entries, reading with pread: nothing stays
  // resident). Throws kPackage "entry '<name>' is corrupt" on a mismatch.
  void check_crc(const ZipEntry& entry) const;

 private:
  ZipArchive() = default;
  static ZipArchive open_range(const std::string& path, uint64_t offset, uint64_t length,
                               const std::string& what, bool whole);
  // Streams the entry to sink(data, n); checks size and CRC.
  template <typename Sink>
  void stream(const ZipEntry& entry, Sink&& sink) const;

  struct Closer {
    void operator()(zip* z) const noexcept;
  };
  std::unique_ptr<zip, Closer> zip_;
  std::string path_;
  uint64_t base_ = 0;  // where the zip starts in path_ (open_window)
  uint64_t archive_bytes_ = 0;
  std::vector<ZipEntry> entries_;
  // Local header offsets by entry index, read from the central directory
  // at the first stored_data_offset() call.
  mutable std::vector<uint64_t> local_headers_;
};

// Whether an entry name is safe to reason about: not empty, relative, no
// ".." component, no backslash or NUL. (Names are never used as paths on
// disk; this refuses archives that were crafted to be.)
bool is_safe_entry_name(std::string_view name);

}  // namespace aotrt::package
