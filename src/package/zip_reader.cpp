#include "package/zip_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <cerrno>
#include <cstring>

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

  ZipArchive archive;
  archive.path_ = path;
  archive.archive_bytes_ = static_cast<uint64_t>(st.st_size);
  int code = 0;
  // ZIP_CHECKCONS: also compare the central directory with the file's
  // layout, which catches truncated and spliced archives at open.
  zip* z = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  if (z == nullptr) {
    if (code == ZIP_ER_NOZIP) {
      // A zip starts with a local file header; one that does but whose end
      // record is missing was cut short (a partial download or copy).
      AOTRT_CHECK(!starts_like_zip(path), kPackage, "package ", path, " is a truncated zip "
                  "archive: it has no end of central directory record (a partial download or "
                  "copy?)");
      AOTRT_FAIL(kPackage, "package ", path, " is not a zip archive (a .pt2 is a zip written by "
                 "torch._inductor.aoti_compile_and_package)");
    }
    if (code == ZIP_ER_INCONS) {
      AOTRT_FAIL(kPackage, "package ", path, " is a corrupt or truncated zip archive (",
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
      AOTRT_FAIL(kPackage, "package ", path, ": cannot read entry ", i, ": ",
                 zip_strerror(z));
    }
    const bool have = (zs.valid & ZIP_STAT_NAME) && (zs.valid & ZIP_STAT_SIZE) &&
                      (zs.valid & ZIP_STAT_COMP_SIZE);
    AOTRT_CHECK(have && zs.name != nullptr, kPackage, "package ", path, ": entry ", i,
                " has no name or size");
    ZipEntry e;
    e.name = zs.name;
    e.index = static_cast<uint64_t>(i);
    e.size = zs.size;
    e.compressed_size = zs.comp_size;
    AOTRT_CHECK(is_safe_entry_name(e.name), kPackage, "package ", path, ": entry name '",
                e.name, "' is absolute or contains '..', '\\' or NUL; refusing the archive");
    // Saturating sum: a declared size near 2^64 must not wrap past the bound.
    declared_total = e.size > UINT64_MAX - declared_total ? UINT64_MAX : declared_total + e.size;
    archive.entries_.push_back(std::move(e));
  }
  const uint64_t bound = archive.archive_bytes_ > (UINT64_MAX - kExpansionSlack) / kMaxExpansion
                             ? UINT64_MAX
                             : archive.archive_bytes_ * kMaxExpansion + kExpansionSlack;
  AOTRT_CHECK(declared_total <= bound, kPackage, "package ", path, ": entries declare ",
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

}  // namespace aotrt::package
