// A memory mapping of a file or of a range of it (a safetensors file; a
// weights blob or pickled weights stored inside a .pt2, Note [Stored entries
// read in place] in package/zip_reader.h).
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "core/error.h"

namespace aotrt::runtime {

// A mapping of a whole file, or of `length` bytes from `offset`: read-only,
// or (copy_on_write) writable with writes kept private to this process
// (MAP_PRIVATE), the file unchanged. A range need not start on a page: the
// mapping starts at the page before it, and data() points at the range.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path, bool copy_on_write = false)
      : MappedFile(path, 0, std::nullopt, copy_on_write) {}
  MappedFile(const std::string& path, uint64_t offset, std::optional<uint64_t> length,
             bool copy_on_write = false) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      AOTRT_FAIL(kPackage, "cannot open ", path, ": ", std::strerror(err));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      AOTRT_FAIL(kPackage, "cannot stat ", path, ": ", std::strerror(err));
    }
    const auto file_size = static_cast<uint64_t>(st.st_size);
    const uint64_t want = length.value_or(file_size > offset ? file_size - offset : 0);
    if (offset > file_size || want > file_size - offset) {
      ::close(fd);
      AOTRT_FAIL(kPackage, "cannot map ", want, " bytes at offset ", offset, " of ", path,
                 ": the file has ", file_size);
    }
    size_ = static_cast<size_t>(want);
    if (size_ > 0) {
      delta_ = static_cast<size_t>(offset % page_size());
      map_length_ = size_ + delta_;
      void* p = ::mmap(nullptr, map_length_, copy_on_write ? PROT_READ | PROT_WRITE : PROT_READ,
                       MAP_PRIVATE, fd, static_cast<off_t>(offset - delta_));
      const int err = errno;
      ::close(fd);
      if (p == MAP_FAILED) AOTRT_FAIL(kPackage, "cannot map ", path, ": ", std::strerror(err));
      base_ = p;
    } else {
      ::close(fd);
    }
  }
  ~MappedFile() {
    // Whole pages: ThreadSanitizer forgets only the bytes munmap is told of,
    // and would report the next user of the tail page as racing with us.
    if (base_ != nullptr) ::munmap(base_, (map_length_ + page_size() - 1) / page_size() * page_size());
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Never null: an empty file reads as a zero-filled static block, since the
  // model may still take the pointer.
  const uint8_t* data() const {
    alignas(64) static const uint8_t kEmpty[64] = {};
    return base_ != nullptr ? static_cast<const uint8_t*>(base_) + delta_ : kEmpty;
  }
  // The writable start of a copy_on_write mapping (null for an empty file).
  uint8_t* mutable_data() const {
    return base_ != nullptr ? static_cast<uint8_t*>(base_) + delta_ : nullptr;
  }
  size_t size() const { return size_; }
  // Lets the kernel take back the pages read so far; later reads fault them
  // in again from the file. For a read-only mapping only: the private pages
  // of a copy_on_write one would be lost.
  void drop_pages() const {
    if (base_ != nullptr) ::madvise(base_, map_length_, MADV_DONTNEED);
  }

  static size_t page_size() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

 private:
  void* base_ = nullptr;
  size_t map_length_ = 0;  // from base_, whole pages before the range included
  size_t delta_ = 0;       // from base_ to the range
  size_t size_ = 0;
};

}  // namespace aotrt::runtime
