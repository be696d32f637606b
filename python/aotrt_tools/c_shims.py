"""The op signatures of torch's C shim headers, parsed.

torch/include/torch/csrc/inductor/aoti_torch/generated/c_shim_{cpu,cuda,aten}.h declare every
`aoti_torch_<device>_<op>` entry point generated code calls; the hand-written
aoti_torch/c/shim_cpu.h declares the fused oneDNN ops (mkldnn._convolution_pointwise,
_linear_pointwise, ...), int4 matmul and c10d ones. Their parameters come in a few kinds,
which both the op fuzzer's table (fuzz/gen_op_table.py) and the differential tests' ctypes
harness (tests/e2e/test_diff_ops.py) draw or pass by:

  tensor          AtenTensorHandle
  opt_tensor      AtenTensorHandle*        (null: None)
  ret_tensor      AtenTensorHandle* retN   (written by the op)
  tensor_list     const AtenTensorHandle*, int64_t <name>_len_
  opt_tensor_list const AtenTensorHandle**, int64_t <name>_len_   (each element null: None)
  int64_list      const int64_t*, len      (also int32_list, real_list)
  opt_int64_list  const int64_t**, len     (null: None; also opt_real_list)
  opt_scalar_list const double**, len      (hand-written headers only: Scalar?[], each element
                                           a pointer, null: None)
  int64, int32, real                       int64_t, int32_t, double
  opt_int64, opt_int32, opt_real           pointers to those (null: None; opt_int32 also as
                                           const int32_t*, the hand-written ScalarType?)
  ret_int64, ret_int32, ret_real           pointers named retN
  string, opt_string                       const char*, const char**
  generator                                AtenGeneratorHandle*  (null: the default)

A list's length is the `int64_t <name>_len_` parameter right after it (the hand-written header
names some lengths after the schema's argument, not the C one: stride_args, stride_len_). The
one C type that means two things is `const double**` with a length: float[]? (a pointer to
the array, null: None) in the generated headers, Scalar?[] in the hand-written ones; `load`
tells them apart by folder (the generated headers live in .../generated/).
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

_DECL = re.compile(r"AOTI_TORCH_EXPORT\s+AOTITorchError\s+(aoti_torch_\w+)\s*\(([^)]*)\)\s*;")

_LISTS = {"const int64_t*": "int64_list", "const int32_t*": "int32_list", "const double*": "real_list",
          "const AtenTensorHandle*": "tensor_list", "const int64_t**": "opt_int64_list",
          "const double**": "opt_real_list", "const AtenTensorHandle**": "opt_tensor_list"}
_RESULTS = {"AtenTensorHandle*": "ret_tensor", "int64_t*": "ret_int64", "int32_t*": "ret_int32",
            "double*": "ret_real"}
_SINGLE = {"AtenTensorHandle": "tensor", "AtenTensorHandle*": "opt_tensor", "int64_t": "int64",
           "int32_t": "int32", "double": "real", "int64_t*": "opt_int64", "int32_t*": "opt_int32",
           "double*": "opt_real", "const int32_t*": "opt_int32", "const char*": "string", "const char**": "opt_string",
           "AtenGeneratorHandle*": "generator"}


@dataclass(frozen=True)
class Param:
    kind: str       # one of the kinds above
    name: str
    ctypes: tuple   # the C types it takes: one, or a pointer and its int64_t length


@dataclass(frozen=True)
class Op:
    name: str
    params: tuple[Param, ...]

    def c_types(self) -> list[str]:
        return [t for p in self.params for t in p.ctypes]


def torch_headers() -> Path:
    """The folder of torch's generated headers; the hand-written ones are in its parent's c/."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("torch is not installed (its C shim headers give the op signatures)")
    return Path(spec.submodule_search_locations[0]) / "include/torch/csrc/inductor/aoti_torch/generated"


def _split(text: str) -> list[tuple[str, str]]:
    out = []
    for p in (s.strip() for s in text.split(",")):
        if p and p != "void":
            m = re.match(r"(.*?)(\w+)$", p)
            out.append((re.sub(r"\s+", " ", m.group(1)).strip().replace(" *", "*"), m.group(2)))
    return out


def parse(text: str, handwritten: bool = False) -> tuple[list[Op], list[str]]:
    """The ops declared in a header's text, and the names of those with a parameter of a kind
    not listed above. `handwritten`: the text is one of torch's hand-written c/shim_*.h."""
    lists = {**_LISTS, "const double**": "opt_scalar_list"} if handwritten else _LISTS
    ops, unknown = [], []
    for m in _DECL.finditer(text):
        raw, params, i, ok = _split(m.group(2)), [], 0, True
        while i < len(raw):
            t, n = raw[i]
            nxt = raw[i + 1] if i + 1 < len(raw) else None
            if t in lists and nxt is not None and nxt[0] == "int64_t" and nxt[1].endswith("_len_"):
                params.append(Param(lists[t], n, (t, "int64_t")))
                i += 2
                continue
            kind = _RESULTS.get(t) if re.fullmatch(r"ret\d+", n) else None
            kind = kind or _SINGLE.get(t)
            if kind is None:
                ok = False
                break
            params.append(Param(kind, n, (t,)))
            i += 1
        if ok:
            ops.append(Op(m.group(1), tuple(params)))
        else:
            unknown.append(m.group(1))
    return ops, unknown


def load(paths: list[Path]) -> tuple[dict[str, Op], list[str]]:
    """Every op of the headers by name (the first declaration wins), and the unknown ones."""
    ops: dict[str, Op] = {}
    unknown: list[str] = []
    for path in paths:
        found, skipped = parse(Path(path).read_text(), handwritten=Path(path).parent.name != "generated")
        for op in found:
            ops.setdefault(op.name, op)
        unknown += skipped
    return ops, unknown
