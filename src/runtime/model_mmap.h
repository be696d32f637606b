// What a model's .so maps of its own file, answered by aotrt from the .pt2.
//
// Note [Weights appended to the .so]
// Above 2 GB of constants (or with aot_inductor.force_mmap_weights), torch
// appends the weights to the model .so after linking: the file is padded to
// a multiple of 16 KiB, then come the serialized constants and an 8-byte
// random magic number; the 16 constant bytes linked into the .so hold the
// size of that tail and the magic (package/elf_reader.h, AppendedWeights).
// When the container is made (load_constants -> _get_constants_start in
// torch's aoti_runtime/model_base.h, the same in torch 2.11 and 2.13), the
// model finds its own file with dladdr, opens it, takes
// weights_offset = lseek(fd, 0, SEEK_END) - size (it must be 16 KiB
// aligned), mmaps [weights_offset, end) MAP_PRIVATE, checks the magic in the
// mapping's last 8 bytes, copies every constant into memory it allocates
// (cudaMemcpy to the device; memcpy into a malloc'd block on the CPU) and
// keeps the mapping, never unmapping it.
//
// Extracting such a .so would write the whole weights to a temp file and
// read them back. Instead (runtime/preflight.cpp), when the .pt2 stores the
// entry uncompressed (Note [Stored entries read in place]), only its ELF
// part is written, and the file is made as long as the whole entry with
// ftruncate: a sparse file, so lseek and the alignment check see torch's
// numbers. The model's mmap import is renamed to aomm (package/elf_patch.h;
// the same in-place rename as getenv's, Note [Model input checks]), and
// aomm maps, for a descriptor of that file and a range at or past
// weights_offset, the same range of the .pt2: page-aligned, returning the
// address plus the in-page delta. Every other call goes to mmap unchanged.
// aotrt keeps the mappings it made for a model, drops their pages once the
// container holds its copy (Note [Weights pages during load]) and unmaps
// them when the model is unloaded (torch's code would leak them). Where the
// rename cannot be made (another name shares mmap's bytes in .dynstr), the
// rest of the entry is extracted after all, as torch would, and the loader
// says so on stderr. The entry's CRC-32 is checked before the model runs.
// AOTRT_EXTRACT_APPENDED_WEIGHTS=1 takes that path on purpose (to measure
// against: bench/load_memory.py, and to test it).
//
// Note [Weights pages during load]
// Weights read from a mapping stay resident (counted in the process's RSS,
// though they are the file's page cache) until dropped. While a model's
// container is made, or fed a weights blob, its weights are read once, in
// order, and each constant is registered with
// aoti_torch_create_tensor_from_blob_v2 right after the model copied it; so
// that shim drops the pages of the mappings a LoadingWeights scope names
// (MADV_DONTNEED: the pages are read again from the file if touched). The
// host then holds at most the largest constant of the weights beside the
// model's own copy (none on CUDA), instead of every weight twice.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "aotrt/shim.h"

extern "C" {
// mmap's contract. For a MAP_PRIVATE map of a registered model .so at or
// past its weights offset, maps that range of the .pt2 instead; otherwise
// calls mmap.
AOTRT_EXPORT void* aomm(void* addr, size_t length, int prot, int flags, int fd, off_t offset);
// The same for a model that imports mmap64 (built with _FILE_OFFSET_BITS=64).
AOTRT_EXPORT void* aomm64(void* addr, size_t length, int prot, int flags, int fd, off_t offset);
}

namespace aotrt::runtime {

// One extracted model .so whose appended weights are served from the .pt2
// (Note [Weights appended to the .so]). Registered while it lives.
class AppendedWeights {
 public:
  // `so_path`: the sparse extracted file; its bytes from `weights_offset` to
  // `entry_size` are those at `data_offset` + the same offset in `archive_path`.
  AppendedWeights(const std::string& so_path, const std::string& archive_path, uint64_t data_offset,
                  uint64_t weights_offset, uint64_t entry_size);
  // Unregisters and unmaps what aomm mapped for it: call after the model is unloaded.
  ~AppendedWeights();
  AppendedWeights(const AppendedWeights&) = delete;
  AppendedWeights& operator=(const AppendedWeights&) = delete;

  // Drops the resident pages of every mapping made for it.
  void drop_pages() const;
  // How many mappings aomm made for it (the model's load makes one).
  size_t mappings() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

// Note [Weights pages during load]: while one lives on a thread, each
// constant registered there calls `drop` (the previous scope is restored after).
class LoadingWeights {
 public:
  explicit LoadingWeights(std::function<void()> drop);
  ~LoadingWeights();
  LoadingWeights(const LoadingWeights&) = delete;
  LoadingWeights& operator=(const LoadingWeights&) = delete;

 private:
  friend void constant_registered() noexcept;
  std::function<void()> drop_;
  LoadingWeights* previous_;
};

// Called by aoti_torch_create_tensor_from_blob_v2: drops the pages of the
// current thread's LoadingWeights, if any. Never throws.
void constant_registered() noexcept;

}  // namespace aotrt::runtime
