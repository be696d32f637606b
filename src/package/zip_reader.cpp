#include "package/zip_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "core/error.h"

namespace aotrt::package {
namespace {

std::string zip_error_text(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string text = zip_error_strerror(&error);
  zip_error_fini(&error);
  return text;
}

// A file descriptor that is closed, and its file removed, unless kept.
class OutputFile {
 public:
  explicit OutputFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      const int err = errno;
      AOTRT_FAIL(kPackage, "cannot create ", path, ": ", std::strerror(err));
    }
  }
  ~OutputFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!kept_) ::unlink(path_.c_str());
  }
  void write(const char* data, size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(fd_, data, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int err = errno;
        AOTRT_FAIL(kPackage, "cannot write ", path_, ": ", std::strerror(err));
      }
      data += w;
      n -= static_cast<size_t>(w);
    }
  }
  void keep() {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      const int err = errno;
      AOTRT_FAIL(kPackage, "cannot write ", path_, ": ", std::strerror(err));
    }
    kept_ = true;
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool kept_ = false;
};

// Whether the file starts with a zip local file header ("PK\3\4").
bool starts_like_zip(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char magic[4] = {};
  const bool ok = ::read(fd, magic, 4) == 4 && std::memcmp(magic, "PK\3\4", 4) == 0;
  ::close(fd);
  return ok;
}

// A read-only descriptor of the archive file, closed on scope exit.
class InputFile {
 public:
  // Offsets passed to read_at count from `base` (a zip stored inside another).
  explicit InputFile(const std::string& path, uint64_t base = 0) : path_(path), base_(base) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      const int err = errno;
      AOTRT_FAIL(kPackage, "cannot open package ", path, ": ", std::strerror(err));
    }
  }
  ~InputFile() { ::close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  // Reads exactly n bytes at `offset`; throws kPackage naming `what` when the file is shorter.
  void read_at(uint64_t offset, void* out, size_t n, const char* what) const {
    auto* p = static_cast<char*>(out);
    while (n > 0) {
      const ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(base_ + offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        const int err = got < 0 ? errno : 0;
        AOTRT_FAIL(kPackage, "package ", path_, ": cannot read ", what, " at offset ", offset,
                   err ? std::string(": ") + std::strerror(err) : std::string(" (past the end)"));
      }
      p += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<size_t>(got);
    }
  }

 private:
  std::string path_;
  uint64_t base_ = 0;
  int fd_ = -1;
};

template <typename T>
T le(const uint8_t* p) {  // little-endian field of a zip record
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<T>(p[i]) << (8 * i));
  return v;
}

