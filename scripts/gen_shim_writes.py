#!/usr/bin/env python3
"""Which C arguments of each fallback-op shim aotrt serves the op may write:
src/package/shim_writes_table.inc (Note [Shim arguments a run writes] in
src/package/wrapper_source.cpp).

Reads the op rows of src/shim/ops/*.cpp (Note [Op rows]: each row's parameter list is the C
signature of torch's generated header) and torch's operator schemas
(torch._C._jit_get_all_schemas()), maps every C parameter to its schema argument by name
(torchgen names them after the schema: out arguments first in _out shims, a list as pointer and
`<name>_len_`, a Device as `<name>` and `<name>_index_`, an optional tensor as
AtenTensorHandle*, results last as `retN`), and writes one letter per C parameter:
  w  the schema marks the argument written (Tensor(a!), an out= argument);
  r  a tensor (or tensor list) the op only reads;
  m  anything else: a tensor a result aliases (a view of it may be written later), a scalar,
     a list's length, a result pointer. The parser treats it as maybe written.
A row whose name is no aten schema's is looked up in BY_NAME/BY_POSITION (torch's hand-written
mkldnn shims, named after the op they run); any other (aotrt's own ops, the oneDNN quantized
shims) is left out: the parser keeps every argument of it maybe written. A row that names a schema but whose
parameters do not map onto it stops the script (exit status 1), so no guess reaches the table.

    python3 scripts/gen_shim_writes.py            # rewrite the table
    python3 scripts/gen_shim_writes.py --check    # exit 1 when the committed table differs
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ops_coverage  # noqa: E402  (the op-row reader: one parser of the rows)

REPO = ops_coverage.REPO
TABLE = REPO / "src" / "package" / "shim_writes_table.inc"
PREFIXES = ("aoti_torch_cpu_", "aoti_torch_cuda_", "aoti_torch_aten_", "aoti_torch_")

# Hand-written shims of torch's c/shim_mkldnn.h and c/shim_cpu.h, named after no aten schema:
# the op each runs is torch/_inductor/mkldnn_ir.py's op_overload beside its cpp_kernel_name.
# BY_NAME's C parameters are named after the schema's arguments, as torchgen's are.
BY_NAME = {
    "mkldnn__convolution_pointwise": "mkldnn::_convolution_pointwise",
    "mkldnn__convolution_pointwise_binary": "mkldnn::_convolution_pointwise.binary",
    "mkldnn__convolution_pointwise_binary_": "mkldnn::_convolution_pointwise_.binary",
    "mkldnn__convolution_transpose_pointwise": "mkldnn::_convolution_transpose_pointwise",
    "_linear_pointwise": "mkldnn::_linear_pointwise",
    "_linear_pointwise_binary": "mkldnn::_linear_pointwise.binary",
}
# BY_POSITION's are the schema's in order but named otherwise: mapped by position, every
# parameter's tensor-ness checked. (The oneDNN quantized shims, _qconv*/_qlinear*, rename theirs
# and split lists: not mapped, so maybe written.)
BY_POSITION = {
    "_weight_int4pack_mm_cpu_tensor": "quantized::int4mm_packed_weight_cpu",
    "_mkl_linear": "mkl::_mkl_linear",
}

# Arguments an op writes though its schema does not say so (torch's batch-norm schemas leave
# running_mean/running_var unannotated; training mode updates them in place). Forced to 'w'
# when a served op has them.
UNDECLARED_WRITES = {
    "aten::native_batch_norm": {"running_mean", "running_var"},
    "aten::batch_norm": {"running_mean", "running_var"},
    "aten::_batch_norm_impl_index": {"running_mean", "running_var"},
    "aten::cudnn_batch_norm": {"running_mean", "running_var"},
    "aten::miopen_batch_norm": {"running_mean", "running_var"},
    "aten::instance_norm": {"running_mean", "running_var"},
}

# Arguments a written argument comes to alias though the schema does not say so: after
# set_.source_Tensor, self is a view of source, and a later write to self writes source.
UNDECLARED_ALIASES = {
    "aten::set_": {"source"},
}


class Unmapped(Exception):
    pass


def c_params(norm_params: str) -> list[tuple[str, str]]:
    """(type, name) of each parameter of a normalized parameter list."""
    out = []
    for p in norm_params.split(" , ") if norm_params else []:
        toks = p.split(" ")
        if not re.fullmatch(r"[A-Za-z_]\w*", toks[-1]):
            raise Unmapped(f"unnamed parameter {p!r}")
        out.append((" ".join(toks[:-1]), toks[-1]))
    return out


def schemas() -> dict[str, list]:
    """Unambiguous name (torchgen's: name, or name_overload) -> aten schemas of that name; and
    qualified name (aten::x.overload or aten::x) -> schema."""
    import torch  # noqa: PLC0415

    by_name: dict[str, list] = {}
    by_qual: dict[str, object] = {}
    for s in torch._C._jit_get_all_schemas():
        qual = s.name + (f".{s.overload_name}" if s.overload_name else "")
        by_qual[qual] = s
        ns, base = s.name.split("::", 1)
        if ns != "aten":
            continue
        key = f"{base}_{s.overload_name}" if s.overload_name else base
        by_name.setdefault(key, []).append(s)
    return by_name, by_qual


def is_tensor_type(t) -> bool:
    return "Tensor" in str(t)


def arg_access(schema, a) -> str:
    ai = a.alias_info
    if a.is_out or (ai is not None and ai.is_write) or a.name in UNDECLARED_WRITES.get(schema.name, ()):
        return "w"
    if not is_tensor_type(a.type) or a.name in UNDECLARED_ALIASES.get(schema.name, ()):
        return "m"
    return "m" if ai is not None else "r"


def check_c_type(ctype: str, a) -> None:
    """The C type must be what torchgen makes of the schema type, as far as tensors go."""
    t = str(a.type)
    handle = "AtenTensorHandle" in ctype
    if handle != is_tensor_type(t):
        raise Unmapped(f"parameter {a.name}: C type {ctype!r} for schema type {t}")
    if not handle:
        return
    stars = ctype.count("*")
    # c/shim.h's aoti_torch_index_put_out takes Tensor?[] as an array of (nullable) handles.
    want = {"Tensor": {0}, "Optional[Tensor]": {1}, "List[Tensor]": {1},
            "List[Optional[Tensor]]": {1, 2}}.get(t)
    if want is None or stars not in want:
        raise Unmapped(f"parameter {a.name}: C type {ctype!r} for schema type {t}")


def map_by_name(schema, params: list[tuple[str, str]]) -> str:
    args = {a.name: a for a in schema.arguments}
    used: set[str] = set()
    access = []
    prev = None  # the schema argument of the previous C parameter
    for ctype, name in params:
        a = args.get(name)
        if a is not None and name not in used:
            check_c_type(ctype, a)
            access.append(arg_access(schema, a))
            used.add(name)
            prev = a
            continue
        if prev is not None and name in (f"{prev.name}_len_", f"num_{prev.name}") and \
                str(prev.type).startswith(("List[", "Optional[List[")) and "AtenTensorHandle" not in ctype:
            access.append("m")
            prev = None
            continue
        if prev is not None and name == f"{prev.name}_index_" and "Device" in str(prev.type):
            access.append("m")
            prev = None
            continue
        if re.fullmatch(r"ret\d+", name) and ctype.endswith("*"):
            idx = int(name[3:])
            if idx >= len(schema.returns):
                raise Unmapped(f"{name}: the schema has {len(schema.returns)} results")
            access.append("m")
            prev = None
            continue
        raise Unmapped(f"C parameter {ctype} {name} is no argument of {schema}")
    for a in schema.arguments:
        if a.name not in used and not a.has_default_value() and not a.is_out:
            raise Unmapped(f"schema argument {a.name} of {schema} has no C parameter")
    return "".join(access)


def map_by_position(schema, params: list[tuple[str, str]]) -> str:
    args = list(schema.arguments)
    rets = [(t, n) for t, n in params if re.fullmatch(r"ret\d+", n)]
    ins = params[:len(params) - len(rets)]
    if len(ins) != len(args) or len(rets) != len(schema.returns):
        raise Unmapped(f"{len(params)} C parameters for {schema}")
    out = []
    for (ctype, _), a in zip(ins, args):
        check_c_type(ctype, a)
        out.append(arg_access(schema, a))
    return "".join(out) + "m" * len(rets)


def resolve(op: str, params, generic: bool, by_name, by_qual):
    """The schema a row's op name stands for, or None when no aten schema has that name."""
    if op in BY_POSITION:
        return by_qual[BY_POSITION[op]], True
    if op in BY_NAME:
        return by_qual[BY_NAME[op]], False
    # c/shim.h's names are not torchgen's (aoti_torch_scatter_reduce_out is scatter_reduce.two_out,
    # not scatter.reduce_out): only the search by arguments below names their schema.
    cands = None if generic else by_name.get(op)
    if cands is None and not generic:
        m = re.fullmatch(r"(\w+)_v(\d+)", op)  # torchgen's versioned name of a changed signature
        if m and m.group(1) in by_name:
            cands = by_name[m.group(1)]
    if cands is None and generic and op.endswith("_out"):
        # c/shim.h's device-generic aoti_torch_scatter_out etc.: the one out= overload whose
        # arguments the C parameters name.
        base = op[:-4]
        cands = [s for key, ss in by_name.items() for s in ss
                 if s.name == f"aten::{base}" and s.overload_name.endswith("out")]
        fits = []
        for s in cands:
            try:
                map_by_name(s, params)
                fits.append(s)
            except Unmapped:
                pass
        if len(fits) > 1:
            raise Unmapped(f"{len(fits)} out= overloads of {base} fit: {[str(s) for s in fits]}")
        cands = fits or None
    if cands is None:
        return None, False
    if len(cands) != 1:
        raise Unmapped(f"{len(cands)} schemas named {op}")
    return cands[0], False


def build() -> list[tuple[str, str, str]]:
    rows = ops_coverage.parse_rows(REPO / "src" / "shim" / "ops")
    by_name, by_qual = schemas()
    out, errors = [], []
    for full, row in sorted(rows.items()):
        prefix = next(p for p in PREFIXES if full.startswith(p))
        op = full[len(prefix):]
        try:
            params = c_params(row["params"])
            schema, positional = resolve(op, params, prefix == "aoti_torch_", by_name, by_qual)
            if schema is None and row["alias_of"]:
                target = row["alias_of"]
                tprefix = next(p for p in PREFIXES if target.startswith(p))
                schema, positional = resolve(target[len(tprefix):], params, tprefix == "aoti_torch_",
                                             by_name, by_qual)
            if schema is None:
                continue
            access = (map_by_position if positional else map_by_name)(schema, params)
            qual = schema.name + (f".{schema.overload_name}" if schema.overload_name else "")
            out.append((full, access, qual))
        except Unmapped as e:
            errors.append(f"{row['file']}: {full}: {e}")
    if errors:
        raise SystemExit("gen_shim_writes: rows that name a schema but do not map onto it:\n  " +
                         "\n  ".join(errors))
    return out


def render(entries: list[tuple[str, str, str]]) -> str:
    lines = [
        "// Generated by scripts/gen_shim_writes.py from the installed torch's operator schemas and the",
        "// op rows of src/shim/ops: do not edit. One letter per C parameter: w written, r read, m other",
        "// (Note [Shim arguments a run writes] in src/package/wrapper_source.cpp). Sorted by name.",
    ]
    for full, access, qual in entries:
        lines.append(f'{{"{full}", "{access}"}},  // {qual}')
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the committed table differs")
    a = ap.parse_args()
    text = render(build())
    if a.check:
        old = TABLE.read_text() if TABLE.exists() else ""
        if old != text:
            import difflib  # noqa: PLC0415

            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                                       str(TABLE.relative_to(REPO)), "regenerated"))
            print(f"{TABLE.relative_to(REPO)} is stale: run python3 scripts/gen_shim_writes.py")
            return 1
        return 0
    TABLE.write_text(text)
    print(f"wrote {TABLE.relative_to(REPO)}: {text.count(chr(10)) - 3} entries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
