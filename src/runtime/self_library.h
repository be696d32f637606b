// aotrt's own library, as the dynamic loader sees it: what it provides to a
// model .so, and making sure the model can bind to it.
//
// Note [Model symbol binding]
// A model .so is dlopened RTLD_LOCAL and leaves its aoti_torch_* symbols
// undefined; the loader binds them in the global scope. libaotrt.so is
// global when a program links it, but not when it was itself dlopened with
// RTLD_LOCAL (a Python extension, a plugin). So the loader reopens aotrt's
// own library with RTLD_NOLOAD | RTLD_GLOBAL once, which promotes it to the
// global scope without loading anything, and keeps that handle to ask, with
// dlsym, whether aotrt defines a symbol a model needs.
#pragma once

#include <string>

namespace aotrt::runtime {

// The handle of aotrt's library (or of the program it is linked into),
// promoted to RTLD_GLOBAL. Never closed.
void* self_library_handle();
// Where aotrt's library is ("" if it is the main program).
const std::string& self_library_path();
// Whether aotrt (its library and what that library links) defines `name`.
bool provides_symbol(const std::string& name);

}  // namespace aotrt::runtime