// Every local header offset of the archive, in central directory order
// (libzip's entry indices). See Note [Stored entries read in place].
std::vector<uint64_t> local_header_offsets(const std::string& path, uint64_t base,
                                           uint64_t archive_bytes, size_t n_entries) {
  const InputFile file(path, base);
  // The end of central directory record: 22 bytes and a comment of < 64 KiB.
  const uint64_t tail = std::min<uint64_t>(archive_bytes, 22 + 0xFFFF);
  std::vector<uint8_t> end(tail);
  file.read_at(archive_bytes - tail, end.data(), end.size(), "the end of central directory");
  // The last signature that leaves room for the 22-byte record.
  size_t eocd = end.size() >= 22 ? end.size() - 22 + 1 : 0;
  while (eocd > 0 && le<uint32_t>(&end[eocd - 1]) != 0x06054b50) --eocd;
  AOTRT_CHECK(eocd > 0, kPackage, "package ", path, ": no end of central directory record");
  const uint64_t eocd_at = archive_bytes - tail + (eocd - 1);
  const uint8_t* e = &end[eocd - 1];
  uint64_t count = le<uint16_t>(e + 10), cd_size = le<uint32_t>(e + 12), cd_at = le<uint32_t>(e + 16);
  if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_at == 0xFFFFFFFF) {
    // Zip64: a locator right before the record points at the Zip64 record.
    AOTRT_CHECK(eocd_at >= 20, kPackage, "package ", path, ": no Zip64 end of central directory locator");
    uint8_t loc[20], rec[56];
    file.read_at(eocd_at - 20, loc, sizeof loc, "the Zip64 locator");
    AOTRT_CHECK(le<uint32_t>(loc) == 0x07064b50, kPackage, "package ", path,
                ": no Zip64 end of central directory locator");
    file.read_at(le<uint64_t>(loc + 8), rec, sizeof rec, "the Zip64 end of central directory");
    AOTRT_CHECK(le<uint32_t>(rec) == 0x06064b50, kPackage, "package ", path,
                ": no Zip64 end of central directory record where its locator points");
    count = le<uint64_t>(rec + 32);
    cd_size = le<uint64_t>(rec + 40);
    cd_at = le<uint64_t>(rec + 48);
  }
  AOTRT_CHECK(count == n_entries && cd_at <= archive_bytes && cd_size <= archive_bytes - cd_at &&
                  cd_size < (uint64_t{1} << 32),
              kPackage, "package ", path, ": its central directory (", count, " entries, ",
              cd_size, " bytes at ", cd_at, ") does not agree with the archive");
  std::vector<uint8_t> cd(cd_size);
  file.read_at(cd_at, cd.data(), cd.size(), "the central directory");
  std::vector<uint64_t> offsets;
  offsets.reserve(n_entries);
  size_t at = 0;
  for (uint64_t i = 0; i < count; ++i) {
    AOTRT_CHECK(cd.size() - at >= 46 && le<uint32_t>(&cd[at]) == 0x02014b50, kPackage, "package ",
                path, ": central directory record ", i, " is malformed");
    const uint8_t* r = &cd[at];
    const size_t name_len = le<uint16_t>(r + 28), extra_len = le<uint16_t>(r + 30),
                 comment_len = le<uint16_t>(r + 32);
    AOTRT_CHECK(cd.size() - at - 46 >= name_len + extra_len + comment_len, kPackage, "package ",
                path, ": central directory record ", i, " runs past the directory");
    uint64_t offset = le<uint32_t>(r + 42);
    if (offset == 0xFFFFFFFF) {
      // The Zip64 extra field holds, in this order, the sizes that
      // overflowed 32 bits and then the offset.
      const uint8_t* x = r + 46 + name_len;
      const uint8_t* x_end = x + extra_len;
      bool found = false;
      while (x_end - x >= 4 && !found) {
        const uint16_t id = le<uint16_t>(x), len = le<uint16_t>(x + 2);
        AOTRT_CHECK(x_end - x - 4 >= len, kPackage, "package ", path, ": central directory record ",
                    i, " has a malformed extra field");
        if (id == 0x0001) {
          size_t skip = (le<uint32_t>(r + 24) == 0xFFFFFFFF ? 8 : 0) + (le<uint32_t>(r + 20) == 0xFFFFFFFF ? 8 : 0);
          AOTRT_CHECK(len >= skip + 8, kPackage, "package ", path, ": central directory record ", i,
                      " has a Zip64 field without the entry's offset");
          offset = le<uint64_t>(x + 4 + skip);
          found = true;
        }
        x += 4 + len;
      }
      AOTRT_CHECK(found, kPackage, "package ", path, ": central directory record ", i,
                  " has no Zip64 field for its offset");
    }
    offsets.push_back(offset);
    at += 46 + name_len + extra_len + comment_len;
  }
  return offsets;
}

}  // namespace

bool is_safe_entry_name(std::string_view name) {
  if (name.empty() || name.front() == '/') return false;
  if (name.find('\\') != std::string_view::npos) return false;
  if (name.find('\0') != std::string_view::npos) return false;
  // A drive letter ("C:...") is absolute on Windows, where archives are made too.
  if (name.size() >= 2 && name[1] == ':') return false;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    if (name.substr(start, end - start) == "..") return false;
    start = end + 1;
  }
  return true;
}

