// aotrt's own library, as the dynamic loader sees it: what it provides to a
// model .so, and making sure the model can bind to it.
//
// Note [Model symbol binding]
// A model .so is dlopened RTLD_LOCAL and leaves its aoti_torch_* symbols
// undefined, and its kernels' Sleef_* and GOMP_* imports too (libtorch would
// provide them; the .so names no library for them): the loader binds them
// in the global scope. A program that links libaotrt.so has it, and its
// dependencies, in the global scope already. A Python extension or a plugin
// that dlopened it RTLD_LOCAL does not; see Note [The ABI face].
//
// Note [The ABI face]
// Making libaotrt.so itself global would make every library it links global
// too (the dynamic loader adds a library's whole dependency list): OpenBLAS,
// Debian's oneDNN, libzip, cuBLAS, ... A library loaded after that, libtorch
// when a program imports torch after loading a model, then binds its own BLAS,
// oneDNN and Sleef calls to aotrt's copies (seen with LD_DEBUG=bindings: 102
// of libtorch_cpu's symbols went to OpenBLAS, 46 to oneDNN 2.7). So aotrt
// makes global, once, only libaotrt_abi.so, built beside it: one jump stub for
// each model-facing name libaotrt exports (cmake/abi_face.cmake writes them
// from the built library), jumping through a table that aotrt fills here with
// dlsym on its own, local, handle, plus the two libraries a model's kernels
// import from, Sleef and OpenMP. A stub costs one indirect jump a call.
// Before a model is opened, every aoti_* name it imports is checked to
// resolve to aotrt (libaotrt or the face): another library of the global scope
// that defines it (a libtorch loaded RTLD_GLOBAL) would have the model's calls.
#pragma once

#include <string>
#include <vector>

namespace aotrt::runtime {

// The handle of aotrt's library (or of the program it is linked into), as it
// was loaded (not promoted). Never closed.
void* self_library_handle();
// Where aotrt's library is ("" if it is the main program).
const std::string& self_library_path();
// Whether aotrt (its library and what that library links) defines `name`.
bool provides_symbol(const std::string& name);
// Makes aotrt's model-facing names resolvable from the global scope (Note
// [The ABI face]) and checks that each of `imports` (a model's aoti_* imports)
// resolves to aotrt there; refuses with the name and the library that has it
// otherwise.
void expose_to_models(const std::vector<std::string>& imports);

}  // namespace aotrt::runtime
