// Weights given to a model from outside its package (aotrt::Weights):
// checked against the constants the model expects and made into handles the
// model's container takes.
//
// Note [External weights]
// Names are the constants' original FQNs. Before anything is loaded, every
// non-folded constant is looked up and checked, and every problem is listed
// in one error: a constant missing, a dtype or sizes that differ, a non-dense
// tensor whose strides differ from the model's (a dense one is laid out as the
// model keeps it: safetensors holds only row-major data), a name the model
// has no constant for (unless Weights::allow_unused). When the package does
// not record a constant's layout (no generated source), the tensor must be
// dense and hold exactly the constant's bytes.
//
// The container takes the set with UpdateUserManagedConstantBuffer: it keeps
// handles to the memory given, no copy. A tensor already on the model's
// device with the expected layout is given in place (a safetensors tensor on
// a CPU model is a view of the file's mapping: pages are read when first
// touched, and shared with every process mapping the file); any other is
// copied once into memory of that layout on the model's device (for CUDA, one
// host-to-device copy straight from the mapping). The mapping is
// copy-on-write, so a model that writes a constant (a mutated buffer) changes
// only its private pages, never the file.
//
// Swapping (Model::swap_weights) loads the new set into the container's
// inactive buffer and calls SwapConstantBuffer, under the Model's run mutex:
// torch's container takes its exclusive lock there too, and aotrt runs with
// RunSingleThreaded, which takes none (Note [Run without host waits]), so the
// Model's mutex is what orders a swap after the run in progress. The set the
// swap made inactive stays alive until the next swap replaces it: CUDA runs
// queued before the swap may still read it, and the container still holds
// handles to it. Before a set is dropped, a CUDA device is synchronised.
#pragma once

#include <string>
#include <vector>

#include "aotrt/aotrt.h"

namespace aotrt::runtime {

// A complete set of constants, ready for the container.
struct ConstantSet {
  std::vector<std::string> names;  // the container's keys (ConstantInfo::name)
  std::vector<Tensor> tensors;     // on the model's device, in its layout
  // Per tensor: the caller's memory, given in place (never marked constant:
  // the caller may write it; Note [Constant marking] in runtime/model.cpp).
  std::vector<bool> callers;
  std::vector<Weights> sources;    // keeps what the tensors view alive
  std::string source;              // for ModelInfo::weights_source
};

// Checks `weights` against every non-folded constant of `info` and builds
// the set. With `current` (a partial update), constants not in `weights`
// are taken from it; without, every constant is required. Throws
// kInvalidArgument listing every mismatch, prefixed with `fn`.
ConstantSet prepare_constants(const ModelInfo& info, const Weights& weights,
                              const ConstantSet* current, const char* fn);

}  // namespace aotrt::runtime