void ZipArchive::Closer::operator()(zip* z) const noexcept {
  if (z != nullptr) zip_discard(z);  // read-only: nothing to write back
}

ZipArchive::ZipArchive(ZipArchive&&) noexcept = default;
ZipArchive& ZipArchive::operator=(ZipArchive&&) noexcept = default;
ZipArchive::~ZipArchive() = default;

ZipArchive ZipArchive::open(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    AOTRT_FAIL(kPackage, "cannot open package ", path, ": ", std::strerror(err));
  }
  AOTRT_CHECK(S_ISREG(st.st_mode), kPackage, "package ", path, " is not a regular file");

  AOTRT_CHECK(st.st_size > 0, kPackage, "package ", path, " is empty (0 bytes)");
  return open_range(path, 0, static_cast<uint64_t>(st.st_size), "package " + path, /*whole=*/true);
}

ZipArchive ZipArchive::open_window(const std::string& path, uint64_t offset, uint64_t length,
                                   const std::string& what) {
  AOTRT_CHECK(length > 0, kPackage, what, " is empty (0 bytes)");
  return open_range(path, offset, length, what, /*whole=*/false);
}

ZipArchive ZipArchive::open_range(const std::string& path, uint64_t offset, uint64_t length,
                                  const std::string& what, bool whole) {
  ZipArchive archive;
  archive.path_ = path;
  archive.base_ = offset;
  archive.archive_bytes_ = length;
  int code = 0;
  // ZIP_CHECKCONS: also compare the central directory with the file's
  // layout, which catches truncated and spliced archives at open.
  zip* z = nullptr;
  if (whole) {
    z = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  } else {
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* src = zip_source_file_create(path.c_str(), offset, static_cast<zip_int64_t>(length), &error);
    if (src != nullptr) {
      z = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error);
      if (z == nullptr) zip_source_free(src);
    }
    code = zip_error_code_zip(&error);
    zip_error_fini(&error);
  }
  if (z == nullptr) {
    if (code == ZIP_ER_NOZIP) {
      // A zip starts with a local file header; one that does but whose end
      // record is missing was cut short (a partial download or copy).
      AOTRT_CHECK(!whole || !starts_like_zip(path), kPackage, what, " is a truncated zip "
                  "archive: it has no end of central directory record (a partial download or "
                  "copy?)");
      AOTRT_FAIL(kPackage, what, " is not a zip archive (a .pt2 is a zip written by "
                 "torch._inductor.aoti_compile_and_package)");
    }
    if (code == ZIP_ER_INCONS) {
      AOTRT_FAIL(kPackage, what, " is a corrupt or truncated zip archive (",
                 zip_error_text(code), ")");
    }
    AOTRT_FAIL(kPackage, "cannot open package ", path, ": ", zip_error_text(code));
  }
  archive.zip_.reset(z);

  const zip_int64_t n = zip_get_num_entries(z, 0);
  AOTRT_CHECK(n >= 0, kPackage, "cannot list the entries of ", path);
  uint64_t declared_total = 0;
  archive.entries_.reserve(static_cast<size_t>(n));
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t zs;
    zip_stat_init(&zs);
    if (zip_stat_index(z, static_cast<zip_uint64_t>(i), 0, &zs) != 0) {
      AOTRT_FAIL(kPackage, what, ": cannot read entry ", i, ": ",
                 zip_strerror(z));
    }
    const bool have = (zs.valid & ZIP_STAT_NAME) && (zs.valid & ZIP_STAT_SIZE) &&
                      (zs.valid & ZIP_STAT_COMP_SIZE);
    AOTRT_CHECK(have && zs.name != nullptr, kPackage, what, ": entry ", i,
                " has no name or size");
    ZipEntry e;
    e.name = zs.name;
    e.index = static_cast<uint64_t>(i);
    e.size = zs.size;
    e.compressed_size = zs.comp_size;
    e.crc = (zs.valid & ZIP_STAT_CRC) ? zs.crc : 0;
    e.stored = (zs.valid & ZIP_STAT_COMP_METHOD) && zs.comp_method == ZIP_CM_STORE &&
               (zs.valid & ZIP_STAT_ENCRYPTION_METHOD) && zs.encryption_method == ZIP_EM_NONE;
    AOTRT_CHECK(is_safe_entry_name(e.name), kPackage, what, ": entry name '",
                e.name, "' is absolute or contains '..', '\\' or NUL; refusing the archive");
    // Saturating sum: a declared size near 2^64 must not wrap past the bound.
    declared_total = e.size > UINT64_MAX - declared_total ? UINT64_MAX : declared_total + e.size;
    archive.entries_.push_back(std::move(e));
  }
  const uint64_t bound = archive.archive_bytes_ > (UINT64_MAX - kExpansionSlack) / kMaxExpansion
                             ? UINT64_MAX
                             : archive.archive_bytes_ * kMaxExpansion + kExpansionSlack;
  AOTRT_CHECK(declared_total <= bound, kPackage, what, ": entries declare ",
              declared_total, " uncompressed bytes for a ", archive.archive_bytes_,
              "-byte archive (more than ", kMaxExpansion,
              "x; see Note [Zip bomb bound]); refusing a likely zip bomb");
  return archive;
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  for (const ZipEntry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

template <typename Sink>
void ZipArchive::stream(const ZipEntry& entry, Sink&& sink) const {
  zip_file_t* f = zip_fopen_index(zip_.get(), entry.index, 0);
  if (f == nullptr) {
    AOTRT_FAIL(kPackage, "package ", path_, ": cannot read entry '", entry.name, "': ",
               zip_strerror(zip_.get()));
  }
  struct FileCloser {
    zip_file_t* f;
    ~FileCloser() { zip_fclose(f); }
  } closer{f};
  std::vector<char> buf(1 << 20);
  uint64_t total = 0;
  while (true) {
    const zip_int64_t got = zip_fread(f, buf.data(), buf.size());
    if (got < 0) {
      // libzip checks the CRC when the entry has been read to its end.
      AOTRT_FAIL(kPackage, "package ", path_, ": entry '", entry.name, "' is corrupt: ",
                 zip_file_strerror(f));
    }
    if (got == 0) break;
    const auto n = static_cast<uint64_t>(got);
    AOTRT_CHECK(n <= entry.size - total, kPackage, "package ", path_, ": entry '", entry.name,
                "' holds more than the ", entry.size, " bytes it declares");
    sink(buf.data(), static_cast<size_t>(n));
    total += n;
  }
  AOTRT_CHECK(total == entry.size, kPackage, "package ", path_, ": entry '", entry.name,
              "' is truncated: ", total, " of ", entry.size, " bytes");
}

void ZipArchive::extract(const ZipEntry& entry, const std::string& dest_path) const {
  OutputFile out(dest_path);
  stream(entry, [&](const char* data, size_t n) { out.write(data, n); });
  out.keep();
}

std::string ZipArchive::read(const ZipEntry& entry, uint64_t max_bytes) const {
  AOTRT_CHECK(entry.size <= max_bytes, kPackage, "package ", path_, ": entry '", entry.name,
              "' is ", entry.size, " bytes; at most ", max_bytes, " are read into memory");
  std::string text;
  text.reserve(static_cast<size_t>(entry.size));
  stream(entry, [&](const char* data, size_t n) { text.append(data, n); });
  return text;
}

std::unique_ptr<uint8_t[]> ZipArchive::read_bytes(const ZipEntry& entry) const {
  auto bytes = std::make_unique_for_overwrite<uint8_t[]>(static_cast<size_t>(entry.size));
  uint64_t at = 0;
  // stream() refuses data past entry.size before it reaches the sink.
  stream(entry, [&](const char* data, size_t n) {
    std::memcpy(bytes.get() + at, data, n);
    at += n;
  });
  return bytes;
}

std::optional<uint64_t> ZipArchive::stored_data_offset(const ZipEntry& entry) const {
  if (!entry.stored) return std::nullopt;
  if (local_headers_.empty()) {
    local_headers_ = local_header_offsets(path_, base_, archive_bytes_, entries_.size());
  }
  AOTRT_CHECK(entry.index < local_headers_.size(), kPackage, "package ", path_, ": no entry ", entry.index);
  const uint64_t header = local_headers_[entry.index];  // within the window
  uint8_t h[30];
  const InputFile file(path_);
  AOTRT_CHECK(header <= archive_bytes_ && archive_bytes_ - header >= sizeof h, kPackage, "package ",
              path_, ": the local header of entry '", entry.name, "' lies past the end");
  file.read_at(base_ + header, h, sizeof h, "a local file header");
  const size_t name_len = le<uint16_t>(h + 26), extra_len = le<uint16_t>(h + 28);
  std::string name(name_len, '\0');
  if (name_len > 0) file.read_at(base_ + header + 30, name.data(), name_len, "a local file header");
  const uint64_t data = header + 30 + name_len + extra_len;
  AOTRT_CHECK(le<uint32_t>(h) == 0x04034b50 && name == entry.name && le<uint16_t>(h + 8) == 0 &&
                  (le<uint16_t>(h + 6) & 1) == 0,
              kPackage, "package ", path_, ": the local header of entry '", entry.name,
              "' does not agree with the central directory");
  AOTRT_CHECK(data <= archive_bytes_ && entry.size <= archive_bytes_ - data, kPackage, "package ",
              path_, ": entry '", entry.name, "' (", entry.size, " bytes at offset ", data,
              ") runs past the end of the ", archive_bytes_, "-byte archive");
  return base_ + data;
}

void ZipArchive::check_crc(const ZipEntry& entry) const {
  const std::optional<uint64_t> start = stored_data_offset(entry);
  AOTRT_CHECK(start.has_value(), kInternal, "check_crc of compressed entry '", entry.name, "'");
  const InputFile file(path_);
  // Slices of at least 64 MiB, one thread each (up to 16), combined with
  // crc32_combine: zlib's CRC runs at 1-3 GB/s on one core.
  constexpr uint64_t kSlice = uint64_t{64} << 20;
  const uint64_t threads = std::clamp<uint64_t>(
      std::min<uint64_t>(std::thread::hardware_concurrency(), 16), 1,
      std::max<uint64_t>(1, (entry.size + kSlice - 1) / kSlice));
  const uint64_t per = (entry.size + threads - 1) / threads;
  std::vector<uLong> crcs(threads, crc32(0L, Z_NULL, 0));
  std::vector<std::string> errors(threads);
  auto work = [&](uint64_t t) {
    try {
      const uint64_t begin = std::min(entry.size, t * per), end = std::min(entry.size, begin + per);
      std::vector<uint8_t> buf(static_cast<size_t>(std::min<uint64_t>(end - begin, uint64_t{8} << 20)));
      for (uint64_t at = begin; at < end;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), end - at));
        file.read_at(*start + at, buf.data(), n, "an entry's bytes");
        crcs[t] = crc32_z(crcs[t], buf.data(), n);
        at += n;
      }
    } catch (const std::exception& e) {
      errors[t] = e.what();
    }
  };
  std::vector<std::thread> pool;
  for (uint64_t t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& th : pool) th.join();
  uLong crc = crcs[0];
  for (uint64_t t = 1; t < threads; ++t) {
    AOTRT_CHECK(errors[t].empty(), kPackage, errors[t]);
    const uint64_t begin = std::min(entry.size, t * per), end = std::min(entry.size, begin + per);
    crc = crc32_combine64(crc, crcs[t], static_cast<z_off64_t>(end - begin));
  }
  AOTRT_CHECK(errors[0].empty(), kPackage, errors[0]);
  AOTRT_CHECK(crc == entry.crc, kPackage, "package ", path_, ": entry '", entry.name,
              "' is corrupt: CRC error (its bytes do not match the CRC-32 the archive records)");
}

}  // namespace aotrt::package
