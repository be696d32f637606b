"""Writes the torch eager reference cases of the op-family tests.

Each case calls one ATen op in torch eager on inputs seen through the views the C++
test builds (sizes, strides, storage offset), and records every output's dtype, sizes,
strides and values. The C++ tests (tests/unit/ops/test_ops_<family>.cpp) include
tests/unit/ops/reference_<family>.inc and need no torch. Run after changing a case:

    python3 tests/unit/ops/gen_ops_reference.py            # every family
    python3 tests/unit/ops/gen_ops_reference.py scan sort  # some
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent

DTYPES = {torch.uint8: "kU8", torch.int8: "kI8", torch.int16: "kI16", torch.int32: "kI32",
          torch.int64: "kI64", torch.float16: "kF16", torch.float32: "kF32", torch.float64: "kF64",
          torch.bool: "kBool", torch.bfloat16: "kBF16", torch.complex64: "kC64"}
CODES = {torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4,
         torch.float16: 5, torch.float32: 6, torch.float64: 7, torch.bool: 11, torch.bfloat16: 15}


def small(i: int) -> float:
    return float((i * 7 + 3) % 11 - 5)


def contiguous_strides(sizes):
    strides, step = [], 1
    for s in reversed(sizes):
        strides.insert(0, step)
        step *= max(s, 1)
    return strides


def view(values, dtype, sizes, strides=None, offset=0):
    """values (row-major over sizes) in a view with these strides and offset."""
    strides = contiguous_strides(sizes) if strides is None else strides
    extent = offset + (1 + sum((s - 1) * t for s, t in zip(sizes, strides)) if all(sizes) else 0)
    buf = torch.full((extent + 1,), -77, dtype=dtype)
    v = torch.as_strided(buf, sizes, strides, offset)
    if v.numel():
        v.copy_(torch.tensor(values, dtype=torch.float64).reshape(sizes))
    return v


def transposed(values, dtype, sizes, offset=0):
    """A 2-d view of `sizes` whose memory is column-major."""
    return view(values, dtype, sizes, [1, sizes[0]], offset)


def pattern(n, start=0, scale=1.0):
    return [small(i + start) * scale for i in range(n)]


def cpp_num(x: float) -> str:
    if math.isnan(x):
        return "kNaN"
    if math.isinf(x):
        return "kInf" if x > 0 else "-kInf"
    if float(x).is_integer() and abs(x) < 2**53:
        return str(int(x))
    return repr(float(x))


def cpp_values(t: torch.Tensor) -> str:
    vals = t.detach().to(torch.float64).reshape(-1).tolist() if t.numel() else []
    j = lambda v: "{" + ", ".join(str(x) for x in v) + "}"
    return (f"Values{{{DTYPES[t.dtype]}, {j(list(t.shape))}, {j(list(t.stride()))}, {t.storage_offset()}, "
            f"{{{', '.join(cpp_num(x) for x in vals)}}}}}")


def case(name, op, inputs, ints, outputs, floats=()):
    outs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    ins = ",\n      ".join(cpp_values(t) for t in inputs)
    os_ = ",\n      ".join(cpp_values(t) for t in outs)
    return (f'  {{"{name}", "{op}",\n     {{{ins}}},\n     {{{", ".join(str(i) for i in ints)}}},\n'
            f'     {{{", ".join(cpp_num(f) for f in floats)}}},\n     {{{os_}}}}},\n')


NONE = "kNone"


# --- scan ------------------------------------------------------------------------------
# ints: dim, then the dtype code or kNone (cumsum, cumprod).
def scan_cases():
    out = []
    f32, i32 = torch.float32, torch.int32

    def cum(name, op, x, dim, dtype=None):
        fn = getattr(torch, op)
        if op in ("cumsum", "cumprod"):
            r = fn(x, dim, dtype=dtype)
            ints = [dim, CODES[dtype] if dtype is not None else NONE]
        else:
            r = fn(x, dim)
            ints = [dim]
        if isinstance(r, tuple):
            r = tuple(r)
        out.append(case(name, op, [x], ints, r))

    cum("cumsum_f32_rows", "cumsum", view(pattern(12), f32, [3, 4]), 1)
    cum("cumsum_f32_transposed_offset_dim0", "cumsum", transposed(pattern(12, 5, 0.25), f32, [3, 4], 2), 0)
    cum("cumsum_f32_gapped_negative_dim", "cumsum", view(pattern(24, 1), f32, [2, 3, 4], [40, 12, 3], 5), -2)
    cum("cumsum_int32_promotes_to_int64", "cumsum", transposed(pattern(6), i32, [2, 3]), 1)
    cum("cumsum_bool_promotes_to_int64", "cumsum", view([1, 0, 1, 1, 0, 1], torch.bool, [6]), 0)
    cum("cumsum_uint8_promotes_to_int64", "cumsum", view([200, 100, 50], torch.uint8, [3]), 0)
    cum("cumsum_int32_dtype_float64", "cumsum", view(pattern(6), i32, [6]), 0, torch.float64)
    cum("cumsum_f16_dtype_f32", "cumsum", view(pattern(6, 0, 0.5), torch.float16, [2, 3]), 1, torch.float32)
    cum("cumsum_f32_accumulates_in_double", "cumsum", view([1e8, 1, 1, -1e8], f32, [4]), 0)
    cum("cumsum_f16_saturates_at_max", "cumsum", view([65504, 10, -65504], torch.float16, [3]), 0)
    cum("cumsum_bf16", "cumsum", view(pattern(8, 2, 0.125), torch.bfloat16, [8]), 0)
    cum("cumsum_int64_wraps", "cumsum", view([2**62, 2**62, 2**62], torch.int64, [3]), 0)
    cum("cumsum_int8_dtype_int8_wraps", "cumsum", view([100, 100, 100], torch.int8, [3]), 0, torch.int8)
    cum("cumsum_nan_inf", "cumsum", view([1, math.inf, -math.inf, 2, math.nan, 3], f32, [6]), 0)
    cum("cumsum_0d", "cumsum", view([3.5], f32, []), -1)
    cum("cumsum_empty", "cumsum", view([], f32, [0, 3]), 0)
    cum("cumsum_size1_dim", "cumsum", view(pattern(4), f32, [4, 1]), 1)
    cum("cumprod_f32", "cumprod", transposed(pattern(12, 3, 0.5), f32, [3, 4]), 1)
    cum("cumprod_int32_promotes", "cumprod", view(pattern(6, 1), i32, [6]), 0)
    cum("cumprod_f64_dtype_f32", "cumprod", view(pattern(6, 1, 0.5), torch.float64, [6]), 0, torch.float32)
    cum("logcumsumexp_f32", "logcumsumexp", transposed(pattern(12, 0, 0.7), f32, [3, 4]), 1)
    cum("logcumsumexp_inf_nan", "logcumsumexp",
        view([-math.inf, -math.inf, 1, math.inf, 2, math.nan, 3], f32, [7]), 0)
    cum("logcumsumexp_neg_inf_then_finite", "logcumsumexp", view([-math.inf, -1.5, math.inf, math.inf], f32, [4]), 0)
    cum("logcumsumexp_f64", "logcumsumexp", view(pattern(5, 2, 3.0), torch.float64, [5]), 0)
    cum("logcumsumexp_bf16", "logcumsumexp", view(pattern(6, 2, 0.5), torch.bfloat16, [6]), 0)
    cum("logcumsumexp_0d", "logcumsumexp", view([2.0], f32, []), 0)
    cum("cummax_ties_take_last", "cummax", view([1, 3, 3, 2, 3], f32, [5]), 0)
    cum("cummin_ties_take_last", "cummin", view([1, 0, 0, 2, 0], f32, [5]), 0)
    cum("cummax_nan", "cummax", view([1, math.nan, 3, math.nan, 5], f32, [5]), 0)
    cum("cummin_nan", "cummin", view([1, math.nan, 3, math.nan, 0], f32, [5]), 0)
    cum("cummax_int64_transposed", "cummax", transposed(pattern(12, 4), torch.int64, [3, 4], 1), 1)
    cum("cummin_f32_dim0_gapped", "cummin", view(pattern(12, 2), f32, [4, 3], [8, 2], 1), 0)
    cum("cummax_bool", "cummax", view([1, 0, 1], torch.bool, [3]), 0)
    cum("cummax_f16", "cummax", view(pattern(6, 3, 0.25), torch.float16, [6]), 0)
    cum("cummax_0d", "cummax", view([4.0], f32, []), 0)
    cum("cummin_empty", "cummin", view([], f32, [2, 0]), 1)
    return out


# --- sort ------------------------------------------------------------------------------
# ints: sort/sort_stable: dim, descending; topk: k, dim, largest, sorted; kthvalue: k, dim,
# keepdim; mode: dim, keepdim; median/nanmedian: none. Cases whose index among equal values
# ATen leaves unspecified are named *_ties_*: the C++ test checks self[index] == value there.
def sort_cases():
    out = []
    f32 = torch.float32
    nan, inf = math.nan, math.inf
    mixed = [3, nan, 1, 3, -0.0, 0.0, nan, -1, inf, -inf]

    def add(name, op, x, ints):
        if op in ("sort", "sort_stable"):
            r = torch.sort(x, dim=ints[0], descending=bool(ints[1]), stable=True)
        elif op == "topk":
            r = torch.topk(x, ints[0], dim=ints[1], largest=bool(ints[2]), sorted=bool(ints[3]))
        elif op == "kthvalue":
            r = torch.kthvalue(x, ints[0], dim=ints[1], keepdim=bool(ints[2]))
        elif op == "mode":
            r = torch.mode(x, dim=ints[0], keepdim=bool(ints[1]))
        else:
            r = getattr(torch, op)(x)
        out.append(case(name, op, [x], ints, tuple(r) if isinstance(r, tuple) else r))

    add("sort_nan_signed_zero_stable", "sort", view(mixed, f32, [10]), [0, 0])
    add("sort_descending_nan_first_stable", "sort_stable", view(mixed, f32, [10]), [0, 1])
    add("sort_transposed_keeps_strides", "sort", transposed(pattern(12, 1), f32, [3, 4]), [1, 0])
    add("sort_dim0_permuted_3d", "sort_stable",
        view(pattern(24, 2), f32, [4, 2, 3], [1, 12, 4]), [0, 1])
    add("sort_gapped_view_dense_strides", "sort", view(pattern(12, 3), f32, [3, 4], [10, 2], 1), [-1, 0])
    add("sort_int64_ties", "sort_stable", view([3, 1, 2, 1, 3, 0], torch.int64, [6]), [0, 0])
    add("sort_int8_descending", "sort", view([3, -1, 2, 100, -128], torch.int8, [5]), [0, 1])
    add("sort_bool", "sort_stable", view([1, 0, 1, 0], torch.bool, [4]), [0, 0])
    add("sort_f16", "sort", view(pattern(7, 1, 0.5), torch.float16, [7]), [0, 0])
    add("sort_bf16_descending", "sort", view(pattern(7, 4, 0.25), torch.bfloat16, [7]), [0, 1])
    add("sort_0d", "sort", view([5.0], f32, []), [0, 0])
    add("sort_empty", "sort", view([], f32, [0, 4]), [1, 0])
    add("topk_largest_nan_first", "topk", view(mixed, f32, [10]), [3, 0, 1, 1])
    add("topk_smallest", "topk", view(mixed, f32, [10]), [4, 0, 0, 1])
    add("topk_ties_partial_sort_path", "topk", view([1, 2, 2, 2, 1] * 30, f32, [150]), [2, 0, 1, 1])
    add("topk_ties_nth_element_path", "topk", view([1, 2, 2, 2, 1, 0, 2], f32, [7]), [2, 0, 1, 1])
    add("topk_unsorted", "topk", view(pattern(9, 2), f32, [9]), [4, 0, 1, 0])
    add("topk_dim0_transposed", "topk", transposed(pattern(12, 6), f32, [4, 3]), [2, 0, 1, 1])
    add("topk_k0", "topk", view(pattern(4), f32, [2, 2]), [0, 1, 1, 1])
    add("topk_int32_all", "topk", view(pattern(5, 1), torch.int32, [5]), [5, 0, 0, 1])
    add("kthvalue_ties_dim1", "kthvalue", view([1, 2, 2, nan, 1, 3, 0, 5], f32, [2, 4]), [2, 1, 0])
    add("kthvalue_keepdim_transposed", "kthvalue", transposed(pattern(12, 2), f32, [3, 4]), [1, 0, 1])
    add("kthvalue_nan_is_last", "kthvalue", view([1, nan, 3], f32, [3]), [3, 0, 0])
    add("kthvalue_0d", "kthvalue", view([2.5], f32, []), [1, 0, 0])
    add("mode_ties_smallest_value", "mode", view([1, 2, 2, 3, 1, 3], f32, [6]), [0, 0])
    add("mode_ties_rows_keepdim", "mode", view([4, 4, 1, 1, 1, 2, 7, 7, 7, 7, 0, 0], torch.int64, [3, 4]), [1, 1])
    add("mode_dim0", "mode", view(pattern(12, 1), f32, [4, 3], [1, 4]), [0, 0])
    add("median_lower", "median", view([1, 2, 2, 3, 1, 1], f32, [6]), [])
    add("median_2d_gapped", "median", view(pattern(6, 3), f32, [2, 3], [5, 2], 1), [])
    add("median_nan", "median", view([1, nan, 3], f32, [3]), [])
    add("median_int64", "median", view([7, -2, 9, 4], torch.int64, [4]), [])
    add("median_empty", "median", view([], f32, [0]), [])
    add("nanmedian_ignores_nan", "nanmedian", view([1, nan, 3, 2, nan], f32, [5]), [])
    add("nanmedian_all_nan", "nanmedian", view([nan, nan], f32, [2]), [])
    return out


FAMILIES = {"scan": scan_cases, "sort": sort_cases}


def main(names):
    for name in names or FAMILIES:
        text = (f"// Generated by tests/unit/ops/gen_ops_reference.py from torch {torch.__version__} eager: "
                "do not edit.\n// OpCase{name, op, inputs, ints, floats, outputs}; see ops_testing.h.\n"
                f"const std::vector<OpCase> k{name.capitalize()}Cases = {{\n" + "".join(FAMILIES[name]()) + "};\n")
        (HERE / f"reference_{name}.inc").write_text(text)
        print(f"wrote reference_{name}.inc")


if __name__ == "__main__":
    main(sys.argv[1:])
