"""PyTorch's OpInfo database as a peer suite for aotrt.

For each op of `torch.testing._internal.common_methods_invocations.op_db`, each dtype it
supports on the device (float32 first) and its first sample input(s): a one-op module is
exported and AOTI-compiled (tests/opinfo/compile.py), run through `aotrt run` on .npy inputs,
and compared with eager PyTorch with torch.testing.assert_close's default tolerances for the
output's dtype. Each case ends as one of

  ok               every output matches eager (or, with a note in the message, differs only in
                   the indices of tied values, Note [Indices of tied values], or in the signs of
                   singular vectors and eigenvectors, Note [Signs of singular vectors and
                   eigenvectors], or is a bf16/fp16
                   output closer to float64 than eager's, Note [Low-precision reference])
  unchecked        the op's values are random or uninitialized (RNG ops, empty*, ops op_db
                   reseeds: reseeded_random): only the outputs' shapes and dtypes were
                   compared, and they match
  wrong            an output differs (max error given); when libtorch's own AOTI loader gives
                   the same values as aotrt, the case is `differs-in-torch` instead
  differs-in-torch aotrt matches torch's own AOTI loader on the same package, and both
                   differ from eager: inductor's code, not aotrt, is off
  refused          aotrt would not load or run it (its message; the MISSING shims if that is why)
  not-run          in tables made before 2026-12-01 14:50 UTC: the case needed aotrt's proxy
                   executor and shared a package with proxy ops aotrt refuses. Such a case is
                   now compiled again alone, and its outcome is its own
  crash            aotrt died on a signal
  compile-error    AOTInductor (or g++) failed on a package that torch.export made
  does-not-export  torch.export itself fails (the exception's first line)
  no-tensor-output / sample-error   the op returns no tensor / its sample or eager call fails

Usage:
  python3 -m tests.opinfo.sweep --device cpu --out build/opinfo [--dtypes float32,int64]
      [--ops cumsum,sort | --slice ci|dtypes|all] [--samples 1] [--batch 16] [--workers 2]
      [--table docs/opinfo/cpu-torch2.13.md] [--missing /work/wt/opinfo-missing.txt]

Writes OUT/results.json (every case) and OUT/table.md (one row per op and dtype). Packages
are cached under --cache (default build/opinfo-cache) keyed by torch version, op, sample
index, dtype, device and the harness's hash, so a re-run only recompiles what changed; the
aotrt runs and comparisons are always redone. See Note [Batched packages] in compile.py.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import math
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

OUTCOMES = ["ok", "unchecked", "wrong", "differs-in-torch", "refused", "not-run", "crash",
            "compile-error", "does-not-export", "no-tensor-output", "sample-error"]
# Which outcome a row shows when its samples disagree: the first of these present.
_ROW_ORDER = ["crash", "wrong", "refused", "compile-error", "differs-in-torch", "does-not-export",
              "sample-error", "no-tensor-output", "unchecked", "ok"]
_MISSING_LINE = re.compile(r"^\s+(aoti_\w+)\s+MISSING\s*$", re.M)
_AOTI_NAME = re.compile(r"\baoti_torch_\w+")
# The ops a package calls, as opposed to the tensor ABI every package uses.
_OP_SHIM = re.compile(r"^aoti_torch_(cpu|cuda|aten)_|^aoti_torch_proxy_executor|^aoti_torch_index_put_out$"
                      r"|^aoti_torch_view_dtype$|^aoti_torch__scaled_dot")


def op_shims(names: list[str], missing: set[str]) -> list[str]:
    return [n for n in names if _OP_SHIM.search(n) or n in missing]


# --------------------------------------------------------------------------------------
# aotrt
# --------------------------------------------------------------------------------------


class Aotrt:
    def __init__(self, binary: Path, timeout: float) -> None:
        self.binary = binary
        self.timeout = timeout

    def provided(self) -> set[str]:
        """aoti_* functions the aotrt binary and the library beside it define."""
        names: set[str] = set()
        for f in (self.binary, self.binary.parent / "libaotrt.so"):
            if f.exists():
                out = subprocess.run(["nm", "-D", "--defined-only", str(f)], capture_output=True, text=True).stdout
                names |= {ln.split()[-1] for ln in out.splitlines() if " aoti_" in ln}
        return names

    def missing(self, package: str) -> set[str]:
        proc = subprocess.run([str(self.binary), "info", package], capture_output=True, text=True,
                              timeout=self.timeout)
        return set(_MISSING_LINE.findall(proc.stdout))

    def run(self, package: str, inputs: list[str], out_dir: Path) -> tuple[int, str]:
        """(return code, aotrt's error message); a negative code is the signal that killed it.
        inputs: `--input` arguments (FILE or FILE:DTYPE)."""
        shutil.rmtree(out_dir, ignore_errors=True)
        out_dir.mkdir(parents=True)
        cmd = [str(self.binary), "run", package, "--output-dir", str(out_dir)]
        for p in inputs:
            cmd += ["--input", p]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            return 124, f"aotrt run did not finish within {self.timeout:.0f} s"
        errors = [ln for ln in proc.stderr.splitlines() if "error" in ln]
        return proc.returncode, (errors[-1] if errors else proc.stderr.strip()[-400:])


# --------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------


def _load_output(path: Path, like):
    import numpy as np
    import torch

    if not path.exists():
        return None
    t = torch.from_numpy(np.load(path))
    # numpy has no bfloat16 or complex32: aotrt writes them as float32 and complex64,
    # which hold every value exactly
    if like.dtype == torch.bfloat16 and t.dtype == torch.float32:
        t = t.to(torch.bfloat16)
    if like.dtype == torch.complex32 and t.dtype == torch.complex64:
        t = t.to(torch.complex32)
    return t


def _max_error(a, e) -> str:
    import torch

    if a.numel() == 0:
        return "empty"
    if a.dtype == torch.bool or e.dtype == torch.bool:
        return f"{int((a != e).sum())} of {a.numel()} elements differ"
    d = (a.to(torch.complex128 if a.is_complex() else torch.float64)
         - e.to(torch.complex128 if e.is_complex() else torch.float64)).abs()
    both_nan = torch.isnan(d) & (torch.isnan(torch.as_tensor(a).abs().double())
                                 == torch.isnan(torch.as_tensor(e).abs().double()))
    d = torch.where(both_nan, torch.zeros_like(d), d)
    return f"max abs error {float(torch.nan_to_num(d, nan=float('inf')).max()):.3g}"


def compare(actual: list, expected: list, random: bool,
            tol: tuple[float, float, str] | None = None) -> tuple[str, str]:
    """(outcome, message) of aotrt's outputs against eager's (equal_nan). tol: (rtol, atol, where
    from) for outputs of the case's own floating dtype (cases.tolerance: op_db's override or
    assert_close's default); other outputs (indices, masks, a float32 result of an integer op)
    get assert_close's default for their dtype, exact for integers and bool."""
    import torch
    from torch.testing._comparison import default_tolerances

    for j, (a, e) in enumerate(zip(actual, expected)):
        if a is None:
            return "wrong", f"output {j}: aotrt returned None, eager a {e.dtype} tensor"
        if tuple(a.shape) != tuple(e.shape):
            return "wrong", f"output {j}: shape {list(a.shape)}, eager {list(e.shape)}"
        if a.dtype != e.dtype:
            return "wrong", f"output {j}: dtype {a.dtype}, eager {e.dtype}"
        if random:
            continue
        rtol, atol = default_tolerances(e)
        where = "default"
        if tol is not None and tol[2] != "default" and (e.is_floating_point() or e.is_complex()):
            rtol, atol, where = tol
        try:
            torch.testing.assert_close(a, e, rtol=rtol, atol=atol, equal_nan=True)
        except AssertionError:
            return "wrong", (f"output {j} ({str(e.dtype).removeprefix('torch.')}): {_max_error(a, e)} "
                             f"(rtol {rtol:g}, atol {atol:g}, {where})")
    if random:
        return "unchecked", "random or uninitialized values: shapes and dtypes compared, values not"
    return "ok", ""


_SHIM_FAILURE = "; the last aotrt shim failure on this thread: "


def refusal_text(message: str) -> str:
    """aotrt's error with the shim's own reason first: a failed call's message ends with the
    shim's refusal, which a table cell cut at 300 characters would lose behind the paths."""
    if _SHIM_FAILURE not in message:
        return message
    head, reason = message.split(_SHIM_FAILURE, 1)
    call = re.search(r"(aoti_\w+)\(", head)
    return f"{reason.strip()} (the model's call to {call[1] if call else 'a shim'} failed)"


def reseeded_random(rec: dict[str, Any]) -> bool:
    """Whether the values of an op that op_db wraps in `wrapper_set_seed` depend on the RNG.
    That wrapper reseeds with 42 on every call, so eager gives the same values whatever the
    seed and the case's own two-seed test (compile._prepare_one) takes it as deterministic,
    while the compiled op draws from inductor's or aotrt's generator (uniform, normal_,
    rrelu, dropout, ...). Rerun here with the wrapper bypassed, under two seeds; ops that use
    it with no randomness (dropout_p=0 attention, item) stay checked."""
    import torch
    import torch.testing._internal.common_methods_invocations as cmi

    from tests.opinfo import cases

    op = cases.op_table()[rec["op"]]
    if "wrapper_set_seed" not in getattr(getattr(op.op, "__code__", None), "co_names", ()):
        return False
    sample = cases.samples(rec["op"], rec["dtype"], rec["device"], rec["sample"] + 1)[rec["sample"]]
    module = cases.one_op(rec["op"], sample)
    inputs = module.example_inputs()
    wrapped = cmi.wrapper_set_seed
    cmi.wrapper_set_seed = lambda fn, *args, **kwargs: fn(*args, **kwargs)
    try:
        outs = []
        for seed in (0, 1):
            torch.manual_seed(seed)
            with torch.no_grad():
                outs.append([t.clone() for t in module(*[x.clone() for x in inputs])])
    except Exception:  # noqa: BLE001 - an op that fails so is left to the ordinary comparison
        return False
    finally:
        cmi.wrapper_set_seed = wrapped
    return not all(a.shape == b.shape and _close(a, b) for a, b in zip(*outs))


# Note [Low-precision reference]
# In bf16 and fp16 two correct kernels differ by an ulp wherever they round at different
# steps (ATen's bf16 conv_transpose rounds partial sums to bf16; aotrt's oneDNN call
# accumulates in float32): at |x| ~ 200 a bf16 ulp is 1, far outside rtol 1.6e-2 for the
# small elements of the same tensor. As inductor's own accuracy check does (torch._dynamo's
# `same` with an fp64 reference), a low-precision output that fails the comparison with eager
# is accepted when it is no farther from the op computed in float64 on the same inputs than
# eager's output is (max abs error over the tensor); the row's message gives both errors.
# matrix_exp in float32 is judged the same way: past its Taylor polynomial's bound it squares
# the result up to ~5 times, which multiplies one float32 rounding of a gemm (MKL's blocking
# for eager, OpenBLAS's for aotrt) into relative differences of 1e-4 on the small elements
# of a 1e5-sized result, while both stay as close to the float64 exponential.
# The special functions are judged the same way in float32: aotrt evaluates them in double
# and rounds once (Note [Special function math] in src/ops/special_math.h), ATen's CUDA
# kernels in float, so eager's own float32 error (an ulp or two, ~1e-6 relative, beyond
# rtol 1.3e-6 where the result is large: the H200 saw polygamma differ by 0.0098 at |x| ~
# 7500) is what separates them; aotrt's result must be as close to float64 as eager's.
_LOW_PRECISION = ("bfloat16", "float16")
_AMPLIFYING = {"matrix_exp": ("float32",)}
_SPECIAL_FUNCTIONS = ("digamma", "polygamma.", "special.polygamma.", "igamma", "igammac",
                      "special.zeta", "special.airy_ai", "special.i0e", "special.i1e",
                      "special.ndtri", "special.modified_bessel_", "special.scaled_modified_bessel_",
                      "special.spherical_bessel_j0", "special.chebyshev_polynomial_",
                      "special.shifted_chebyshev_polynomial_", "special.hermite_polynomial_",
                      "special.laguerre_polynomial_", "special.legendre_polynomial_")


def _judged_against_float64(op: str, dtype: str) -> bool:
    if dtype in _LOW_PRECISION or dtype in _AMPLIFYING.get(op, ()):
        return True
    return dtype == "float32" and any(op == p or (p.endswith(("_", ".")) and op.startswith(p))
                                      for p in _SPECIAL_FUNCTIONS)


def closer_to_float64(rec: dict[str, Any], actual: list, expected: list,
                      why: list[str] | None = None) -> str | None:
    """The note for a low-precision case whose every failing output is at least as close to a
    float64 computation as eager's (Note [Low-precision reference]); else None, with the two
    errors appended to `why` when aotrt's output is the farther one."""
    import torch
    from torch.utils import _pytree as pytree

    from tests.opinfo import cases

    low = _judged_against_float64(rec["op"], rec["dtype"])
    if not low or rec.get("random"):
        return None
    sample = cases.samples(rec["op"], rec["dtype"], rec["device"], rec["sample"] + 1)[rec["sample"]]
    up = lambda x: x.double() if isinstance(x, torch.Tensor) and x.dtype == cases.DTYPES[rec["dtype"]] else x  # noqa: E731
    try:
        with torch.no_grad():
            ref = [t for t in pytree.tree_leaves(cases.op_table()[rec["op"]].op(
                up(sample.input), *pytree.tree_map(up, list(sample.args)), **pytree.tree_map(up, dict(sample.kwargs))))
                if isinstance(t, torch.Tensor)]
    except Exception:  # noqa: BLE001 - no float64 reference: the comparison with eager stands
        return None
    # On CUDA the reference is computed on the device; aotrt's and eager's outputs are here.
    ref = [t.cpu() for t in ref]
    expected = [t.cpu() if isinstance(t, torch.Tensor) else t for t in expected]
    if len(ref) != len(expected):
        return None
    notes = []
    # The case's dtype, or its complex counterpart (an FFT of float16 gives complex32).
    low_dtypes = {cases.DTYPES[rec["dtype"]], {torch.float16: torch.complex32}.get(cases.DTYPES[rec["dtype"]])}
    wide = lambda t: t.to(torch.complex128) if t.is_complex() else t.double()  # noqa: E731
    for j, (a, e, r) in enumerate(zip(actual, expected, ref)):
        if a is not None and a.shape == e.shape and a.dtype == e.dtype and _close(a, e):
            continue
        if a is None or a.shape != e.shape or e.dtype not in low_dtypes or r.shape != e.shape:
            return None
        err = lambda t: float(torch.nan_to_num((wide(t) - wide(r)).abs(), nan=float("inf")).max())  # noqa: E731
        ours, eager = err(a), err(e)
        if not ours <= eager:
            if why is not None:
                why.append(f"farther from float64 than eager (output {j}: max error {ours:.3g}, eager's {eager:.3g})")
            return None
        notes.append(f"output {j} differs from eager by {float((wide(a) - wide(e)).abs().max()):.3g} and is "
                     f"closer to float64 (max error {ours:.3g}, eager's {eager:.3g})")
    return "; ".join(notes) + " (Note [Low-precision reference] in tests/opinfo/sweep.py)" if notes else None


# Note [Indices of tied values]
# ATen leaves unspecified which of several equal elements an unstable sort puts first, and
# which index topk, kthvalue, median and mode return for a tie ("the order of equivalent
# elements is not guaranteed"; ATen's own CPU kernels change it with the dtype and the
# thread count). In bf16, int and bool samples ties are the rule (8000 bf16 values hold
# ~2000 distinct ones), so for these ops an index output that differs from eager's is
# accepted when it selects the same values along the op's dim (input.gather(dim, idx) equals
# eager's selection, NaN equal to NaN), and no index repeats along dim (a permutation for
# sort and argsort). Everything else stays exact; cummax/cummin are not here (ATen returns the
# last of equal values: specified).
# op -> (position of `dim` among the sample's args, its default, position of `keepdim`)
_TIED_INDEX_OPS = {"sort": (0, -1, None), "argsort": (0, -1, None), "topk": (1, -1, None),
                   "kthvalue": (1, -1, 2), "median": (0, None, 1), "nanmedian": (0, None, 1),
                   "mode": (0, -1, 1)}


def _sample_dim(op: str, sample) -> tuple[int | None, bool]:
    """(dim, keepdim) of a sample of one of _TIED_INDEX_OPS."""
    pos, default, keep_pos = _TIED_INDEX_OPS[op]
    args, kwargs = list(sample.args), dict(sample.kwargs)
    dim = kwargs.get("dim", args[pos] if len(args) > pos else default)
    keepdim = kwargs.get("keepdim", args[keep_pos] if keep_pos is not None and len(args) > keep_pos else False)
    return dim, bool(keepdim)


def tied_indices_agree(rec: dict[str, Any], actual: list, expected: list) -> str | None:
    """When every output that differs from eager is an index output of one of _TIED_INDEX_OPS
    that picks the same values as eager's (Note [Indices of tied values]): the note for the
    record; else None."""
    import torch

    from tests.opinfo import cases

    op = rec["op"]
    if op not in _TIED_INDEX_OPS:
        return None
    sample = cases.samples(op, rec["dtype"], rec["device"], rec["sample"] + 1)[rec["sample"]]
    x = sample.input
    dim, keepdim = _sample_dim(op, sample)
    if not isinstance(x, torch.Tensor) or dim is None or x.dim() == 0:
        return None
    x = x.cpu()  # the sample is made on the case's device; aotrt's outputs come back from .npy
    dim = dim % x.dim()
    tied = 0
    for a, e in zip(actual, expected):
        a, e = (t.cpu() if isinstance(t, torch.Tensor) else t for t in (a, e))
        if a is not None and a.shape == e.shape and a.dtype == e.dtype and _close(a, e):
            continue
        if a is None or e.dtype != torch.int64 or a.shape != e.shape:
            return None
        ai, ei = (a, e) if keepdim or a.dim() == x.dim() else (a.unsqueeze(dim), e.unsqueeze(dim))
        if ai.dim() != x.dim() or bool(((ai < 0) | (ai >= x.shape[dim])).any()):
            return None
        if not _close(x.gather(dim, ai), x.gather(dim, ei)):
            return None
        s = ai.sort(dim).values
        if s.shape[dim] > 1 and bool((s.narrow(dim, 1, s.shape[dim] - 1) == s.narrow(dim, 0, s.shape[dim] - 1)).any()):
            return None  # an index repeats
        tied += int((a != e).sum())
    return (f"{tied} indices of tied values differ from eager's and select the same values "
            "(Note [Indices of tied values] in tests/opinfo/sweep.py)") if tied else None


# Note [Modes of tied counts]
# Which of several equally frequent values torch.mode returns is not specified, and ATen's
# two kernels disagree: the CPU's takes the smallest (a sorted scan keeping the first longest
# run), the CUDA one the value its block reduction of run lengths ends on (ties keep the
# left operand, so it depends on the tree: not the smallest in general). aotrt's CUDA kernel
# takes the smallest, as the CPU does. So a mode output that differs from eager's is accepted
# when, along the reduced dim, aotrt's value occurs exactly as often as eager's (both are
# modes) and aotrt's index selects aotrt's value; every other slice stays exact.


def mode_ties_agree(rec: dict[str, Any], actual: list, expected: list) -> str | None:
    """The note for a mode case whose differing values are all modes of equal count with
    indices that select them (Note [Modes of tied counts]); else None."""
    import torch

    from tests.opinfo import cases

    if rec["op"] != "mode" or len(actual) != 2 or len(expected) != 2 or None in actual:
        return None
    sample = cases.samples("mode", rec["dtype"], rec["device"], rec["sample"] + 1)[rec["sample"]]
    x = sample.input
    dim, keepdim = _sample_dim("mode", sample)
    if not isinstance(x, torch.Tensor) or x.dim() == 0 or x.numel() == 0:
        return None
    x = x.cpu()
    dim = dim % x.dim()
    (av, ai), (ev, ei) = ([t.cpu() for t in actual], [t.cpu() for t in expected])
    if av.shape != ev.shape or ai.shape != ei.shape or av.dtype != ev.dtype:
        return None
    if not keepdim:
        av, ai, ev, ei = (t.unsqueeze(dim) for t in (av, ai, ev, ei))
    if bool(((ai < 0) | (ai >= x.shape[dim])).any()) or not torch.equal(x.gather(dim, ai), av):
        return None  # an index that does not select the value returned
    count = lambda v: (x == v).sum(dim, keepdim=True)  # noqa: E731  (v broadcast along dim)
    if not torch.equal(count(av), count(ev)):
        return None  # aotrt's value is less frequent than eager's: not a mode
    differ = int((av != ev).sum())
    return (f"{differ} mode values differ from eager's and occur as often along the dim (ties; "
            "Note [Modes of tied counts] in tests/opinfo/sweep.py)") if differ else None


# Note [Signs of singular vectors and eigenvectors]
# A singular vector or an eigenvector is defined up to a unit factor: a sign for real ones,
# a phase for complex ones (torch's docs: "the returned eigenvectors are normalized to have
# norm 1 ... only unique up to a sign/phase"). Eager's LAPACK is MKL, aotrt's OpenBLAS, and
# they pick different signs for the same matrix (gesdd, syevd). For these ops an output of
# vectors that differs from eager's is accepted when multiplying each of aotrt's vectors by
# the unit factor that best aligns it with eager's (<ours, eager's> / |.|) makes it match
# eager's within the case's tolerance; every other output (singular values, eigenvalues)
# is compared as usual. For the SVD, U's column j and V's (Vh's row j) take the same factor,
# U's, so a pair whose signs do not agree with each other (a wrong A = U S Vh) is still
# wrong. Repeated singular values or eigenvalues leave a whole subspace free, which this
# does not accept: such a case stays wrong.
# op -> (output holding U-like columns, output paired with it or None, "row" when the paired
# output holds its vectors as rows (Vh), else "col")
_VECTOR_OPS = {"linalg.svd": (0, 2, "row"), "svd": (0, 2, "col"), "svd_lowrank": (0, 2, "col"),
               "pca_lowrank": (0, 2, "col"), "linalg.eigh": (1, None, ""), "linalg.eig": (1, None, "")}


def vectors_agree(rec: dict[str, Any], actual: list, expected: list) -> str | None:
    """When the outputs that differ from eager's are vectors of one of _VECTOR_OPS that match
    once each is multiplied by a unit factor (Note [Signs of singular vectors and
    eigenvectors]): the note for the record; else None."""
    import torch

    from tests.opinfo import cases

    spec = _VECTOR_OPS.get(rec["op"])
    if spec is None:
        return None
    cols, paired, how = spec
    actual = [t.cpu() if isinstance(t, torch.Tensor) else t for t in actual]
    expected = [t.cpu() if isinstance(t, torch.Tensor) else t for t in expected]
    if len(actual) <= max(cols, paired or 0) or actual[cols] is None or actual[cols].dim() < 2:
        return None
    if paired is not None and (actual[paired] is None or actual[paired].dim() < 2):
        return None

    def factors(ours, ref, dim):
        dot = (ours.conj() * ref).sum(dim, keepdim=True)
        mag = dot.abs()
        one = torch.ones((), dtype=dot.dtype)
        return torch.where(mag > 0, dot / torch.where(mag > 0, mag, one), one)

    fixed = list(actual)
    u, eu = actual[cols], expected[cols]
    if u.shape != eu.shape:
        return None
    f = factors(u, eu, -2)  # [..., 1, cols]
    fixed[cols] = u * f
    if paired is not None:
        v, ev = actual[paired], expected[paired]
        if v.shape != ev.shape:
            return None
        vt, evt = (v.mT, ev.mT) if how == "row" else (v, ev)  # vectors as columns
        k = min(vt.shape[-1], f.shape[-1])
        own = factors(vt, evt, -2)
        g = torch.cat([f[..., :k], own[..., k:]], -1)
        fixed[paired] = (vt * g).mT if how == "row" else vt * g
    tol = cases.tolerance(rec["op"], rec["dtype"], rec["device"])
    outcome, _ = compare(fixed, expected, False, tol)
    if outcome != "ok":
        return None
    flipped = int((f.real < 0).sum()) if not f.is_complex() else int((f != 1).sum())
    return (f"{flipped} vector(s) match eager's once multiplied by a unit factor (Note [Signs "
            "of singular vectors and eigenvectors] in tests/opinfo/sweep.py)")


def _close(a, e) -> bool:
    import torch

    try:
        torch.testing.assert_close(a, e, equal_nan=True)
        return True
    except (AssertionError, TypeError, ValueError):
        return False


# --------------------------------------------------------------------------------------
# The sweep
# --------------------------------------------------------------------------------------


def _batch_key(recs: list[dict[str, Any]], harness: str) -> str:
    h = hashlib.sha256(harness.encode())
    for k in sorted(r["key"] for r in recs):
        h.update(k.encode())
    return h.hexdigest()[:20]


def _first_groups(recs: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    """Buckets by a hash of the case key: adding or removing an op changes only its own
    bucket, so a re-run keeps the other packages it has."""
    n = max(1, math.ceil(len(recs) / size))
    groups: dict[int, list] = {}
    for r in recs:
        groups.setdefault(int(r["key"], 16) % n, []).append(r)
    return [sorted(g, key=lambda r: r["key"]) for _, g in sorted(groups.items())]


def _chunks(recs: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    recs = sorted(recs, key=lambda r: r["key"])
    return [recs[i:i + size] for i in range(0, len(recs), size)]


class Sweep:
    def __init__(self, args: argparse.Namespace) -> None:
        from tests.opinfo import cases

        self.args = args
        self.device = args.device
        self.cache = Path(args.cache).resolve()
        self.out = Path(args.out).resolve()
        self.harness = cases.harness_hash()
        self.aotrt = Aotrt(Path(args.aotrt).resolve(), timeout=args.run_timeout)
        self.results: dict[str, dict[str, Any]] = {}  # case key -> record with outcome
        self.rows_order: list[tuple[str, str]] = []
        self.timing: dict[str, float] = {}
        self.started = time.time()
        self.compiled_batches = 0
        self.cached_batches = 0
        self.earlier: list[dict[str, Any]] = []  # metas of the earlier runs kept in --out
        self.kept: list[dict[str, Any]] = []  # their cases of dtypes this run does not sweep
        self.stopped = False  # SIGTERM ended the sweep before every case finished

    # -- bookkeeping ------------------------------------------------------------------

    def finish(self, rec: dict[str, Any], outcome: str, message: str = "", **extra) -> None:
        rec = dict(rec)
        rec.update(outcome=outcome, message=message, **extra)
        self.results[rec["key"]] = rec

    def write(self, final: bool = False) -> None:
        from tests.opinfo import report

        self.out.mkdir(parents=True, exist_ok=True)
        wall = round(time.time() - self.started, 1)
        meta = self.meta(wall)
        data = dict(meta=meta, earlier_runs=self.earlier, cases=self.kept + list(self.results.values()))
        (self.out / "results.json").write_text(json.dumps(data, indent=1, default=str))
        text = report.markdown(meta, data["cases"], self.earlier)
        (self.out / "table.md").write_text(text)
        if final and self.args.table:
            Path(self.args.table).parent.mkdir(parents=True, exist_ok=True)
            Path(self.args.table).write_text(text)
        if self.args.missing:
            report.write_missing(Path(self.args.missing), self.device, data["cases"])

    def meta(self, wall: float) -> dict[str, Any]:
        import torch

        return dict(torch=torch.__version__, device=self.device, dtypes=self.dtypes,
                    ops=len(self.ops), slice=self.args.slice, ops_given=bool(self.args.ops),
                    samples=self.args.samples, batch=self.args.batch,
                    workers=self.args.workers, harness=self.harness, wall_s=wall,
                    timing=self.timing, batches_compiled=self.compiled_batches,
                    batches_cached=self.cached_batches, stopped=self.stopped,
                    command="python3 -m tests.opinfo.sweep " + " ".join(self.args.argv))

    # -- phases -----------------------------------------------------------------------

    def select(self) -> None:
        from tests.opinfo import cases, ci_slice

        table = cases.op_table()
        if self.args.ops:
            names = [n.strip() for n in self.args.ops.split(",") if n.strip()]
            unknown = [n for n in names if n not in table]
            if unknown:
                raise SystemExit(f"not in op_db: {', '.join(unknown)}")
        elif self.args.slice == "ci":
            names = list(ci_slice.CI_OPS) + sorted({op for op, _ in ci_slice.CI_DTYPE_CASES} - set(ci_slice.CI_OPS))
        elif self.args.slice == "dtypes":
            names = list(ci_slice.DTYPE_OPS)
        else:
            names = sorted(table)
        if not self.args.ops:
            # A slice is written against the newest torch: ops an older op_db lacks (torch 2.11
            # has no nn.functional.linear_cross_entropy) are left out, and said so.
            absent = [n for n in names if n not in table]
            if absent:
                print(f"not in this torch's op_db, left out: {', '.join(absent)}", flush=True)
            names = [n for n in names if n in table]
        self.ops = names
        # The CI slice: every op in float32, CI_DTYPE_CASES in their dtypes; else every op in each.
        self.ops_by_dtype = {}
        if self.args.slice == "ci" and not self.args.ops:
            self.ops_by_dtype = {"float32": list(ci_slice.CI_OPS)}
            for op, dtype in ci_slice.CI_DTYPE_CASES:
                self.ops_by_dtype.setdefault(dtype, []).append(op)
        self.dtypes = ([d.strip() for d in self.args.dtypes.split(",")] if self.args.dtypes
                       else [d for d in cases.DEFAULT_DTYPES[self.device.split(":")[0]]
                             if not self.ops_by_dtype or d in self.ops_by_dtype])
        self.supported = {n: cases.supported_dtypes(table[n], self.device) for n in names}
        # An earlier run into the same --out (same device and torch) keeps its other dtypes,
        # so one table can be built a few dtypes per call.
        import torch

        prev = self.out / "results.json"
        if prev.exists():
            data = json.loads(prev.read_text())
            meta = data.get("meta", {})
            if meta.get("device") == self.device and meta.get("torch") == torch.__version__:
                self.kept = [c for c in data["cases"] if c["dtype"] not in self.dtypes]
                kept_dtypes = {c["dtype"] for c in self.kept}
                self.earlier = [m for m in data.get("earlier_runs", []) + [meta]
                                if set(m.get("dtypes", [])) & kept_dtypes]

    def run(self) -> int:
        from tests.opinfo import compile as comp

        os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(self.cache / "inductor"))
        t = time.time()
        self.select()
        self.timing["select_s"] = round(time.time() - t, 1)
        self.new_pool()
        # A sweep given a time box (`timeout 300 python3 -m tests.opinfo.sweep ...`, as on the
        # H200, whose device time is short) writes the cases that finished when SIGTERM comes;
        # the table then says it was stopped, and the cases left out were not run.
        signal.signal(signal.SIGTERM, _stop_on_signal)
        try:
            for group in ([self.dtypes] if self.ops_by_dtype else [[d] for d in self.dtypes]):
                self.sweep_dtypes(group)
                self.write()
        except _Stopped:
            self.stopped = True
        finally:
            self.pool.shutdown(cancel_futures=True)
        self.write(final=True)
        return 124 if self.stopped else 0

    def new_pool(self) -> None:
        from tests.opinfo import compile as comp

        self.pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=self.args.workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=comp.init_worker, initargs=(str(self.cache),))

    def pool_map(self, fn, tasks: list[dict[str, Any]]) -> list[Any]:
        """fn over tasks in the pool; a task whose worker raised or died gives the exception.
        A dead worker breaks the pool: a fresh one takes the tasks that had not finished."""
        results: dict[int, Any] = {}
        pending = list(range(len(tasks)))
        while pending:
            futures = {self.pool.submit(fn, tasks[i]): i for i in pending}
            broken = False
            for fut in concurrent.futures.as_completed(futures):
                i = futures[fut]
                try:
                    results[i] = fut.result()
                except concurrent.futures.process.BrokenProcessPool as e:
                    broken = True
                    results.setdefault(i, e)
                except Exception as e:  # noqa: BLE001 - reported as the task's result
                    results[i] = e
            if not broken:
                break
            # Which task killed the worker is unknown: retry the unfinished ones one at a time.
            self.pool.shutdown(cancel_futures=True)
            self.new_pool()
            dead = [i for i in pending if isinstance(results.get(i), concurrent.futures.process.BrokenProcessPool)]
            for i in dead:
                del results[i]
                try:
                    results[i] = self.pool.submit(fn, tasks[i]).result()
                except Exception as e:  # noqa: BLE001
                    results[i] = RuntimeError(f"the worker died ({type(e).__name__})")
                    self.pool.shutdown(cancel_futures=True)
                    self.new_pool()
            pending = []
        return [results[i] for i in range(len(tasks))]

    def sweep_dtypes(self, dtypes: list[str]) -> None:
        """Prepares the cases of these dtypes, then compiles and runs them in shared packages
        (one dtype at a time for a full sweep, so that its table is written as it finishes;
        the CI slice's few cases of each dtype all at once, so that they fill a package)."""
        from tests.opinfo import compile as comp

        dtype = "+".join(dtypes)
        names = [(n, d) for d in dtypes for n in self.ops_by_dtype.get(d, [] if self.ops_by_dtype else self.ops)
                 if d in self.supported[n]]
        t = time.time()
        tasks = [dict(op=n, dtype=d, device=self.device, samples=self.args.samples,
                      cache=str(self.cache), harness=self.harness, timeout=self.args.timeout)
                 for n, d in names]
        exported = []
        for task, recs in zip(tasks, self.pool_map(comp.prepare, tasks)):
            if isinstance(recs, BaseException):
                recs = [dict(op=task["op"], dtype=task["dtype"], device=self.device, sample=0, status="sample-error",
                             key=f"{task['op']}|{task['dtype']}|{self.device}", message=f"{type(recs).__name__}: {recs}")]
            for rec in recs:
                if rec["status"] == "exported":
                    exported.append(rec)
                else:
                    self.finish(rec, rec["status"], rec.get("message", ""))
        self.timing[f"{dtype}.prepare_s"] = round(time.time() - t, 1)
        self.log(f"{dtype}: {len(names)} ops, {len(exported)} cases export; compiling")
        self.write()
        t = time.time()
        groups = self.plan(_first_groups(exported, self.args.batch))
        self.timing[f"{dtype}.plan_s"] = round(time.time() - t, 1)
        t = time.time()
        rounds = 0
        while groups:
            rounds += 1
            groups = self.compile_round(groups)
            self.write()
        self.timing[f"{dtype}.compile_run_s"] = round(time.time() - t, 1)
        self.timing[f"{dtype}.rounds"] = rounds

    def plan(self, groups: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
        """Regroups cases into those aotrt serves and those it will refuse (a shim it lacks,
        the proxy executor), from each group's generated code (compile.plan_batch)."""
        from tests.opinfo import compile as comp

        if self.args.batch <= 1:
            return groups
        provided = self.aotrt.provided()
        tasks = [dict(key=_batch_key(g, self.harness), cases=g, device=self.device,
                      cache=str(self.cache), timeout=self.args.timeout + self.args.timeout_per_case * len(g))
                 for g in groups]
        served, refused = [], []
        for g, info in zip(groups, self.pool_map(comp.plan_batch, tasks)):
            if isinstance(info, BaseException) or info.get("status") != "planned":
                served += g  # the real compile says what is wrong
                continue
            for rec, shims in zip(g, info["case_shims"]):
                lacks = [n for n in shims if n not in provided or "proxy_executor" in n]
                (refused if lacks else served).append(rec)
        self.log(f"plan: {len(served)} cases aotrt serves, {len(refused)} it will refuse")
        return _first_groups(served, self.args.batch) + _chunks(refused, 3 * self.args.batch)

    def compile_round(self, groups: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
        """Compiles and runs each group; returns the next round's groups (see handle)."""
        from tests.opinfo import compile as comp

        futures = {}
        for g in groups:
            key = _batch_key(g, self.harness)
            cached = (self.cache / "batches" / key / "batch.json").exists()
            self.cached_batches += cached
            self.compiled_batches += not cached
            task = dict(key=key, cases=g, device=self.device, cache=str(self.cache),
                        timeout=self.args.timeout + self.args.timeout_per_case * len(g))
            futures[self.pool.submit(comp.compile_batch, task)] = ("compile", g)
        retry: list[dict[str, Any]] = []
        split: list[list[dict[str, Any]]] = []
        while futures:
            done, _ = concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_COMPLETED)
            for fut in done:
                kind, payload = futures.pop(fut)
                try:
                    result = fut.result()
                except Exception as e:  # noqa: BLE001 - a dead worker: the group is split
                    result = dict(status="compile-error", message=f"the worker died ({type(e).__name__})")
                    if getattr(self.pool, "_broken", False):
                        self.pool.shutdown(cancel_futures=False)
                        self.new_pool()
                if kind == "compile":
                    r, s, oracle_task = self.handle(result, payload)
                    retry += r
                    split += s
                    if oracle_task:
                        futures[self.pool.submit(comp.oracle, oracle_task)] = ("oracle", oracle_task)
                else:
                    self.judge_oracle(result if result.get("status") else dict(status="error", message=str(result)), payload)
        return split + _chunks(retry, self.args.batch)

    def handle(self, info: dict[str, Any], group: list[dict[str, Any]]):
        """Outcomes of one compiled batch. Returns (cases to compile again in a new batch,
        groups to split, an oracle task or None). A case is retried only when another case
        of its batch stopped the batch from running, so every round settles some case."""
        from tests.opinfo import cases

        status = info.get("status")
        if status != "compiled":
            if len(group) == 1:
                outcome = "does-not-export" if status == "export-error" else "compile-error"
                self.finish(group[0], outcome, info.get("message", status), batch=info.get("key"))
                return [], [], None
            half = len(group) // 2
            return [], [group[:half], group[half:]], None
        pkg = info["package"]
        missing = self.aotrt.missing(pkg)
        shims = [info["case_shims"][k] for k in range(len(group))]
        inputs = []
        for rec in group:
            d = self.cache / "cases" / rec["key"]
            inputs += [cases.input_npy_arg(d / f"input_{i}.npy", spec["dtype"]) if spec["dtype"] in cases.DTYPES
                       else str(d / f"input_{i}.npy") for i, spec in enumerate(rec["inputs"])]
        run_dir = self.out / "runs" / info["key"]
        rc, message = self.aotrt.run(pkg, inputs, run_dir)
        extra = lambda k: dict(batch=info["key"], batch_size=len(group),  # noqa: E731
                               shims=op_shims(shims[k], missing), imported_by_batch=len(info["imported"]))
        if rc != 0:
            named = missing | set(_AOTI_NAME.findall(message))
            blamed = [k for k in range(len(group)) if set(shims[k]) & named]
            if len(blamed) > 1 and not any(set(shims[k]) & missing for k in blamed):
                # A shim that failed at run time (a dtype it refuses), called by several cases
                # (mm in bf16 and in int64): which call failed is not known, so the batch is
                # split below rather than every caller blamed.
                blamed = []
            if rc < 0:
                message = f"aotrt died on signal {-rc}"
            else:
                message = refusal_text(message)
            if not blamed and missing and not any(set(sh) & missing for sh in shims):
                # Used outside every case's code: the RNG seeds inductor draws once per package
                # (aoti_torch_cpu_randint_low_out) for the cases with random kernels.
                blamed = [k for k in range(len(group)) if group[k].get("random")]
                for k in blamed:
                    shims[k] = sorted(set(shims[k]) | missing)
            if not blamed and "proxy executor does not serve" in message:
                # Which case an unserved proxy op belongs to is not known here: each case that
                # calls the proxy executor is compiled again in a package of its own, where the
                # refusal is its own; the others are retried together.
                proxy = [k for k in range(len(group)) if any("proxy_executor" in n for n in shims[k])]
                if len(proxy) == 1 and len(group) == 1:
                    self.finish(group[0], "refused", message, missing=sorted(missing), **extra(0))
                    return [], [], None
                if proxy:
                    return ([group[k] for k in range(len(group)) if k not in proxy],
                            [[group[k]] for k in proxy], None)
            if not blamed:
                if len(group) == 1:
                    self.finish(group[0], "crash" if rc < 0 else "refused", message,
                                missing=sorted(missing), **extra(0))
                    return [], [], None
                half = len(group) // 2
                return [], [group[:half], group[half:]], None
            for k in blamed:
                own = sorted(set(shims[k]) & missing)
                why = f"aotrt lacks {', '.join(own)}" if own and rc > 0 else message
                self.finish(group[k], "crash" if rc < 0 else "refused", why, missing=own, **extra(k))
            retry = [group[k] for k in range(len(group)) if k not in blamed]
            return retry, [], None
        import torch

        wrong = []
        for k, rec in enumerate(group):
            expected = torch.load(self.cache / "cases" / rec["key"] / "expected.pt")
            o0, o1 = info["ranges"][k]["outputs"]
            actual = [_load_output(run_dir / f"output_{j}.npy", e) for j, e in zip(range(o0, o1), expected)]
            tol = cases.tolerance(rec["op"], rec["dtype"], self.device)
            random = rec.get("random", False) or reseeded_random(rec)
            outcome, msg = compare(actual, expected, random, tol)
            if outcome == "wrong":
                why: list[str] = []
                note = (tied_indices_agree(rec, actual, expected) or mode_ties_agree(rec, actual, expected)
                        or vectors_agree(rec, actual, expected) or closer_to_float64(rec, actual, expected, why))
                if note:
                    outcome, msg = "ok", note
                elif why:
                    msg = f"{msg}; {why[0]}"
            self.finish(rec, outcome, msg, **extra(k))
            if outcome == "wrong":
                wrong.append(k)
                dump = os.environ.get("AOTRT_SWEEP_DUMP")
                if dump:  # a wrong case's outputs, to look at where it ran (the H200)
                    Path(dump).mkdir(parents=True, exist_ok=True)
                    torch.save(dict(rec=rec, actual=actual, expected=expected),
                               Path(dump) / f"{rec['key']}.pt")
        oracle = None
        if wrong and self.args.oracle:
            oracle = dict(key=info["key"], package=pkg, cases=group, device=self.device,
                          cache=str(self.cache), timeout=self.args.timeout, wrong=wrong,
                          run_dir=str(run_dir), ranges=info["ranges"])
        else:
            shutil.rmtree(run_dir, ignore_errors=True)
        return [], [], oracle

    def judge_oracle(self, result: dict[str, Any], task: dict[str, Any]) -> None:
        """A wrong case whose aotrt outputs match torch's own AOTI run of the same package
        becomes differs-in-torch; otherwise its message says torch's loader matches eager."""
        import torch

        run_dir = Path(task["run_dir"])
        if result.get("status") != "ok":
            for k in task["wrong"]:
                rec = self.results[task["cases"][k]["key"]]
                rec["message"] += f"; torch's AOTI loader could not run it ({result.get('message')})"
            shutil.rmtree(run_dir, ignore_errors=True)
            return
        got = torch.load(self.cache / "batches" / task["key"] / "oracle.pt")
        for k in task["wrong"]:
            rec = self.results[task["cases"][k]["key"]]
            expected = torch.load(self.cache / "cases" / rec["key"] / "expected.pt")
            o0, o1 = task["ranges"][k]["outputs"]
            torch_out = got[o0:o1]
            actual = [_load_output(run_dir / f"output_{j}.npy", e) for j, e in zip(range(o0, o1), expected)]
            if all(a is not None and _close(a, t.to(a.dtype) if t.dtype != a.dtype else t)
                   for a, t in zip(actual, torch_out)):
                rec["outcome"] = "differs-in-torch"
                rec["message"] += "; torch's own AOTI loader gives aotrt's values"
            else:
                agrees = all(_close(t, e) for t, e in zip(torch_out, expected))
                rec["message"] += ("; torch's AOTI loader matches eager" if agrees
                                   else "; torch's AOTI loader differs from both")
        shutil.rmtree(run_dir, ignore_errors=True)

    def log(self, text: str) -> None:
        print(f"[{time.time() - self.started:7.1f} s] {text}", flush=True)


class _Stopped(Exception):
    """SIGTERM reached the sweep (a time box): what finished is written."""


def _stop_on_signal(signum, frame) -> None:
    raise _Stopped()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="python3 -m tests.opinfo.sweep", description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cpu", help="cpu or cuda (cuda:N)")
    p.add_argument("--dtypes", help="comma-separated (default: float32 then the others the device has)")
    sel = p.add_mutually_exclusive_group()
    sel.add_argument("--ops", help="comma-separated op_db names (name or name.variant)")
    sel.add_argument("--slice", choices=["ci", "dtypes", "all"], default="all",
                     help="ci: tests/opinfo/ci_slice.py's CI_OPS; dtypes: its DTYPE_OPS")
    p.add_argument("--samples", type=int, default=1, help="sample inputs per op and dtype (default 1)")
    p.add_argument("--batch", type=int, default=16, help="cases per package; 1: one-op packages")
    p.add_argument("--workers", type=int, default=2, help="compile processes (default 2)")
    p.add_argument("--out", required=True, help="folder for results.json and table.md")
    p.add_argument("--cache", default=str(REPO / "build" / "opinfo-cache"))
    p.add_argument("--aotrt", default=os.environ.get("AOTRT_BIN", str(REPO / "build" / "aotrt")))
    p.add_argument("--timeout", type=float, default=240, help="seconds per op's samples and per package (base)")
    p.add_argument("--timeout-per-case", type=float, default=30, help="extra package seconds per case")
    p.add_argument("--run-timeout", type=float, default=300, help="seconds per aotrt call")
    p.add_argument("--table", help="also write the markdown table here (e.g. docs/opinfo/cpu-torch2.13.md)")
    p.add_argument("--missing", help="write 'op dtype device missing-symbols' lines here")
    p.add_argument("--no-oracle", dest="oracle", action="store_false",
                   help="do not run wrong cases through torch's own AOTI loader")
    args = p.parse_args(argv)
    args.argv = argv
    if not Path(args.aotrt).is_file():
        raise SystemExit(f"aotrt binary not found at {args.aotrt} (build it, or pass --aotrt)")
    sweep = Sweep(args)
    rc = sweep.run()
    from tests.opinfo import report

    print(report.counts_text(sweep.meta(round(time.time() - sweep.started, 1)), sweep.kept + list(sweep.results.values())))
    return rc


if __name__ == "__main__":
    sys.exit(main())
