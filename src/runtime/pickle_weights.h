// Weights a package keeps as torch's "pickle_weights"
// (aot_inductor.package_constants_on_disk_format="pickle_weights").
//
// Note [Pickled weights]
// torch 2.11 and 2.13 write, per group of constants that share a storage,
// one entry <stem>/data/weights/weight_<k> holding torch.save of the whole
// storage as a tensor: itself a zip (PyTorchFileWriter, entries stored,
// 64-byte aligned) whose archive/data/<key> entry is the storage's raw bytes
// (one storage, so one such entry). The model's folder holds
// weights_config.json: {original FQN: [file, sizes, strides, storage offset
// in elements]}. With package_constants_in_so=False (the default keeps a
// copy in the .so too, which aotrt then uses) the .so holds no weights, and
// torch's Python loader gives these to the container; aotrt gives them
// through the external weights path (Note [External weights]) as tensors
// viewing the mapped .pt2: in place on the CPU (the mapping is
// copy-on-write, so a mutated buffer stays private), one upload on CUDA.
// The pickle itself is not read: the dtype is the model's (the container
// says it), the layout is weights_config.json's, and the bytes' bounds and
// each entry's CRC are checked.
#pragma once

#include "aotrt/aotrt.h"
#include "runtime/preflight.h"

namespace aotrt::runtime {

// The package's pickled weights for `info`'s constants. Throws kPackage
// naming what is missing or malformed.
Weights read_pickle_weights(const OpenedPackage& pkg, const ModelInfo& info);

}  // namespace aotrt::runtime
