// The changes the loader makes to an extracted model .so before dlopen, so
// that dlclose really unloads it. Without them every Model::load of torch
// 2.13's pointwise_c2f kept 6 mappings (~300 KB of RSS) and the deleted .so
// file alive for the life of the process.
//
// Note [Unique symbols and dlclose]
// g++ gives the static locals of inline and template functions (libstdc++'s
// regex tables, to_chars digits, guard variables, ...) the binding
// STB_GNU_UNIQUE: one instance per process, whatever the RTLD_LOCAL scopes.
// The first object to define one that is looked up becomes its owner, and
// glibc marks it NODELETE, since later objects may bind to its copy: such a
// model stays mapped after dlclose, and a second load of it shares the first
// one's statics. Every AOTInductor model .so has unique symbols
// (pointwise_c2f: 17 in .dynsym; those happen to be owned by libstdc++ or
// aotrt's own copies, but a model-specific one is owned by the model). As
// STB_GLOBAL they resolve as any global symbol: to the copy an already
// loaded library exports (the global scope is searched first), else to the
// model's own, private to that load as everything else in a model is (two
// Models share nothing).
//
// Note [Thread-local destructors and dlclose]
// Generated code keeps its last error in a `thread_local std::string`
// (torch's aoti_runtime/interface.cpp) that every container call touches;
// its destructor is registered with __cxa_thread_atexit, and glibc keeps an
// object with such registrations loaded until every thread that made one
// exits (never, for the main thread): this alone kept every pointwise_c2f
// load mapped. The model's import of __cxa_thread_atexit is renamed in its
// .dynstr to aotrt_thread_atexit (same length; see runtime/model_tls.h),
// and so is its own definition when it links libstdc++ statically (as
// models built on the H200 machine's image do), with the import of glibc's
// __cxa_thread_atexit_impl that such a copy calls; aotrt's versions run
// those destructors when the thread exits or, at the latest,
// before the model is dlclosed. The rename is skipped, and the model merely
// stays loaded, when another name shares the bytes it would change.
#pragma once

#include <array>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace aotrt::package {

inline constexpr const char* kThreadAtexit = "__cxa_thread_atexit";
inline constexpr const char* kThreadAtexitReplacement = "aotrt_thread_atexit";
inline constexpr const char* kThreadAtexitImpl = "__cxa_thread_atexit_impl";  // glibc's
inline constexpr const char* kThreadAtexitImplReplacement = "aotrt_thread_atexit_impl";
// Note [Kernel modules of a model] (cuda/modules.cpp): a CUDA model's module
// loads, renamed to aotrt's, which unloads them with the model.
inline constexpr const char* kModuleLoads[][2] = {{"cuModuleLoad", "aoModuleLoad"},
                                                  {"cuModuleLoadData", "aoModuleLoadData"}};

// Note [Model input checks] (runtime/model_env.h): a model's environment
// reads, renamed to aotrt's, which answer AOTI_RUNTIME_CHECK_INPUTS for it.
inline constexpr const char* kGetenv = "getenv";
inline constexpr const char* kGetenvReplacement = "aotenv";
// A linker keeps one string for "secure_getenv" and "getenv" (its suffix);
// renaming the shared bytes makes the first secure_aotenv, which aotrt defines too.
inline constexpr std::array<const char*, 2> kGetenvCompanions[] = {{"secure_getenv", "secure_aotenv"}};

// Note [Weights appended to the .so] (runtime/model_mmap.h): a model's map
// of its own file, renamed to aotrt's, which maps its weights from the .pt2.
inline constexpr const char* kMmaps[][2] = {{"mmap", "aomm"}, {"mmap64", "aomm64"}};

struct ElfPatchResult {
  size_t unique_symbols_demoted = 0;  // Note [Unique symbols and dlclose]
  bool thread_atexit_redirected = false;  // Note [Thread-local destructors and dlclose]
  size_t module_loads_redirected = 0;     // Note [Kernel modules of a model]
  bool getenv_redirected = false;         // Note [Model input checks]
  bool getenv_shared = false;  // the model imports getenv, but another name shares its bytes
  bool mmap_redirected = false;  // Note [Weights appended to the .so]
};

// Applies the changes in place. The image must be a native 64-bit ELF (the
// loader's checks ran first); throws kPackage, naming `what`, for one whose
// headers point outside it.
// `kernel_modules`: also redirect the CUDA driver's module loads (only where
// aotrt is built with CUDA, which defines their replacements).
// `input_checks`: also redirect the model's getenv (Note [Model input checks]).
// `appended_weights`: also redirect the model's mmap (Note [Weights appended to the .so]).
ElfPatchResult patch_for_dlclose(std::span<uint8_t> image, const std::string& what,
                                 bool kernel_modules = false, bool input_checks = false,
                                 bool appended_weights = false);

// The same on a file, written back in place; only its first `elf_bytes`
// bytes are mapped when given (the rest may be a sparse tail).
ElfPatchResult patch_for_dlclose_in_file(const std::string& path, bool kernel_modules = false,
                                         bool input_checks = false, bool appended_weights = false,
                                         uint64_t elf_bytes = 0);

}  // namespace aotrt::package
