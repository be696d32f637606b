// What a package is, for generation: read from its "aotrt.generation"
// metadata or inferred from its graphs (Note [Generation packages] in
// generate/config.cpp).
#pragma once

#include "aotrt/generate.h"

namespace aotrt::generate {

// Throws kPackage saying what is missing or unrecognised.
GenerationConfig read_config(const Program& program, const GeneratorOptions& options);

}  // namespace aotrt::generate
