#include "runtime/model_mmap.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "core/error.h"

namespace aotrt::runtime {

struct AppendedWeights::State {
  dev_t dev = 0;
  ino_t ino = 0;
  int archive_fd = -1;
  uint64_t data_offset = 0, weights_offset = 0, entry_size = 0;
  std::vector<std::pair<void*, size_t>> maps;  // what aomm mapped, whole pages
};

namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::shared_ptr<AppendedWeights::State>>& registry() {
  static std::vector<std::shared_ptr<AppendedWeights::State>> r;
  return r;
}

size_t page() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

thread_local LoadingWeights* t_loading = nullptr;

void* map_for_model(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  struct stat st {};
  if (fd >= 0 && addr == nullptr && (flags & MAP_PRIVATE) != 0 && (flags & MAP_FIXED) == 0 &&
      offset >= 0 && ::fstat(fd, &st) == 0) {
    std::lock_guard<std::mutex> lock(registry_mutex());
    for (const auto& s : registry()) {
      if (s->dev != st.st_dev || s->ino != st.st_ino) continue;
      const auto off = static_cast<uint64_t>(offset);
      if (off < s->weights_offset || off > s->entry_size || length > s->entry_size - off) break;
      const uint64_t at = s->data_offset + off;
      const size_t delta = static_cast<size_t>(at % page());
      void* p = ::mmap(nullptr, length + delta, prot, flags, s->archive_fd, static_cast<off_t>(at - delta));
      if (p == MAP_FAILED) return MAP_FAILED;  // errno is mmap's
      s->maps.emplace_back(p, (length + delta + page() - 1) / page() * page());
      return static_cast<uint8_t*>(p) + delta;
    }
  }
  return ::mmap(addr, length, prot, flags, fd, offset);
}

}  // namespace

AppendedWeights::AppendedWeights(const std::string& so_path, const std::string& archive_path,
                                 uint64_t data_offset, uint64_t weights_offset, uint64_t entry_size)
    : state_(std::make_shared<State>()) {
  struct stat st {};
  if (::stat(so_path.c_str(), &st) != 0) {
    const int err = errno;
    AOTRT_FAIL(kPackage, "cannot stat ", so_path, ": ", std::strerror(err));
  }
  state_->dev = st.st_dev;
  state_->ino = st.st_ino;
  state_->archive_fd = ::open(archive_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (state_->archive_fd < 0) {
    const int err = errno;
    AOTRT_FAIL(kPackage, "cannot open package ", archive_path, ": ", std::strerror(err));
  }
  state_->data_offset = data_offset;
  state_->weights_offset = weights_offset;
  state_->entry_size = entry_size;
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry().push_back(state_);
}

AppendedWeights::~AppendedWeights() {
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto& r = registry();
    r.erase(std::remove(r.begin(), r.end(), state_), r.end());
  }
  for (const auto& [p, n] : state_->maps) ::munmap(p, n);
  ::close(state_->archive_fd);
}

void AppendedWeights::drop_pages() const {
  std::lock_guard<std::mutex> lock(registry_mutex());
  for (const auto& [p, n] : state_->maps) ::madvise(p, n, MADV_DONTNEED);
}

size_t AppendedWeights::mappings() const {
  std::lock_guard<std::mutex> lock(registry_mutex());
  return state_->maps.size();
}

LoadingWeights::LoadingWeights(std::function<void()> drop)
    : drop_(std::move(drop)), previous_(std::exchange(t_loading, this)) {}

LoadingWeights::~LoadingWeights() {
  t_loading = previous_;
  try {
    drop_();
  } catch (...) {
  }
}

void constant_registered() noexcept {
  if (t_loading == nullptr) return;
  try {
    t_loading->drop_();
  } catch (...) {
  }
}

}  // namespace aotrt::runtime

extern "C" void* aomm(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  return aotrt::runtime::map_for_model(addr, length, prot, flags, fd, offset);
}

extern "C" void* aomm64(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  return aotrt::runtime::map_for_model(addr, length, prot, flags, fd, offset);
}
