// A memory mapping of a whole file (the weights blob, a safetensors file).
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"

namespace aotrt::runtime {

// A mapping of a whole file: read-only, or (copy_on_write) writable with
// writes kept private to this process (MAP_PRIVATE), the file unchanged.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path, bool copy_on_write = false) {
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
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, copy_on_write ? PROT_READ | PROT_WRITE : PROT_READ,
                       MAP_PRIVATE, fd, 0);
      const int err = errno;
      ::close(fd);
      if (p == MAP_FAILED) AOTRT_FAIL(kPackage, "cannot map ", path, ": ", std::strerror(err));
      data_ = p;
    } else {
      ::close(fd);
    }
  }
  ~MappedFile() {
    // Whole pages: ThreadSanitizer forgets only the bytes munmap is told of,
    // and would report the next user of the tail page as racing with us.
    const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    if (data_ != nullptr) ::munmap(data_, (size_ + page - 1) / page * page);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Never null: an empty file reads as a zero-filled static block, since the
  // model may still take the pointer.
  const uint8_t* data() const {
    alignas(64) static const uint8_t kEmpty[64] = {};
    return data_ != nullptr ? static_cast<const uint8_t*>(data_) : kEmpty;
  }
  // The writable start of a copy_on_write mapping (null for an empty file).
  uint8_t* mutable_data() const { return static_cast<uint8_t*>(data_); }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace aotrt::runtime
