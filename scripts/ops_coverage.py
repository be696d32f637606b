#!/usr/bin/env python3
"""Which of torch's generated C-shim functions aotrt serves: docs/ops/coverage.md.

Reads torch's generated headers (c_shim_{cpu,cuda,aten}.h of the installed torch; another
torch version's with --headers VERSION=DIR, whose names and signatures are then kept in
docs/ops/torch-VERSION-shims.txt and read from there on machines without them), the op rows of src/shim/ops/*.cpp
(Note [Op rows] in src/shim/ops/op_row.h) and what a built libaotrt.so exports, then:
  - checks every row's C signature against the header that declares its name, token for
    token (a row is the header's parameter list copied as it is);
  - checks every row names a function of some header (no typo reaches the ABI);
  - checks the library exports exactly the rows of the devices it was built for: a
    CPU-only build exports no aoti_torch_cuda_* op (aotrt info would call it provided);
  - writes (or with --check compares) docs/ops/coverage.md: every shim of every header,
    served or not, and why not.
Prints what is missing. Exit status 1 on any failed check.

    python3 scripts/ops_coverage.py --build build            # rewrite the doc
    python3 scripts/ops_coverage.py --build build --check    # CI: fail if it is stale
    python3 scripts/ops_coverage.py --build build --headers 2.11=/path/to/generated
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "ops" / "coverage.md"
HEADERS = ("c_shim_cpu.h", "c_shim_cuda.h", "c_shim_aten.h")
PREFIX = {"cpu": "aoti_torch_cpu_", "cuda": "aoti_torch_cuda_", "aten": "aoti_torch_aten_",
          "generic": "aoti_torch_"}

# Why a shim is not served: the first matching pattern (on the name after the device
# prefix) wins. Keep the reasons true: who is on it, or why it never will be.
NOT_SERVED = [
    (r"_backward$|_backward_|_dense_backward|_per_sample_weights_backward",
     "backward-only: inductor emits it for training graphs, not for inference"),
    # Served on the CPU by ops-more's families; only their CUDA entries reach this list.
    (r"^(triangular_solve|cholesky_solve|cholesky_inverse|geqrf|ormqr|lu_unpack|_fft_r2c|_fft_c2c|"
     r"_cdist_forward|_pdist_forward|hann_window|_int_mm_out|_weight_int8pack_mm|"
     r"rand\w*|randn\w*|randint\w*|randperm|bernoulli_\w*|uniform|normal_functional|exponential|"
     r"native_dropout)$",
     "CPU only so far: the CUDA kernel table of its family (src/ops/<family>.h) is ops-cuda's"),
    (r"^(resize_|resize_as_|set__source_Tensor)$",
     "in-place storage changes of a handle: not written yet (ops-cpu did not reach them this session)"),
    (r"^(amax|subtract_Tensor)$",
     "c_shim_aten.h pointwise ops: not written yet (opsmisc reached the cpu/cuda pointwise shims only)"),
