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
          torch.bool: "kBool", torch.bfloat16: "kBF16", torch.complex64: "kC64",
          torch.float8_e5m2: "kF8E5M2", torch.float8_e4m3fn: "kF8E4M3FN",
          torch.float8_e5m2fnuz: "kF8E5M2FNUZ", torch.float8_e4m3fnuz: "kF8E4M3FNUZ"}
CODES = {torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4,
         torch.float16: 5, torch.float32: 6, torch.float64: 7, torch.bool: 11, torch.bfloat16: 15,
         torch.float8_e5m2: 23, torch.float8_e4m3fn: 24, torch.float8_e5m2fnuz: 25,
         torch.float8_e4m3fnuz: 26}


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
    if x == 0 and math.copysign(1.0, x) < 0:
        return "-0.0"  # str(int(x)) would drop the sign
    if float(x).is_integer() and abs(x) < 2**53:
        return str(int(x))
    return repr(float(x))


def cpp_values(t: torch.Tensor) -> str:
    vals = t.detach().to(torch.float64).reshape(-1).tolist() if t.numel() else []
    j = lambda v: "{" + ", ".join(str(x) for x in v) + "}"
    return (f"Values{{{DTYPES[t.dtype]}, {j(list(t.shape))}, {j(list(t.stride()))}, {t.storage_offset()}, "
            f"{{{', '.join(cpp_num(x) for x in vals)}}}}}")


def case(name, op, inputs, ints, outputs, floats=()):
    ints = ["kNone" if i == "kNone" else i for i in ints]
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
    # Note [Mode with NaN]: where NaN lands depends on the input's order (CPU only).
    add("mode_nan_first_cpu", "mode", view([nan, -1.25], f32, [2]), [0, 0])
    add("mode_nan_last_cpu", "mode", view([-1.25, nan], f32, [2]), [0, 0])
    add("mode_nan_scattered_cpu", "mode", view([nan, 1, 2, nan, 1, 2, nan], f32, [7]), [0, 0])
    add("median_lower", "median", view([1, 2, 2, 3, 1, 1], f32, [6]), [])
    add("median_2d_gapped", "median", view(pattern(6, 3), f32, [2, 3], [5, 2], 1), [])
    add("median_nan", "median", view([1, nan, 3], f32, [3]), [])
    add("median_int64", "median", view([7, -2, 9, 4], torch.int64, [4]), [])
    add("median_empty", "median", view([], f32, [0]), [])
    add("nanmedian_ignores_nan", "nanmedian", view([1, nan, 3, 2, nan], f32, [5]), [])
    add("nanmedian_all_nan", "nanmedian", view([nan, nan], f32, [2]), [])

    # Ops with no C shim, served through the proxy executor (test_ops_sort.cpp builds the
    # extern node). ints: median.dim / nanmedian.dim: dim, keepdim; _unique2: return_inverse,
    # return_counts; unique_dim: dim, return_inverse, return_counts; unique_consecutive:
    # return_inverse, return_counts, dim|kNone.
    def proxy(name, op, x, ints):
        if op in ("median.dim", "nanmedian.dim"):
            r = getattr(torch.ops.aten, op.split(".")[0]).dim(x, ints[0], bool(ints[1]))
        elif op == "_unique2":
            r = torch.ops.aten._unique2(x, True, bool(ints[0]), bool(ints[1]))
        elif op == "unique_dim":
            r = torch.ops.aten.unique_dim(x, ints[0], True, bool(ints[1]), bool(ints[2]))
        else:
            r = torch.ops.aten.unique_consecutive(x, bool(ints[0]), bool(ints[1]),
                                                  None if ints[2] == NONE else ints[2])
        r = tuple(r)
        if op.startswith("unique"):
            # Along a dim the values are laid out as torch's fake kernel lays them out
            # (contiguous), which the package's code asserts; eager's CPU kernel keeps dim
            # outermost in memory. Note [Unique].
            r = (r[0].contiguous(),) + r[1:]
        out.append(case(name, op, [x], ints, r))

    rows = [[nan, 1, 1, 3], [1, nan, 2, 0], [4, nan, nan, 5]]
    proxy("nanmedian_dim_rows_nan", "nanmedian.dim", view(sum(rows, []), f32, [3, 4]), [1, 0])
    proxy("nanmedian_dim_all_nan_line_keepdim", "nanmedian.dim",
          view([nan, 1, nan, 2, nan, nan], f32, [3, 2], [1, 3]), [0, 1])
    proxy("nanmedian_dim_transposed_offset", "nanmedian.dim",
          transposed(pattern(12, 4, 0.5), f32, [3, 4], 2), [-1, 1])
    proxy("nanmedian_dim_all_nan_lines_of_7", "nanmedian.dim", view([nan] * 14, f32, [2, 7]), [1, 0])
    proxy("nanmedian_dim_all_nan_lines_of_4", "nanmedian.dim", view([nan] * 12, f32, [4, 3]), [0, 1])
    proxy("nanmedian_dim_f64_0d", "nanmedian.dim", view([nan], torch.float64, []), [0, 0])
    proxy("nanmedian_dim_int64", "nanmedian.dim", view([5, -3, 9, 2, 7, 1], torch.int64, [2, 3]), [1, 0])
    proxy("nanmedian_dim_empty_rows", "nanmedian.dim", view([], f32, [0, 3]), [1, 1])
    proxy("nanmedian_dim_ties_bf16", "nanmedian.dim",
          view([1, 2, 2, 1, 2, 1, 0, 0], torch.bfloat16, [2, 4]), [1, 0])
    proxy("median_dim_nan_wins", "median.dim", view(sum(rows, []), f32, [3, 4]), [1, 0])
    proxy("unique_nan_signed_zero", "_unique2", view(mixed, f32, [10]), [1, 1])
    proxy("unique_transposed_int64_inverse_shape", "_unique2",
          transposed([3, 1, 3, 2, 1, 0], torch.int64, [2, 3], 1), [1, 1])
    proxy("unique_bool_no_inverse_no_counts", "_unique2", view([1, 0, 1, 1], torch.bool, [4]), [0, 0])
    proxy("unique_counts_only_gapped", "_unique2", view(pattern(8, 1), f32, [4, 2], [5, 2], 1), [0, 1])
    proxy("unique_f16", "_unique2", view([0.5, -1, 0.5, 2, -1], torch.float16, [5]), [1, 1])
    proxy("unique_0d", "_unique2", view([2.5], f32, []), [1, 1])
    proxy("unique_empty", "_unique2", view([], f32, [0, 3]), [1, 1])
    dup = [2, 1, 0, 1, 1, 0, 2, 1, 0, 0, 1, 2]
    proxy("unique_dim0_rows", "unique_dim", view(dup, torch.int64, [4, 3]), [0, 1, 1])
    proxy("unique_dim1_transposed", "unique_dim", transposed(dup, f32, [3, 4]), [1, 1, 1])
    proxy("unique_dim_3d_middle", "unique_dim",
          view([1, 2, 1, 2, 3, 4, 1, 2, 5, 6, 5, 6], torch.int32, [2, 3, 2]), [-2, 1, 0])
    proxy("unique_dim_nan_rows_distinct", "unique_dim", view([1, nan, 1, nan], f32, [2, 2]), [0, 1, 1])
    proxy("unique_dim_empty_selected", "unique_dim", view([], f32, [3, 0]), [1, 1, 1])
    proxy("unique_consecutive_flat", "unique_consecutive",
          view([3, 1, 1, nan, nan, 1, -0.0, 0.0], f32, [8]), [1, 1, NONE])
    proxy("unique_consecutive_2d_inverse_shape", "unique_consecutive",
          transposed([1, 1, 2, 2, 2, 1], torch.int64, [2, 3]), [1, 1, NONE])
    proxy("unique_consecutive_dim0", "unique_consecutive",
          view([1, 2, 1, 2, 3, 4, 1, 2], f32, [4, 2]), [1, 1, 0])
    proxy("unique_consecutive_dim1_transposed", "unique_consecutive",
          transposed([1, 1, 2, 5, 5, 6], torch.int64, [3, 2]), [0, 1, 1])
    proxy("unique_consecutive_empty", "unique_consecutive", view([], f32, [0]), [1, 1, NONE])
    return out


# --- views -----------------------------------------------------------------------------
# ints: narrow: dim, start, length; slice_Tensor: dim, start|kNone, end|kNone, step; permute:
# dims; squeeze_dim: dim; reshape: shape; view_dtype: dtype code. Output offsets are torch's,
# in the input's buffer: equal offsets show aotrt's result is a view at the same place.
def views_cases():
    out = []
    f32 = torch.float32

    def add(name, op, x, ints, r):
        out.append(case(name, op, [x], [NONE if i is None else i for i in ints], r))

    x = view(pattern(24), f32, [2, 3, 4], [20, 6, 1], 3)
    add("narrow_dim1", "narrow", x, [1, 1, 2], x.narrow(1, 1, 2))
    add("narrow_negative_start", "narrow", x, [-1, -3, 2], x.narrow(-1, -3, 2))
    add("narrow_empty", "narrow", x, [2, 4, 0], x.narrow(2, 4, 0))
    add("slice_step", "slice_Tensor", x, [2, 1, None, 2], x[:, :, 1::2])
    add("slice_negative_clamped", "slice_Tensor", x, [1, -10, 2, 1], x[:, -10:2])
    add("slice_end_before_start", "slice_Tensor", x, [2, 3, 1, 1], x[:, :, 3:1])
    add("slice_defaults", "slice_Tensor", x, [0, None, None, 1], x[:])
    add("permute", "permute", x, [2, 0, 1], x.permute(2, 0, 1))
    add("permute_negative", "permute", x, [-1, -2, -3], x.permute(-1, -2, -3))
    y = view(pattern(6), f32, [2, 1, 3], [3, 3, 1], 2)
    add("squeeze_size1", "squeeze_dim", y, [1], y.squeeze(1))
    add("squeeze_not_size1", "squeeze_dim", y, [0], y.squeeze(0))
    add("squeeze_0d", "squeeze_dim", view([2.0], f32, []), [0], view([2.0], f32, []).squeeze(0))
    add("reshape_view", "reshape", x, [2, 3, 2, 2], x.reshape(2, 3, 2, 2))
    add("reshape_infer_copy", "reshape", x, [-1, 4], x.reshape(-1, 4))
    add("reshape_infer_view", "reshape", x, [2, 3, -1, 2], x.reshape(2, 3, -1, 2))
    t = transposed(pattern(12), f32, [3, 4], 1)
    add("reshape_copy_transposed", "reshape", t, [12], t.reshape(12))
    add("reshape_view_transposed_split", "reshape", t, [3, 2, 2], t.reshape(3, 2, 2))
    add("reshape_size1_dims", "reshape", t, [3, 1, 4, 1], t.reshape(3, 1, 4, 1))
    z = view(pattern(8), f32, [2, 4], [6, 1], 2)
    add("view_dtype_same_size", "view_dtype", z, [CODES[torch.int32]], z.view(torch.int32))
    add("view_dtype_smaller", "view_dtype", z, [CODES[torch.int16]], z.view(torch.int16))
    w = view(pattern(8), torch.int16, [2, 4], [6, 1], 2)
    add("view_dtype_larger", "view_dtype", w, [CODES[torch.int32]], w.view(torch.int32))
    add("view_dtype_f32_to_u8", "view_dtype", z, [CODES[torch.uint8]], z.view(torch.uint8))
    return out


# --- indexing --------------------------------------------------------------------------
# index_Tensor: inputs self, index tensors; ints: per dim the input number of its index or
# -1 for None. index_put: inputs self, values, index tensors; ints: accumulate, then the
# mapping. nonzero_static: size, fill_value. scatter_src_out / scatter_reduce_two_out:
# inputs self, index, src; ints: dim (then reduce: 0 sum 1 prod 2 mean 3 amax 4 amin,
# include_self). scatter_value_out: inputs self, index; ints: dim; floats: value.
# searchsorted_Tensor: inputs sorted, values[, sorter]; ints: out_int32, right, side (-1
# None, 0 left, 1 right). searchsorted_Scalar: inputs sorted; floats: value. bucketize_Tensor:
# inputs self, boundaries; ints: out_int32, right.
REDUCES = ["sum", "prod", "mean", "amax", "amin"]


def indexing_cases():
    out = []
    f32, i64 = torch.float32, torch.int64
    nan = math.nan

    def idx(vals, sizes, strides=None, offset=0, dtype=i64):
        return view(vals, dtype, sizes, strides, offset)

    x = view(pattern(24), f32, [2, 3, 4], [20, 6, 1], 3)
    i0 = idx([1, 0, 1], [3])
    i2 = idx([3, -1, 0], [3])
    out.append(case("index_first_dim", "index_Tensor", [x, i0], [1], x[i0]))
    out.append(case("index_adjacent_middle", "index_Tensor", [x, i2], [-1, -1, 1], x[:, :, i2]))
    i1b = idx([0, 2, 1, 1], [2, 2])
    out.append(case("index_two_adjacent_broadcast", "index_Tensor", [x, i1b, idx([3, 0], [2])], [-1, 1, 2],
                    x[:, i1b, idx([3, 0], [2])]))
    out.append(case("index_non_adjacent_goes_first", "index_Tensor", [x, idx([1, 0], [2]), idx([2, 3], [2])],
                    [1, -1, 2], x[idx([1, 0], [2]), :, idx([2, 3], [2])]))
    p = view(pattern(60), f32, [5, 3, 4], [1, 20, 5])  # permuted memory
    ip = idx([0, 1], [1, 2])
    out.append(case("index_permuted_self_layout", "index_Tensor", [p, ip], [-1, 1], p[:, ip]))
    m = view([1, 0, 1], torch.bool, [3])
    out.append(case("index_bool_mask", "index_Tensor", [x, m], [-1, 1], x[:, m]))
    m2 = view([1, 0, 0, 1, 1, 0], torch.bool, [2, 3])
    out.append(case("index_bool_mask_2d", "index_Tensor", [x, m2], [1], x[m2]))
    out.append(case("index_int32_indices", "index_Tensor", [x, idx([2, 0], [2], dtype=torch.int32)], [-1, 1],
                    x[:, idx([2, 0], [2], dtype=torch.int32)]))
    xi = view(pattern(6), torch.int64, [6])
    out.append(case("index_int64_self_strided_index", "index_Tensor", [xi, idx([5, 0, 2], [3], [2], 1)],
                    [1], xi[idx([5, 0, 2], [3], [2], 1)]))

    t = transposed(pattern(12), f32, [3, 4])
    v = view([10, 20, 30, 40], f32, [4])
    out.append(case("index_put_rows_keeps_strides", "index_put", [t, v, idx([2, 0], [2])], [0, 2],
                    torch.index_put(t, (idx([2, 0], [2]),), v)))
    out.append(case("index_put_accumulate_duplicates", "index_put", [t, view([1.5], f32, []), idx([1, 1, 1], [3]),
                                                                      idx([0, 0, 3], [3])], [1, 2, 3],
                    torch.index_put(t, (idx([1, 1, 1], [3]), idx([0, 0, 3], [3])), view([1.5], f32, []), True)))
    big = view([2.0 ** 62, 1], torch.int64, [2])  # 3 * 2^62 wraps to -2^62, as ATen's two's complement
    out.append(case("index_put_accumulate_int64_wraps", "index_put",
                    [big, view([2.0 ** 62], torch.int64, []), idx([0, 0], [2])], [1, 2],
                    torch.index_put(big, (idx([0, 0], [2]),), view([2.0 ** 62], torch.int64, []), True)))
    out.append(case("index_put_duplicates_last_wins", "index_put", [t, view([7, 8], f32, [2]), idx([0, 0], [2]),
                                                                     idx([1, 1], [2])], [0, 2, 3],
                    torch.index_put(t, (idx([0, 0], [2]), idx([1, 1], [2])), view([7, 8], f32, [2]))))
    mk = view([0, 1, 1], torch.bool, [3])
    out.append(case("index_put_mask_scalar", "index_put", [t, view([-9], f32, []), mk], [0, 2],
                    torch.index_put(t, (mk,), view([-9], f32, []))))

    z = view([0, 1, 2, 0, 0, 3, nan, 0, -0.0], f32, [3, 3], [1, 3])
    out.append(case("nonzero_2d_transposed_nan", "nonzero", [z], [], torch.nonzero(z)))
    out.append(case("nonzero_bool_1d", "nonzero", [view([1, 0, 1, 1], torch.bool, [4])], [],
                    torch.nonzero(view([1, 0, 1, 1], torch.bool, [4]))))
    out.append(case("nonzero_none", "nonzero", [view([0, 0], f32, [2])], [], torch.nonzero(view([0, 0], f32, [2]))))
    out.append(case("nonzero_0d", "nonzero", [view([5], f32, [])], [], torch.nonzero(view([5], f32, []))))
    out.append(case("nonzero_static_pad", "nonzero_static", [z], [6, -1], torch.nonzero_static(z, size=6, fill_value=-1)))
    out.append(case("nonzero_static_truncate", "nonzero_static", [z], [2, 0], torch.nonzero_static(z, size=2)))

    sm = view([1, 0, 1, 0, 1, 1, 0, 0, 1, 1, 1, 0], torch.bool, [4, 3], [1, 4])
    out.append(case("masked_select_same_shape", "masked_select", [t.t(), sm], [], torch.masked_select(t.t(), sm)))
    out.append(case("masked_select_broadcast_mask", "masked_select", [x, view([1, 0, 0, 1], torch.bool, [4])], [],
                    torch.masked_select(x, view([1, 0, 0, 1], torch.bool, [4]))))

    base = transposed(pattern(12, 1), f32, [3, 4])
    ix = idx([0, 2, 1, 0, 1, 1], [2, 3])
    src = view(pattern(8, 5, 0.5), f32, [2, 4])
    out.append(case("scatter_src_dim0", "scatter_src_out", [base, ix, src], [0], base.scatter(0, ix, src)))
    ix1 = idx([3, 0, 3, 1, 2, 2], [3, 2])
    out.append(case("scatter_src_dim1_duplicates", "scatter_src_out", [base, ix1, view(pattern(6, 2), f32, [3, 2])], [1],
                    base.scatter(1, ix1, view(pattern(6, 2), f32, [3, 2]))))
    out.append(case("scatter_value", "scatter_value_out", [base, ix1], [1], base.scatter(1, ix1, 2.5), floats=[2.5]))
    for r in range(5):
        for inc in (1, 0):
            out.append(case(f"scatter_reduce_{REDUCES[r]}_{'incl' if inc else 'excl'}", "scatter_reduce_two_out",
                            [base, ix1, view(pattern(6, 2), f32, [3, 2])], [1, r, inc],
                            base.scatter_reduce(1, ix1, view(pattern(6, 2), f32, [3, 2]), REDUCES[r], include_self=bool(inc))))
    bi = view([1, 1, 1, 4], i64, [4])
    for inc in (1, 0):
        out.append(case(f"scatter_reduce_mean_int_floor_{inc}", "scatter_reduce_two_out",
                        [bi, idx([0, 0, 2], [3]), view([5, 6, -7], i64, [3])], [0, 2, inc],
                        bi.scatter_reduce(0, idx([0, 0, 2], [3]), view([5, 6, -7], i64, [3]), "mean", include_self=bool(inc))))
    nb = view([1, 2, 3], f32, [3])
    out.append(case("scatter_reduce_amax_nan", "scatter_reduce_two_out", [nb, idx([0, 0], [2]), view([nan, 5], f32, [2])],
                    [0, 3, 1], nb.scatter_reduce(0, idx([0, 0], [2]), view([nan, 5], f32, [2]), "amax")))

    srt = view([1, 3, 3, 5, 7], f32, [5])
    vals = view([0, 3, 4, 7, 9, nan], f32, [2, 3])
    for right in (0, 1):
        out.append(case(f"searchsorted_right{right}", "searchsorted_Tensor", [srt, vals], [0, right, -1],
                        torch.searchsorted(srt, vals, right=bool(right))))
    out.append(case("searchsorted_side_right_int32", "searchsorted_Tensor", [srt, vals], [1, 0, 1],
                    torch.searchsorted(srt, vals, out_int32=True, side="right")))
    s2 = view([1, 4, 9, 2, 3, 8], f32, [2, 3])
    v2 = view([4, 0, 8, 9], f32, [2, 2], [1, 2])
    out.append(case("searchsorted_nd_lines", "searchsorted_Tensor", [s2, v2], [0, 0, -1], torch.searchsorted(s2, v2)))
    uns = view([7, 1, 5, 3], f32, [4])
    sorter = idx([1, 3, 2, 0], [4])
    out.append(case("searchsorted_sorter", "searchsorted_Tensor", [uns, view([4, 8], f32, [2]), sorter], [0, 0, -1],
                    torch.searchsorted(uns, view([4, 8], f32, [2]), sorter=sorter)))
    out.append(case("searchsorted_int_boundaries_float_values", "searchsorted_Tensor",
                    [view([1, 3, 5, 7], i64, [4]), view([3.5, 3], f32, [2])], [0, 0, -1],
                    torch.searchsorted(view([1, 3, 5, 7], i64, [4]), view([3.5, 3], f32, [2]))))
    out.append(case("searchsorted_scalar", "searchsorted_Scalar", [view([1, 3, 5, 7], i64, [4])], [0, 1, -1],
                    torch.searchsorted(view([1, 3, 5, 7], i64, [4]), 3.0, right=True), floats=[3.0]))
    bv = transposed(pattern(6, 0, 2), f32, [2, 3])
    for right in (0, 1):
        out.append(case(f"bucketize_right{right}", "bucketize_Tensor", [bv, view([-4, 0, 4], f32, [3])], [0, right],
                        torch.bucketize(bv, view([-4, 0, 4], f32, [3]), right=bool(right))))
    # masked_scatter: inputs self, mask, source. index_reduce: inputs self, index, source;
    # ints: dim, reduce (1 prod 2 mean 3 amax 4 amin), include_self. repeat_interleave_Tensor:
    # inputs repeats; ints: output_size or kNone. histc: input; ints: bins; floats: min, max.
    ms = transposed(pattern(12), f32, [4, 3])
    mm = view([1, 0, 1, 0], torch.bool, [4, 1])
    out.append(case("masked_scatter_broadcast_mask", "masked_scatter", [ms, mm, view(pattern(10, 3), f32, [2, 5])], [],
                    torch.masked_scatter(ms, mm, view(pattern(10, 3), f32, [2, 5]))))
    for r in range(1, 5):
        for inc in (1, 0):
            out.append(case(f"index_reduce_{REDUCES[r]}_{'incl' if inc else 'excl'}", "index_reduce",
                            [ms, idx([0, 0, 3], [3]), view(pattern(9, 4), f32, [3, 3])], [0, r, inc],
                            ms.index_reduce(0, idx([0, 0, 3], [3]), view(pattern(9, 4), f32, [3, 3]), REDUCES[r],
                                            include_self=bool(inc))))
    out.append(case("index_reduce_mean_int_dim1", "index_reduce",
                    [view([5, 6, -7, 4], i64, [1, 4]), idx([0, 0, 2], [3]), view([5, 6, -8], i64, [1, 3])], [1, 2, 1],
                    view([5, 6, -7, 4], i64, [1, 4]).index_reduce(1, idx([0, 0, 2], [3]), view([5, 6, -8], i64, [1, 3]), "mean")))
    out.append(case("repeat_interleave", "repeat_interleave_Tensor", [idx([2, 0, 3], [3])], [NONE],
                    torch.repeat_interleave(idx([2, 0, 3], [3]))))
    out.append(case("repeat_interleave_int32_output_size", "repeat_interleave_Tensor",
                    [idx([1, 2], [2], dtype=torch.int32)], [3],
                    torch.repeat_interleave(idx([1, 2], [2], dtype=torch.int32), output_size=3)))
    hx = view([1, 2, 1, 4, nan, 5, -1, 3.99], f32, [2, 4], [1, 2])
    out.append(case("histc_range", "histc", [hx], [4], torch.histc(hx, bins=4, min=0, max=4), floats=[0, 4]))
    out.append(case("histc_data_range", "histc", [view([1, 2, 1, 7], f32, [4])], [3],
                    torch.histc(view([1, 2, 1, 7], f32, [4]), bins=3), floats=[0, 0]))
    out.append(case("histc_constant_input", "histc", [view([2, 2], torch.float64, [2])], [2],
                    torch.histc(view([2, 2], torch.float64, [2]), bins=2), floats=[0, 0]))
    return out


# --- shape -----------------------------------------------------------------------------
# fill__Scalar: input; floats: value; output: the input after the fill. cat: inputs; ints:
# dim. pad: input; ints: the pad list; floats: value (empty: None); mode constant.
def shape_cases():
    out = []
    f32 = torch.float32
    x = view(pattern(12), f32, [3, 4], [1, 5], 2)
    out.append(case("fill_strided_view", "fill__Scalar", [x], [], x.clone().fill_(2.5), floats=[2.5]))
    xi = view(pattern(6), torch.int32, [6], [2], 1)
    out.append(case("fill_int_truncates", "fill__Scalar", [xi], [], torch.full_like(xi, 3), floats=[3.7]))
    a, b = view(pattern(6), f32, [2, 3]), transposed(pattern(4, 3), f32, [2, 2])
    out.append(case("cat_dim1_mixed_layouts", "cat", [a, b], [1], torch.cat([a, b], 1)))
    out.append(case("cat_dim0_negative", "cat", [a, view(pattern(3, 1), f32, [1, 3])], [-2], torch.cat([a, view(pattern(3, 1), f32, [1, 3])], -2)))
    ai = view(pattern(3), torch.int32, [1, 3])
    out.append(case("cat_promotes", "cat", [ai, a], [0], torch.cat([ai, a], 0)))
    out.append(case("cat_skips_legacy_empty", "cat", [view([], f32, [0]), a], [0], torch.cat([view([], f32, [0]), a], 0)))
    cl = lambda seed: view(pattern(24, seed), f32, [1, 2, 3, 4], [24, 1, 8, 2])
    out.append(case("cat_channels_last", "cat", [cl(0), cl(5)], [1], torch.cat([cl(0), cl(5)], 1)))
    p = view(pattern(6), f32, [2, 3], [1, 2])
    out.append(case("pad_constant", "pad", [p], [1, 2, 0, 1], torch.nn.functional.pad(p, (1, 2, 0, 1), value=9.0), floats=[9.0]))
    out.append(case("pad_negative_crops", "pad", [p], [-1, 1, 1, -1], torch.nn.functional.pad(p, (-1, 1, 1, -1))))
    out.append(case("pad_last_dim_only", "pad", [p], [2, 0], torch.nn.functional.pad(p, (2, 0), value=-1.0), floats=[-1.0]))
    return out

# --- embedding -------------------------------------------------------------------------
# _embedding_bag(_forward_only): inputs weight, indices, offsets[, per_sample_weights];
# ints: mode (0 sum 1 mean 2 max), include_last_offset, padding_idx, forward_only;
# outputs: output, offset2bag, bag_size, max_indices.
def embedding_cases():
    out = []
    f32, i64, i32 = torch.float32, torch.int64, torch.int32
    ops = {0: torch.ops.aten._embedding_bag, 1: torch.ops.aten._embedding_bag_forward_only}
    w = view(pattern(24), f32, [6, 4], [1, 7], 3)  # column-major with an offset: no fast path
    wc = view(pattern(24, 2), f32, [6, 4])
    ix = view([1, 2, 4, 5, 4, 3, 2, 0], i64, [8], [2], 1)
    of = view([0, 3, 3, 5], i64, [4])

    def add(name, weight, idx, off, mode, ilo, pad, fwd, psw=None):
        # ATen's CPU kernel reads indices and offsets as if contiguous (a strided view gives
        # garbage there); aotrt honours the view, so eager sees contiguous copies of them.
        r = ops[fwd](weight, idx.contiguous(), off.contiguous(), False, mode, False, psw, bool(ilo), pad)
        ins = [weight, idx, off] + ([psw] if psw is not None else [])
        out.append(case(name, "_embedding_bag_forward_only" if fwd else "_embedding_bag", ins,
                        [mode, ilo, pad, fwd], list(r)))

    for mode, mname in ((0, "sum"), (1, "mean"), (2, "max")):
        for fwd in (1, 0):
            add(f"bag_{mname}_strided_weight_{'fwd' if fwd else 'full'}", w, ix, of, mode, 0, -1, fwd)
            add(f"bag_{mname}_last_offset_{'fwd' if fwd else 'full'}", wc, ix,
                view([0, 3, 3, 6], i64, [4]), mode, 1, -1, fwd)
        add(f"bag_{mname}_padding", wc, ix, of, mode, 0, 4, 1)
    psw = view(pattern(8, 5, 0.5), f32, [8])
    add("bag_sum_per_sample_weights", wc, ix, of, 0, 0, -1, 1, psw)
    add("bag_sum_per_sample_weights_strided", wc, ix, of, 0, 0, 2, 1,
        view(pattern(8, 5, 0.5), f32, [8], [3], 2))
    add("bag_mean_int32_indices", wc, view([5, 0, 0, 1], i32, [4]), view([0, 1], i32, [2]), 1, 0, -1, 1)
    add("bag_max_mixed_index_dtypes", wc, view([5, 0, 0, 1], i32, [4]), view([0, 2], i64, [2]), 2, 0, -1, 1)
    add("bag_sum_f64", view(pattern(12), torch.float64, [3, 4]), view([2, 1, 2], i64, [3]),
        view([0, 1], i64, [2]), 0, 0, -1, 1)
    for dt in (torch.float16, torch.bfloat16):
        wl = view(pattern(24, 1, 0.25), dt, [6, 4])
        add(f"bag_sum_{DTYPES[dt][1:].lower()}", wl, ix, of, 0, 0, -1, 1)
        add(f"bag_mean_{DTYPES[dt][1:].lower()}", wl, ix, of, 1, 0, -1, 1)
    nanw = view([1, 5, 3, 5, 3, math.nan, 0, 0], f32, [4, 2])
    add("bag_max_ties_and_nan", nanw, view([0, 1, 2, 3, 2, 2, 3], i64, [7]), view([0, 3, 6], i64, [3]), 2, 0, -1, 1)
    add("bag_max_all_padding", nanw, view([0, 1, 3, 3, 2], i64, [5]), view([0, 2, 4], i64, [3]), 2, 0, 3, 1)
    add("bag_mean_last_offset_short", wc, ix, view([0, 4, 6], i64, [3]), 1, 1, 2, 1)
    add("bag_mean_last_offset_short_fast_path", wc, ix, view([0, 4, 6], i64, [3]), 1, 1, -1, 1)
    add("bag_max_last_offset_short", wc, ix, view([0, 4, 6], i64, [3]), 2, 1, -1, 1)
    return out

# --- linear ----------------------------------------------------------------------------
# _addmm_activation: inputs self, mat1, mat2; ints: use_gelu; floats: beta, alpha. addmv,
# addbmm: inputs self, mat/batch1, vec/batch2; floats: beta, alpha. _fused_rms_norm: inputs
# input[, weight]; ints: normalized_shape; floats: eps (empty: None); outputs output, rstd.
# _trilinear: inputs i1, i2, i3; ints: len, expand1..., len, expand2..., len, expand3...,
# len, sumdim..., 1, unroll_dim.
def linear_cases():
    out = []
    f32, f64 = torch.float32, torch.float64
    A = torch.ops.aten
    m1 = transposed(pattern(12, 0, 0.5), f32, [3, 4])
    m2 = view(pattern(20, 3, 0.25), f32, [4, 5], [1, 6], 2)
    bias = view(pattern(5, 1), f32, [5])
    for gelu in (0, 1):
        out.append(case(f"addmm_activation_{'gelu' if gelu else 'relu'}", "_addmm_activation", [bias, m1, m2],
                        [gelu], A._addmm_activation(bias, m1, m2, beta=0.5, alpha=2.0, use_gelu=bool(gelu)),
                        floats=[0.5, 2.0]))
    b2d = view(pattern(15, 2), f32, [3, 5], [1, 3])
    out.append(case("addmm_activation_2d_self_f64", "_addmm_activation",
                    [b2d.double(), m1.double(), m2.double()], [1],
                    A._addmm_activation(b2d.double(), m1.double(), m2.double(), use_gelu=True),
                    floats=[1.0, 1.0]))
    mv = view(pattern(12, 1), f32, [3, 4], [1, 3], 1)
    vec = view(pattern(4, 2), f32, [4], [3], 1)
    for sv, nm in ((view(pattern(3, 4), f32, [3], [2], 1), "strided_self"), (view([2], f32, [1]), "broadcast_self")):
        out.append(case(f"addmv_{nm}", "addmv", [sv, mv, vec], [], torch.addmv(sv, mv, vec, beta=0.5, alpha=-1.5),
                        floats=[0.5, -1.5]))
    out.append(case("addmv_beta0_ignores_nan", "addmv", [view([math.nan] * 3, f64, [3]), mv.double(), vec.double()], [],
                    torch.addmv(view([math.nan] * 3, f64, [3]), mv.double(), vec.double(), beta=0.0), floats=[0.0, 1.0]))
    b1 = view(pattern(24, 0), f32, [2, 3, 4])
    b2 = view(pattern(40, 5), f32, [2, 4, 5], [1, 2, 8])  # batches interleaved: packed
    s2 = view(pattern(5, 7), f32, [1, 5])
    out.append(case("addbmm_broadcast_self", "addbmm", [s2, b1, b2], [], torch.addbmm(s2, b1, b2, beta=2.0, alpha=0.5),
                    floats=[2.0, 0.5]))
    b1p = view(pattern(24, 1), f32, [2, 3, 4], [4, 8, 1])
    b2c = view(pattern(40, 2), f32, [2, 4, 5])
    out.append(case("addbmm_permuted_batch1", "addbmm", [view(pattern(15, 3), f32, [3, 5]), b1p, b2c], [],
                    torch.addbmm(view(pattern(15, 3), f32, [3, 5]), b1p, b2c), floats=[1.0, 1.0]))
    # Integers: exact, through the integer matmul; int32 sums past 2^31 wrap as in ATen.
    i32, i64 = torch.int32, torch.int64
    out.append(case("addbmm_int64_interleaved_batch2", "addbmm",
                    [view(pattern(5, 7), i64, [1, 5]), view(pattern(24, 0), i64, [2, 3, 4]),
                     view(pattern(40, 5), i64, [2, 4, 5], [1, 2, 8])], [],
                    torch.addbmm(view(pattern(5, 7), i64, [1, 5]), view(pattern(24, 0), i64, [2, 3, 4]),
                                 view(pattern(40, 5), i64, [2, 4, 5], [1, 2, 8]), beta=2, alpha=-3),
                    floats=[2.0, -3.0]))
    big1 = view([v * 2**20 for v in pattern(12, 1)], i32, [2, 2, 3])
    big2 = view([v * 2**12 for v in pattern(12, 4)], i32, [2, 3, 2], [6, 1, 3])
    self32 = view(pattern(4, 2), i32, [2, 2], [1, 2])
    out.append(case("addbmm_int32_wraps", "addbmm", [self32, big1, big2], [],
                    torch.addbmm(self32, big1, big2), floats=[1.0, 1.0]))
    x = view(pattern(24, 0, 0.5), f32, [2, 3, 4], [1, 8, 2])
    w = view(pattern(4, 3, 0.5), f32, [4])
    out.append(case("rms_norm_weight", "_fused_rms_norm", [x, w], [4], list(A._fused_rms_norm(x, [4], w, 1e-5)),
                    floats=[1e-5]))
    out.append(case("rms_norm_two_dims_eps_none", "_fused_rms_norm", [x], [3, 4], list(A._fused_rms_norm(x, [3, 4], None, None))))
    for dt in (torch.float16, torch.bfloat16):
        xl = view(pattern(24, 1, 0.5), dt, [4, 6])
        out.append(case(f"rms_norm_{DTYPES[dt][1:].lower()}_f32_weight", "_fused_rms_norm", [xl, view(pattern(6, 2, 0.25), f32, [6])],
                        [6], list(A._fused_rms_norm(xl, [6], view(pattern(6, 2, 0.25), f32, [6]), 1e-3)), floats=[1e-3]))
    xd = view(pattern(12, 2), f64, [3, 4])
    out.append(case("rms_norm_f64", "_fused_rms_norm", [xd], [4], list(A._fused_rms_norm(xd, [4], None, 1e-6)), floats=[1e-6]))

    def tri(name, i1, i2, i3, e1, e2, e3, sd, unroll=1):
        ints = [len(e1), *e1, len(e2), *e2, len(e3), *e3, len(sd), *sd, 1, unroll]
        out.append(case(name, "_trilinear", [i1, i2, i3], ints, A._trilinear(i1, i2, i3, e1, e2, e3, sd, unroll)))
    x1 = view(pattern(6, 0), f32, [2, 3])
    W = view(pattern(105, 1), f32, [7, 3, 5], [1, 35, 7])
    x2 = transposed(pattern(10, 2), f32, [2, 5])
    tri("trilinear_bilinear", x1, W, x2, [1, 3], [0], [1, 2], [2, 3])
    a, b, c = view(pattern(12, 0), f32, [4, 3]), view(pattern(12, 3), f32, [4, 3], [1, 4]), view(pattern(12, 5), f32, [4, 3])
    tri("trilinear_sum_dim1", a, b, c, [], [], [], [1])
    tri("trilinear_no_sum", a, b, c, [], [], [], [])
    tri("trilinear_f64_each_expanded", view(pattern(12), f64, [4, 3]), view(pattern(15, 3), f64, [3, 5]),
        view(pattern(20, 5), f64, [4, 5]), [2], [0], [1], [1])
    tri("trilinear_int64_bilinear", view(pattern(6, 0), torch.int64, [2, 3]),
        view(pattern(105, 1), torch.int64, [7, 3, 5]), view(pattern(10, 2), torch.int64, [2, 5]),
        [1, 3], [0], [1, 2], [2, 3])
    # Note [Trilinear rounding]: where ATen rounds to float16. F.bilinear's first stage
    # (x1 @ W) gives 2048 + 1 and -2048 + 0; 2049 rounds to 2048 in float16, so eager's result
    # is 0 where one rounding at the end gives 1.
    f16 = torch.float16
    tri("trilinear_f16_bilinear_rounds_first_stage", view([1, 1], f16, [1, 2]),
        view([2048, -2048, 1, 0], f16, [1, 2, 2]), view([1, 1], f16, [1, 2]), [1, 3], [0], [1, 2], [2, 3])
    # A summed unroll_dim adds each index's result into the output in float16: 2048 + 1 + 1 ...
    # stays 2048 (ties to even), one rounding of the sum gives 2052; unroll_dim 0 is not summed.
    ones = view([1] * 6, f16, [6, 1])
    tri("trilinear_f16_summed_unroll_dim", view([2048, 1, 1, 1, 1, 1], f16, [6, 1]), ones, ones, [], [], [], [0, 1], 0)
    tri("trilinear_f16_summed_unroll_dim1", view([2048, 1, 1, 1, 1, 1], f16, [1, 6]), view([1] * 6, f16, [1, 6]),
        view([1] * 6, f16, [1, 6]), [], [], [], [1], 1)
    tri("trilinear_unroll_dim0", a, b, c, [], [], [], [1], 0)

    # F.linear_cross_entropy's chunked custom ops have no C shim: test_ops_linear.cpp runs
    # them through the proxy executor. inputs: input, linear_weight, target[, linear_bias]
    # [, weight]; ints: ignore_index, reduction (0 none, 1 mean, 2 sum), has bias, has
    # weight; floats: label_smoothing. The reference is F.cross_entropy(F.linear(...)),
    # which torch 2.13's eager op equals.
    def lce(name, x, w, t, b=None, cw=None, reduction="mean", ignore=-100, smoothing=0.0):
        r = F.cross_entropy(F.linear(x, w, b), t, weight=cw, ignore_index=ignore,
                            reduction=reduction, label_smoothing=smoothing)
        ins = [x, w, t] + ([b] if b is not None else []) + ([cw] if cw is not None else [])
        code = {"none": 0, "mean": 1, "sum": 2}[reduction]
        out.append(case(name, "linear_cross_entropy", ins,
                        [ignore, code, int(b is not None), int(cw is not None)], r,
                        floats=[smoothing]))

    F = torch.nn.functional
    lx = view(pattern(24, 1, 0.3), f32, [6, 4])
    lw = transposed(pattern(28, 2, 0.2), f32, [7, 4])
    lt = view([1, -100, 3, 6, 0, 2], torch.int64, [6])
    lce("lce_mean", lx, lw, lt)
    lce("lce_sum_bias", lx, lw, lt, b=view(pattern(7, 3, 0.5), f32, [7]), reduction="sum")
    lce("lce_none_weight", lx, lw, lt, cw=view([0.5, 1, 2, 0.25, 1, 3, 0.75], f32, [7]), reduction="none")
    lce("lce_mean_weight_smoothing", lx, lw, lt, cw=view([0.5, 1, 2, 0.25, 1, 3, 0.75], f32, [7]),
        smoothing=0.2)
    lce("lce_mean_smoothing_ignore_2", lx, lw, view([1, 2, 3, 2, 0, 2], torch.int64, [6]), ignore=2,
        smoothing=0.1)
    lce("lce_f64_strided_input", view(pattern(15, 4, 0.1), f64, [5, 3], [6, 2], 1),
        view(pattern(12, 5, 0.4), f64, [4, 3]), view([0, 3, 1, 1, 2], torch.int64, [5], [2], 1))
    lce("lce_all_ignored_mean_nan", lx, lw, view([-100] * 6, torch.int64, [6]))
    return out

# --- segment ---------------------------------------------------------------------------
# segment_reduce: inputs data, lengths or offsets; ints: reduce (0 sum 1 prod 2 mean 3 max
# 4 min), axis, unsafe, 1 when the second input is offsets; floats: initial (empty: None).
SEGMENT_REDUCES = ["sum", "prod", "mean", "max", "min"]


def segment_cases():
    out = []
    f32, i64 = torch.float32, torch.int64
    d = view([1, 2, 3, math.nan, 5, 6], f32, [6], [2], 1)
    lengths = view([2, 0, 3, 1], i64, [4])
    offs = view([0, 2, 2, 5, 6], torch.int32, [5], [2], 1)
    S = torch.ops.aten.segment_reduce

    def add(name, data, bounds, r, axis=0, unsafe=0, is_off=0, initial=None):
        kw = {"offsets" if is_off else "lengths": bounds}
        res = S(data, SEGMENT_REDUCES[r], axis=axis, unsafe=bool(unsafe), initial=initial, **kw)
        out.append(case(name, "segment_reduce", [data, bounds], [r, axis, unsafe, is_off], res,
                        floats=[] if initial is None else [initial]))
    for r, nm in enumerate(SEGMENT_REDUCES):
        add(f"segment_{nm}_lengths", d, lengths, r)
        add(f"segment_{nm}_initial", d, lengths, r, initial=10.0)
        add(f"segment_{nm}_offsets", d, offs, r, is_off=1)
    d2 = view(pattern(24, 1), f32, [3, 4, 2], [1, 6, 3])
    add("segment_sum_axis1_2d_lengths", d2, view([1, 3, 2, 2, 0, 4], i64, [3, 2]), 0, axis=1)
    add("segment_max_axis_negative", d2, view([0, 1, 4, 0, 2, 4, 0, 0, 4], i64, [3, 3]), 3, axis=-2, is_off=1)
    add("segment_mean_axis0_inner", d2, view([1, 2], i64, [2]), 2)
    add("segment_sum_unsafe_short", d, view([2, 2], i64, [2]), 0, unsafe=1)
    for dt in (torch.float16, torch.bfloat16, torch.float64):
        add(f"segment_mean_{DTYPES[dt][1:].lower()}", view(pattern(6, 2, 0.5), dt, [6]), lengths, 2, initial=1.0)
    return out

# --- distance --------------------------------------------------------------------------
# _cdist_forward: inputs x1, x2; ints: compute_mode (kNone: None); floats: p.
# _pdist_forward: inputs self; floats: p.
def distance_cases():
    out = []
    f32, f64 = torch.float32, torch.float64
    A = torch.ops.aten

    def cd(name, x1, x2, p, mode=None):
        out.append(case(name, "_cdist_forward", [x1, x2], [NONE if mode is None else mode],
                        A._cdist_forward(x1, x2, p, mode), floats=[p]))

    def pd(name, x, p):
        out.append(case(name, "_pdist_forward", [x], [], A._pdist_forward(x, p), floats=[p]))

    a = view(pattern(20, 1, 0.5), f32, [5, 4], [4, 1], 2)
    b = transposed(pattern(28, 3, 0.25), f32, [7, 4])
    for p, nm in ((0.0, "0"), (1.0, "1"), (2.0, "2"), (3.0, "3"), (math.inf, "inf"), (1.5, "1_5")):
        cd(f"cdist_p{nm}", a, b, p)
    cd("cdist_batch_strided", view(pattern(24, 2), f32, [2, 3, 4], [1, 8, 2]),
       view(pattern(40, 5, 0.5), f32, [2, 5, 4]), 2.0)
    cd("cdist_broadcast_f64", view(pattern(30, 1, 0.7), f64, [2, 1, 5, 3]),
       view(pattern(36, 4, 0.3), f64, [3, 4, 3]), 2.0)
    # No NaN rows: ATen's inf-norm ignores a NaN difference in cdist and propagates it in
    # pdist, and aotrt propagates it in both.
    # compute_mode 1 (use_mm_for_euclid_dist): ATen's matmul path, in float64 (its float32 one
    # accumulates in float32, which aotrt's double sums do not match to 1e-6).
    cd("cdist_mm_f64", view(pattern(90, 1, 0.3), f64, [30, 3]), view(pattern(24, 2), f64, [8, 3]), 2.0, 1)
    cd("cdist_empty", view([], f32, [0, 3]), view(pattern(6), f32, [2, 3]), 2.0)
    x = view(pattern(45, 2, 0.5), f32, [9, 5], [5, 1], 3)  # ATen: contiguous input only
    for p, nm in ((0.0, "0"), (1.0, "1"), (2.0, "2"), (math.inf, "inf"), (1.5, "1_5")):
        pd(f"pdist_p{nm}", x, p)
    pd("pdist_f64", view(pattern(28, 1, 0.25), f64, [7, 4]), 2.0)
    pd("pdist_one_row", view(pattern(4), f32, [1, 4]), 2.0)
    return out


# --- histogram -------------------------------------------------------------------------
# histogram_bin_ct: inputs self[, weight]; ints: bins, density; floats: range (empty: None);
# outputs hist, bin_edges. _histogramdd_from_bin_cts: inputs self[, weight]; ints: density,
# then the bins; floats: range (empty: None).
def histogram_cases():
    out = []
    f32, f64 = torch.float32, torch.float64
    A = torch.ops.aten
    x = view([1, 2, 1, 4, 5, -1, 3.99, 2.5], f32, [2, 4], [1, 2], 1)

    def h(name, x, bins, rng=None, w=None, density=0):
        r = A.histogram.bin_ct(x, bins, range=rng, weight=w, density=bool(density))
        out.append(case(name, "histogram_bin_ct", [x] + ([w] if w is not None else []), [bins, density],
                        list(r), floats=list(rng or [])))

    def dd(name, x, bins, rng=None, w=None, density=0):
        r = A._histogramdd_from_bin_cts(x, bins, range=rng, weight=w, density=bool(density))
        out.append(case(name, "_histogramdd_from_bin_cts", [x] + ([w] if w is not None else []),
                        [density, *bins], r, floats=list(rng or [])))
    h("histogram_data_range", x, 4)
    h("histogram_range_last_bin_closed", x, 4, [0.0, 4.0])
    h("histogram_nan_outside_range", view([1, math.nan, 3, 0.5], f32, [4]), 3, [0.0, 3.0])
    h("histogram_weight_density", x, 4, [0.0, 4.0], view(pattern(8, 1, 0.5), f32, [8], [2]), 1)
    h("histogram_constant_input", view([2, 2], f64, [2]), 3)
    h("histogram_empty_input", view([], f32, [0]), 3)
    h("histogram_f64_edges", view([0.1, 0.2, 0.3, 0.7], f64, [4]), 3, [0.1, 0.7])
    p = view([0, 0, 1, 1, 2, 0.5, 1.5, 2, 3, 3], f32, [5, 2], [1, 5])
    dd("histogramdd_data_range", p, [2, 3])
    dd("histogramdd_range_weight_density", p, [2, 3], [0.0, 2.0, 0.0, 2.0], view(pattern(5, 2), f32, [5]), 1)
    dd("histogramdd_3d_points_f64", view(pattern(24, 3, 0.5), f64, [2, 4, 3]), [2, 1, 3])

    # _histogramdd_bin_edges has no C shim (test_ops_histogram.cpp runs it through the proxy
    # executor). ints: bins; floats: range (none: None); outputs: one edge tensor per dim.
    def edges(name, x, bins, rng=None):
        r = A._histogramdd_bin_edges(x, bins, range=rng)
        out.append(case(name, "_histogramdd_bin_edges", [x], bins, list(r), floats=list(rng or [])))
    edges("histogramdd_edges_data_range", p, [2, 3])
    edges("histogramdd_edges_range", p, [4, 1], [-1.0, 2.0, 0.5, 0.5])
    edges("histogramdd_edges_f64_3d", view(pattern(24, 3, 0.3), f64, [2, 4, 3]), [3, 5, 2])
    edges("histogramdd_edges_many_bins", view(pattern(20, 1, 0.37), f32, [10, 2]), [17, 33])
    edges("histogramdd_edges_empty", view([], f32, [0, 2]), [2, 2])
    return out

# --- linalg ----------------------------------------------------------------------------
# lu_unpack: inputs LU_data, LU_pivots (lu_factor's, of pattern matrices); ints:
# unpack_data, unpack_pivots; outputs P, L, U.
def linalg_cases():
    out = []
    f32, f64 = torch.float32, torch.float64

    def add(name, a, data=1, piv=1, lu_view=None):
        lu, pivots, _ = torch.linalg.lu_factor_ex(a)  # singular pattern matrices are fine
        if lu_view is not None:
            lu = lu_view(lu)
        r = torch.ops.aten.lu_unpack(lu, pivots, bool(data), bool(piv))
        out.append(case(name, "lu_unpack", [lu, pivots], [data, piv], list(r)))
    sq = view(pattern(18, 1), f64, [2, 3, 3])
    add("lu_unpack_square_batch", sq)
    add("lu_unpack_wide", view(pattern(15, 2), f32, [3, 5]))
    add("lu_unpack_tall_strided", view(pattern(12, 3), f64, [4, 3]),
        lu_view=lambda lu: view(lu.reshape(-1).tolist(), f64, [4, 3], [1, 5], 2))
    add("lu_unpack_pivots_only", sq, 0, 1)
    add("lu_unpack_data_only", sq, 1, 0)

    # The other C-shim ops of the family, through the C ABI on every backend. ints:
    # triangular_solve upper, transpose, unitriangular; cholesky_solve and
    # cholesky_inverse upper; ormqr left, transpose.
    A = torch.ops.aten

    def tri(n, start, dtype, batch=(), upper=True):
        a = torch.tensor(pattern(n * n * math.prod(batch), start), dtype=dtype).reshape(*batch, n, n)
        a = a + 3 * n * torch.eye(n, dtype=dtype)
        return a.triu() if upper else a.tril()

    def spd(n, start, dtype, batch=()):
        a = torch.tensor(pattern(n * n * math.prod(batch), start), dtype=dtype).reshape(*batch, n, n)
        return a @ a.mT + n * torch.eye(n, dtype=dtype)

    def as_view(t, sizes, strides, offset=0):
        return view(t.reshape(-1).tolist(), t.dtype, sizes, strides, offset)

    t4 = tri(4, 1, f64, (2,))
    b42 = view(pattern(24, 2), f64, [3, 1, 4, 2], [8, 8, 1, 4], 0)  # batch broadcast vs [2]
    for name, a, b, ints in (
            ("triangular_solve_upper_bcast_f64", t4, b42, [1, 0, 0]),
            ("triangular_solve_lower_transpose_f32", tri(3, 2, f32, (), False), view(pattern(6, 1), f32, [3, 2]), [0, 1, 0]),
            ("triangular_solve_unit_strided_f32", as_view(tri(3, 4, f32), [3, 3], [1, 3]),
             view(pattern(12, 3), f32, [2, 3, 2], [1, 2, 6]), [1, 0, 1])):
        out.append(case(name, "triangular_solve", [b, a], ints,
                        list(A.triangular_solve(b, a, bool(ints[0]), bool(ints[1]), bool(ints[2])))))
    for upper in (0, 1):
        f = torch.linalg.cholesky(spd(4, upper, f64, (2,)), upper=bool(upper))
        rhs = view(pattern(16, 3), f64, [2, 4, 2], [1, 2, 8])
        out.append(case(f"cholesky_solve_{'upper' if upper else 'lower'}_f64", "cholesky_solve",
                        [rhs, f], [upper], A.cholesky_solve(rhs, f, bool(upper))))
        f32f = torch.linalg.cholesky(spd(3, upper + 2, f32), upper=bool(upper))
        out.append(case(f"cholesky_inverse_{'upper' if upper else 'lower'}_f32", "cholesky_inverse",
                        [f32f], [upper], A.cholesky_inverse(f32f, bool(upper))))
    for name, a in (("geqrf_tall_batch_f64", view(pattern(24, 3), f64, [2, 4, 3])),
                    ("geqrf_wide_strided_f32", view(pattern(12, 5), f32, [3, 4], [1, 3], 1))):
        out.append(case(name, "geqrf", [a], [], list(A.geqrf(a))))
    g, tau = A.geqrf(view(pattern(20, 1), f64, [5, 4]))
    for name, c, left, trans in (("ormqr_left_f64", view(pattern(10, 2), f64, [5, 2]), 1, 0),
                                 ("ormqr_right_transpose_f64", view(pattern(15, 4), f64, [3, 5], [1, 3]), 0, 1)):
        out.append(case(name, "ormqr", [g, tau, c], [left, trans],
                        A.ormqr(g, tau, c, bool(left), bool(trans))))
    return out

# --- linalg proxy ops ------------------------------------------------------------------
# The linalg ops without a C shim (served through the proxy executor), called on the
# family's functions; op is the ATen name. ints: linalg_qr mode (0 reduced, 1 complete,
# 2 r); _linalg_svd full_matrices, compute_uv; _linalg_eigh upper, compute_v; linalg_lu
# pivot; linalg_lu_solve left, adjoint; cholesky upper; linalg_pinv hermitian. Outputs
# whose values are unique are compared: singular vectors and eigenvectors are not (MKL and
# OpenBLAS pick other signs), so for svd, eigh and eig only the values are listed.
def linalgproxy_cases():
    out = []
    f32, f64 = torch.float32, torch.float64
    la = torch.linalg

    def wellcond(n, start, dtype, batch=()):
        a = torch.tensor(pattern(n * n * math.prod(batch), start), dtype=dtype).reshape(*batch, n, n)
        return a + 4 * n * torch.eye(n, dtype=dtype)

    def spd(n, start, dtype):
        a = torch.tensor(pattern(n * n, start), dtype=dtype).reshape(n, n)
        return a @ a.mT + n * torch.eye(n, dtype=dtype)

    def sym(n, start, dtype, batch=()):
        a = torch.tensor(pattern(n * n * math.prod(batch), start), dtype=dtype).reshape(*batch, n, n)
        return a + a.mT

    def as_view(t, sizes=None, strides=None, offset=0):
        """t's values in a view of these strides (default: t's transpose's layout)."""
        sizes = list(t.shape) if sizes is None else sizes
        return view(t.reshape(-1).tolist(), t.dtype, sizes, strides, offset)

    tall = view(pattern(30, 1), f64, [2, 5, 3], [1, 10, 2], 1)  # strided, offset
    wide = view(pattern(15, 2), f32, [3, 5])
    for name, a, mode in (("qr_tall_strided_complete", tall, 1), ("qr_wide_reduced", wide, 0),
                          ("qr_tall_r", tall, 2)):
        q, r = la.qr(a, mode=["reduced", "complete", "r"][mode])
        out.append(case(name, "linalg_qr", [a], [mode], [q, r]))
    g, tau = torch.geqrf(view(pattern(24, 3), f64, [2, 4, 3]))
    gv = as_view(g, [2, 4, 3], [12, 1, 4])
    out.append(case("householder_product_batch", "linalg_householder_product", [gv, tau], [],
                    la.householder_product(gv, tau)))
    out.append(case("svd_values_only_strided", "_linalg_svd", [tall], [0, 0],
                    list(torch.ops.aten._linalg_svd(tall, False, False))))
    out.append(case("svd_values_wide", "_linalg_svd", [wide], [0, 1],
                    [torch.ops.aten._linalg_svd(wide, False, True)[1]], ))
    s4 = as_view(sym(4, 2, f32, (2,)), [2, 4, 4], [16, 1, 4])
    out.append(case("eigh_values_upper", "_linalg_eigh", [s4], [1, 0],
                    list(torch.ops.aten._linalg_eigh(s4, "U", False))))
    # eig's complex eigenvalues as view_as_real (the test views aotrt's the same way).
    out.append(case("eig_values_f64", "linalg_eig", [wellcond(4, 5, f64)], [],
                    [torch.view_as_real(la.eig(wellcond(4, 5, f64))[0])]))
    out.append(case("eig_values_complex_pairs", "linalg_eig", [view(pattern(9, 0), f32, [3, 3], [1, 3])], [],
                    [torch.view_as_real(la.eig(view(pattern(9, 0), f32, [3, 3], [1, 3]))[0])]))
    for name, a in (("lu_tall_batch", view(pattern(24, 4), f32, [2, 4, 3])),
                    ("lu_wide_strided_f64", view(pattern(15, 6), f64, [3, 5], [1, 4], 2))):
        out.append(case(name, "linalg_lu", [a], [1], list(la.lu(a))))
    lu, piv = la.lu_factor(wellcond(4, 1, f64, (2,)))
    b = view(pattern(48, 2), f64, [3, 2, 4, 2], [16, 8, 1, 4], 1)  # broadcast batch, offset
    bt = view(pattern(16, 3), f64, [2, 2, 4])
    for name, rhs, left, adj in (("lu_solve_left_bcast", b, 1, 0), ("lu_solve_right_adjoint", bt, 0, 1),
                                 ("lu_solve_left_adjoint", b, 1, 1)):
        out.append(case(name, "linalg_lu_solve", [lu, piv, rhs], [left, adj],
                        la.lu_solve(lu, piv, rhs, left=bool(left), adjoint=bool(adj))))
    # A row-major LU at an offset and strided pivots: copied to LAPACK's layout first.
    lu_rm = view(lu.reshape(-1).tolist(), f64, [2, 4, 4], None, 3)
    piv_s = view(piv.reshape(-1).tolist(), torch.int32, [2, 4], [8, 2], 1)
    b_same = view(pattern(16, 5), f64, [2, 4, 2])  # LU's own batch: no broadcast copy
    out.append(case("lu_solve_row_major_lu", "linalg_lu_solve", [lu_rm, piv_s, b_same], [1, 0],
                    la.lu_solve(lu_rm, piv_s, b_same)))
    a5 = as_view(spd(5, 1, f32), [5, 5], [1, 5])
    for upper in (0, 1):
        out.append(case(f"cholesky_{'upper' if upper else 'lower'}", "cholesky", [a5], [upper],
                        torch.cholesky(a5, upper=bool(upper))))
    s5 = sym(5, 3, f64, (2,))
    ld, lpiv, info = la.ldl_factor_ex(s5)
    out.append(case("ldl_factor_batch", "linalg_ldl_factor_ex", [s5], [], [ld, lpiv, info]))
    rhs = view(pattern(30, 1), f64, [2, 5, 3], [15, 1, 5])
    out.append(case("ldl_solve_batch", "linalg_ldl_solve", [ld, lpiv, rhs], [], la.ldl_solve(ld, lpiv, rhs)))
    m3 = view([v * 0.1 for v in pattern(18, 2)], f32, [2, 3, 3], [9, 1, 3])
    out.append(case("matrix_exp_small_norms", "linalg_matrix_exp", [m3], [], la.matrix_exp(m3)))
    m4 = view([v * 0.7 for v in pattern(16, 4)], f64, [4, 4])
    out.append(case("matrix_exp_scaled_f64", "linalg_matrix_exp", [m4], [], la.matrix_exp(m4)))
    rank2 = torch.tensor(pattern(8, 1), dtype=f64).reshape(4, 2) @ torch.tensor(pattern(6, 3), dtype=f64).reshape(2, 3)
    out.append(case("pinv_rank_deficient", "linalg_pinv", [rank2], [0], la.pinv(rank2)))
    out.append(case("pinv_hermitian", "linalg_pinv", [s4], [1], la.pinv(s4, hermitian=True)))

    # The LU-, Cholesky- and triangular-solve ops. ints: linalg_solve_triangular upper,
    # left, unitriangular; _linalg_solve_ex left; linalg_cholesky_ex upper.
    t3 = wellcond(3, 2, f32, (2,)).triu()
    bt3 = view(pattern(12, 1), f32, [2, 2, 3])
    for name, a, b, ints in (("solve_triangular_upper_left_f64", wellcond(4, 3, f64).triu(),
                              view(pattern(8, 2), f64, [4, 2], [1, 4]), [1, 1, 0]),
                             ("solve_triangular_lower_right_unit_f32", t3.mT, bt3, [0, 0, 1])):
        out.append(case(name, "linalg_solve_triangular", [a, b], ints,
                        la.solve_triangular(a, b, upper=bool(ints[0]), left=bool(ints[1]),
                                            unitriangular=bool(ints[2]))))
    w3 = as_view(wellcond(3, 1, f32, (2,)), [2, 3, 3], [9, 1, 3])
    out.append(case("inv_ex_batch_f32", "linalg_inv_ex", [w3], [], list(la.inv_ex(w3))))
    w4 = wellcond(4, 2, f64)
    out.append(case("inv_ex_f64", "linalg_inv_ex", [w4], [], list(la.inv_ex(w4))))
    bvec = view(pattern(4, 3), f64, [4])
    out.append(case("solve_ex_vector_f64", "_linalg_solve_ex", [w4, bvec], [1],
                    list(torch.ops.aten._linalg_solve_ex(w4, bvec))))
    bright = view(pattern(12, 2), f32, [2, 2, 3])
    out.append(case("solve_ex_right_batch_f32", "_linalg_solve_ex", [w3, bright], [0],
                    list(torch.ops.aten._linalg_solve_ex(w3, bright, left=False))))
    for name, a in (("lu_factor_ex_tall_f32", view(pattern(12, 2), f32, [4, 3])),
                    ("lu_factor_ex_wide_batch_f64", view(pattern(30, 1), f64, [2, 3, 5], [15, 1, 3]))):
        out.append(case(name, "linalg_lu_factor_ex", [a], [], list(la.lu_factor_ex(a))))
    spd2 = torch.stack([spd(4, 1, f64), spd(4, 6, f64)])
    for upper in (0, 1):
        out.append(case(f"cholesky_ex_{'upper' if upper else 'lower'}_f64", "linalg_cholesky_ex",
                        [spd2], [upper], list(la.cholesky_ex(spd2, upper=bool(upper)))))
    out.append(case("det_batch_f64", "_linalg_det", [wellcond(4, 1, f64, (3,))], [],
                    list(torch.ops.aten._linalg_det(wellcond(4, 1, f64, (3,))))))
    d3 = as_view(wellcond(3, 5, f32) - 20 * torch.eye(3), [3, 3], [1, 3])
    out.append(case("slogdet_negative_f32", "_linalg_slogdet", [d3], [],
                    list(torch.ops.aten._linalg_slogdet(d3))))
    # Singular vectors and eigenvectors up to sign: |U|, S, |Vh| and w, |V| (distinct
    # values, reduced U and Vh so each column is unique up to its sign); op *_abs.
    for name, a, full in (("svd_vectors_tall_f64", tall, 0), ("svd_vectors_square_full_f32", w3, 1)):
        u, sv, vh = torch.ops.aten._linalg_svd(a, bool(full), True)
        out.append(case(name, "_linalg_svd_abs", [a], [full, 1], [u.abs(), sv, vh.abs()]))
    s5b = as_view(sym(5, 1, f64, (2,)), [2, 5, 5], [25, 1, 5])
    w, v = torch.ops.aten._linalg_eigh(s5b, "L", True)
    out.append(case("eigh_vectors_lower_f64", "_linalg_eigh_abs", [s5b], [0, 1], [w, v.abs()]))
    return out

# --- pointwise -------------------------------------------------------------------------
# ints: a bitmask of the inputs that are complex (given as torch.view_as_real of them, the
# test views them back with view_as_complex); complex outputs are recorded as view_as_real
# of them. floats: the op's doubles (add: alpha; add_Scalar: other, alpha; mul_Scalar:
# other; pow_Tensor_Scalar: exponent; pow_Scalar: self).
def pointwise_cases():
    out = []
    f32, f64, c64, c128, i64, i32 = (torch.float32, torch.float64, torch.complex64, torch.complex128,
                                     torch.int64, torch.int32)

    def cview(n, dtype, sizes, strides=None, offset=0, start=0):
        re = view(pattern(n, start, 0.5), torch.float64, sizes, strides, offset)
        im = view(pattern(n, start + 3, 0.25), torch.float64, sizes, strides, offset)
        buf = torch.full((re.storage().size() if False else 1,), 0, dtype=dtype)
        strides = contiguous_strides(sizes) if strides is None else strides
        extent = offset + 1 + sum((sz - 1) * st for sz, st in zip(sizes, strides))
        buf = torch.full((extent + 1,), -77, dtype=dtype)
        v = torch.as_strided(buf, sizes, strides, offset)
        v.copy_(torch.complex(re.contiguous(), im.contiguous()).to(dtype))
        return v

    def add(name, op, inputs, r, floats=()):
        mask = sum(1 << i for i, t in enumerate(inputs) if t.is_complex())
        ins = [torch.view_as_real(t) if t.is_complex() else t for t in inputs]
        res = torch.view_as_real(r) if r.is_complex() else r
        out.append(case(name, op, ins, [mask], res, floats=list(floats)))
    zc = cview(6, c64, [2, 3], [1, 2], 1)
    zd = cview(6, c128, [3, 2], start=2)
    x = view([-1.5, 0, math.nan, 2, -0.0, 3], f32, [2, 3], [1, 2])
    add("abs_complex_strided", "abs", [zc], torch.abs(zc))
    add("abs_float", "abs", [x], torch.abs(x))
    add("abs_int", "abs", [view([-3, 0, 4], i32, [3])], torch.abs(view([-3, 0, 4], i32, [3])))
    add("angle_complex", "angle", [zd], torch.angle(zd))
    add("angle_float_nan", "angle", [x], torch.angle(x))
    add("angle_int_to_float", "angle", [view([-3, 0, 4], i64, [3])], torch.angle(view([-3, 0, 4], i64, [3])))
    zb = cview(3, c64, [3], start=5)
    add("add_complex_broadcast_alpha", "add_Tensor", [zc, zb], torch.add(zc, zb, alpha=2.0), [2.0])
    z0 = cview(1, c128, [], start=4)
    add("add_float_with_0d_complex", "add_Tensor", [x, z0], torch.add(x, z0), [1.0])
    add("add_complex64_float64", "add_Tensor", [zc, view(pattern(6, 1), f64, [2, 3])],
        torch.add(zc, view(pattern(6, 1), f64, [2, 3])), [1.0])
    add("add_scalar_complex", "add_Scalar", [zc], torch.add(zc, 1.5, alpha=-1.0), [1.5, -1.0])
    add("add_scalar_int_stays_int", "add_Scalar", [view([1, 2, 3], i32, [3])],
        torch.add(view([1, 2, 3], i32, [3]), 2), [2.0, 1.0])
    add("add_scalar_int_float", "add_Scalar", [view([1, 2, 3], i32, [3])],
        torch.add(view([1, 2, 3], i32, [3]), 2.5), [2.5, 1.0])
    zt = cview(6, c128, [3, 2], [1, 3], 0, 7)
    add("mul_complex_transposed", "mul_Tensor", [zd, zt], torch.mul(zd, zt))
    add("mul_scalar_complex", "mul_Scalar", [zc], torch.mul(zc, 0.5), [0.5])
    for e in (2.0, 1.5, -1.0):
        add(f"pow_complex_scalar_{str(e).replace('.', '_').replace('-', 'm')}", "pow_Tensor_Scalar", [zc],
            torch.pow(zc, e), [e])
    add("pow_float_sqrt", "pow_Tensor_Scalar", [view([4, 2, 0.25], f32, [3])], torch.pow(view([4, 2, 0.25], f32, [3]), 0.5), [0.5])
    add("pow_int_cube", "pow_Tensor_Scalar", [view([-2, 3, 5], i64, [3])], torch.pow(view([-2, 3, 5], i64, [3]), 3), [3.0])
    zz = cview(2, c64, [2], start=1)
    zz = torch.stack([torch.zeros((), dtype=c64), zz[1]])
    add("pow_complex_tensor_zero_zero", "pow_Tensor_Tensor", [zz, torch.zeros(2, dtype=c64)],
        torch.pow(zz, torch.zeros(2, dtype=c64)))
    add("pow_complex_tensor", "pow_Tensor_Tensor", [zc, zb], torch.pow(zc, zb))
    ib, ie = view([2, -1, 1, 3, -2], i64, [5]), view([3, -3, -5, 0, -1], i64, [5])
    add("pow_int_negative_exponents", "pow_Tensor_Tensor", [ib, ie], torch.pow(ib, ie))
    add("pow_scalar_base_int", "pow_Scalar", [view([0, 1, 5], i64, [3])], torch.pow(2, view([0, 1, 5], i64, [3])), [2.0])
    add("pow_scalar_base_float", "pow_Scalar", [view([0, 1, 5], i64, [3])], torch.pow(2.5, view([0, 1, 5], i64, [3])), [2.5])
    ab, an = view([1, 2, 0.5], f32, [3]), view([0.5, 3, -1], f32, [3], [2], 1)
    add("polar_f32", "polar", [ab, an], torch.polar(ab, an))
    add("polar_f64_broadcast", "polar", [ab.double(), view([0.25], f64, [1])], torch.polar(ab.double(), view([0.25], f64, [1])))
    ga, gb = view([-4, 0, 6, -9, 7], i64, [5]), view([6, 0, -4, 0, 7], i64, [5])
    add("gcd_int64", "gcd", [ga, gb], torch.gcd(ga, gb))
    add("gcd_int32_broadcast", "gcd", [ga.int().reshape(5, 1), view([12, 18], i32, [2])],
        torch.gcd(ga.int().reshape(5, 1), view([12, 18], i32, [2])))
    # c_shim_aten.h's subtract.Tensor (floats: alpha).
    sa, sb = transposed(pattern(6), f32, [2, 3]), view(pattern(3, 4), f32, [3], [2], 1)
    add("aten_subtract_broadcast_alpha", "aten_subtract_Tensor", [sa, sb], torch.sub(sa, sb, alpha=2.5), [2.5])
    add("aten_subtract_complex", "aten_subtract_Tensor", [zc, zb], torch.sub(zc, zb), [1.0])
    ua, ub = view([1, 200, 7], torch.uint8, [3]), view([3, 100, 250], torch.uint8, [3])
    add("aten_subtract_uint8_wraps", "aten_subtract_Tensor", [ua, ub], torch.sub(ua, ub, alpha=2), [2.0])
    add("aten_subtract_int_float_promotes", "aten_subtract_Tensor", [view([1, 2, 3], i32, [3]), view([0.5], f64, [])],
        torch.sub(view([1, 2, 3], i32, [3]), view([0.5], f64, [])), [1.0])
    return out


# --- complex ---------------------------------------------------------------------------
# Ops served through the proxy executor (test_ops_complex.cpp builds each one's extern
# node). ints: the mask of complex inputs (passed as view_as_real), then per op:
# convert_element_type: the serialised dtype code; clone: the serialised memory format
# (kNone: left out); constant_pad_nd: the pad list; index_add: dim. floats: the pad
# value / index_add's alpha. Complex outputs as view_as_real (complex32 ones of their
# complex64 copy).
SERIAL_DTYPE = {torch.complex32: 9, torch.complex64: 10, torch.complex128: 11, torch.float32: 7,
                torch.float64: 8, torch.int64: 5, torch.bool: 12}


def complex_cases():
    out = []
    f16, f32, f64, c64, c128, i64 = (torch.float16, torch.float32, torch.float64, torch.complex64,
                                     torch.complex128, torch.int64)

    def cview(n, dtype, sizes, strides=None, offset=0, start=0):
        re = torch.tensor(pattern(n, start, 0.5), dtype=torch.float64).reshape(sizes)
        im = torch.tensor(pattern(n, start + 3, 0.25), dtype=torch.float64).reshape(sizes)
        strides = contiguous_strides(sizes) if strides is None else strides
        extent = offset + 1 + sum((sz - 1) * st for sz, st in zip(sizes, strides))
        buf = torch.full((extent + 1,), -77, dtype=dtype)
        v = torch.as_strided(buf, sizes, strides, offset)
        v.copy_(torch.complex(re, im).to(dtype))
        return v

    def real_out(r):
        if r.is_conj():  # _conj's lazy view: its values resolved, its own strides kept
            r = torch.empty_strided(r.shape, r.stride(), dtype=r.dtype).copy_(r)
        if r.dtype == torch.complex32:
            r = r.to(c64)
        return torch.view_as_real(r) if r.is_complex() else r

    def add(name, op, inputs, ints, r, floats=()):
        mask = sum(1 << i for i, t in enumerate(inputs) if t.is_complex())
        ins = [torch.view_as_real(t) if t.is_complex() else t for t in inputs]
        out.append(case(name, op, ins, [mask] + list(ints), real_out(r), floats=list(floats)))

    a, b = transposed(pattern(6), f32, [2, 3]), transposed(pattern(6, 2), f32, [2, 3])
    add("complex_transposed", "complex", [a, b], [], torch.complex(a, b))
    ad, bd = view(pattern(4, 1), f64, [4, 1], [3, 1], 2), view(pattern(3, 5), f64, [3], [2])
    add("complex_broadcast_f64", "complex", [ad, bd], [], torch.complex(ad, bd))
    ah, bh = view(pattern(3, 1, 0.5), f16, [3]), view(pattern(3, 2, 0.25), f16, [3], [2], 1)
    add("complex_half_to_complex32", "complex", [ah, bh], [], torch.complex(ah, bh))

    zs = cview(6, c64, [2, 3], [1, 4], 1)  # non-dense: gaps between columns
    add("conj_nondense_keeps_strides", "_conj", [zs], [], torch._conj(zs))
    zd = cview(6, c128, [3, 2], [1, 3])  # transposed
    add("conj_transposed_c128", "_conj", [zd], [], torch._conj(zd))
    xr = view(pattern(6), f32, [2, 3], [1, 2])
    add("conj_physical_nondense_contiguous", "_conj_physical", [zs], [], torch._conj_physical(zs))
    add("conj_physical_transposed_kept", "_conj_physical", [zd], [], torch._conj_physical(zd))
    add("conj_physical_real", "_conj_physical", [xr], [], torch._conj_physical(xr))

    cet = torch.ops.prims.convert_element_type
    xt = transposed(pattern(12), f32, [3, 4])
    add("convert_f32_c64_transposed", "convert_element_type", [xt], [10], cet(xt, c64))
    xs = view(pattern(6), f32, [2, 3], [6, 2], 1)
    add("convert_f32_c128_nondense", "convert_element_type", [xs], [11], cet(xs, c128))
    xi = view([3, -2, 0, 7], i64, [4], [2])
    add("convert_i64_c64", "convert_element_type", [xi], [10], cet(xi, c64))
    xb = view([1, 0, 1], torch.bool, [3])
    add("convert_bool_c128", "convert_element_type", [xb], [11], cet(xb, c128))
    add("convert_f32_complex32", "convert_element_type", [view(pattern(4, 0, 0.5), f32, [4])], [9],
        cet(view(pattern(4, 0, 0.5), f32, [4]), torch.complex32))
    zc = cview(4, c64, [4], start=1)
    add("convert_c64_f64_drops_imag", "convert_element_type", [zc], [8], cet(zc, f64))

    x4 = view(pattern(24), f32, [1, 2, 3, 4], [24, 1, 8, 2])  # channels-last
    add("clone_preserve_channels_last", "clone", [x4], [NONE], x4.clone())
    add("clone_contiguous_format", "clone", [x4], [1], x4.clone(memory_format=torch.contiguous_format))
    x4c = view(pattern(24), f32, [1, 2, 3, 4])
    add("clone_channels_last", "clone", [x4c], [2], x4c.clone(memory_format=torch.channels_last))
    add("clone_complex_nondense", "clone", [zs], [NONE], zs.clone())

    add("constant_pad_nd_channels_last", "constant_pad_nd", [x4], [4, 1, 1, 0, 2],
        torch.constant_pad_nd(x4, [1, 1, 0, 2], 1.5), [1.5])
    add("constant_pad_nd_complex_crop", "constant_pad_nd", [zs], [4, -1, 2, 1, 0],
        torch.constant_pad_nd(zs, [-1, 2, 1, 0]), [0.0])
    xbi = view([1, 0, 1, 1], torch.bool, [2, 2])
    add("constant_pad_nd_bool", "constant_pad_nd", [xbi], [2, 1, 1], torch.constant_pad_nd(xbi, [1, 1], 1), [1.0])
    xi32 = view([3, -2, 0, 7, 5, 6], torch.int32, [3, 2], [1, 3])
    add("constant_pad_nd_int_transposed", "constant_pad_nd", [xi32], [2, 0, 2], torch.constant_pad_nd(xi32, [0, 2], 4), [4.0])

    bf = torch.bfloat16
    s5 = view(pattern(15, 0, 0.5), bf, [5, 3], [1, 5])  # column-major self
    src = view(pattern(12, 3, 0.75), bf, [4, 3])
    ix = view([0, 2, 2, 4], i64, [4])
    add("index_add_bf16_duplicates", "index_add", [s5, ix, src], [0], s5.index_add(0, ix, src), [1.0])
    # 1 + 2^-8 + 2^-8: 1 when rounded after each add (bfloat16 keeps 8 bits), 1 + 2^-7 when
    # summed in float first (ATen's scatter_add path: dim 0 or last, int64 index).
    tiny = 2.0 ** -8
    ones = view([1] * 6, bf, [3, 2])
    add("index_add_bf16_scatter_path_sums_in_float", "index_add",
        [ones, view([1, 1], i64, [2]), view([tiny] * 4, bf, [2, 2])], [0],
        ones.index_add(0, view([1, 1], i64, [2]), view([tiny] * 4, bf, [2, 2])), [1.0])
    add("index_add_bf16_int32_index_rounds_each_add", "index_add",
        [ones, view([1, 1], torch.int32, [2]), view([tiny] * 4, bf, [2, 2])], [0],
        ones.index_add(0, view([1, 1], torch.int32, [2]), view([tiny] * 4, bf, [2, 2])), [1.0])
    ones3 = view([1] * 6, bf, [2, 3, 1])
    add("index_add_bf16_middle_dim_rounds_each_add", "index_add",
        [ones3, view([1, 1], i64, [2]), view([tiny] * 4, bf, [2, 2, 1])], [1],
        ones3.index_add(1, view([1, 1], i64, [2]), view([tiny] * 4, bf, [2, 2, 1])), [1.0])
    s6 = view(pattern(18, 1), f32, [3, 6])
    src6 = view(pattern(9, 2), f32, [3, 3], [1, 3])
    ix6 = view([5, 0, 5], torch.int32, [3], [2], 1)
    add("index_add_f32_dim1_alpha", "index_add", [s6, ix6, src6], [1], s6.index_add(1, ix6, src6, alpha=2.0), [2.0])
    return out


# --- reduce ----------------------------------------------------------------------------
# c_shim_aten.h's amax. ints: keepdim, then the dims.
def amax_cases():
    out = []
    f32, i64 = torch.float32, torch.int64
    nan = math.nan

    def add(name, x, dims, keepdim):
        out.append(case(name, "amax", [x], [int(keepdim)] + list(dims), torch.amax(x, dims, keepdim)))
    x = view(pattern(24), f32, [2, 3, 4], [1, 2, 6], 0)  # permuted memory
    add("amax_one_dim", x, [1], False)
    add("amax_two_dims_keepdim", x, [0, -1], True)
    add("amax_all_dims_empty_list", x, [], False)
    xn = view([1, nan, 3, -2, 5, 0], f32, [2, 3], [1, 2])
    add("amax_nan_propagates", xn, [1], False)
    add("amax_nan_first_element", view([nan, 1, 2, 3], f32, [2, 2]), [0], True)
    add("amax_int64_offset", view([3, -9, 7, 2, 2, 8], i64, [3, 2], [2, 1], 0), [0], False)
    add("amax_bool", view([0, 1, 0, 0], torch.bool, [2, 2]), [1], False)
    add("amax_bf16", view(pattern(6, 0, 0.5), torch.bfloat16, [3, 2]), [0], True)
    add("amax_0d", view([4.5], f32, []), [0], False)
    add("amax_empty_other_dim", view([], f32, [0, 3]), [1], False)
    return out


# --- pooling ---------------------------------------------------------------------------
# ints: int lists as a length then the elements, scalars as themselves, in the shim's
# argument order (see test_ops_pooling.cpp's Ints reader). inputs: self (then indices,
# random_samples or grid).
def pooling_cases():
    out = []
    f32, f64, bf16, f16 = torch.float32, torch.float64, torch.bfloat16, torch.float16
    aten = torch.ops.aten

    def ramp(n, start=0, scale=0.1):
        return [((i * 37 + start) % 101 - 50) * scale for i in range(n)]

    def lists(*ls):
        r = []
        for x in ls:
            if isinstance(x, (list, tuple)):
                r += [len(x), *x]
            else:
                r.append(NONE if x is None else int(x))
        return r

    def cl(values, dtype, sizes, offset=0):
        """A channels-last (4-d) or channels_last_3d (5-d) view."""
        n, c, *sp = sizes
        st, step = [0] * len(sizes), c
        st[1] = 1
        for d in range(len(sizes) - 1, 1, -1):
            st[d] = step
            step *= sizes[d]
        st[0] = step
        return view(values, dtype, sizes, st, offset)

    def maxp(name, x, k, s, p, d, ceil):
        nd = len(k) if len(k) > 1 else x.dim() - 2
        fn = aten.max_pool2d_with_indices if x.dim() - 1 <= 3 and nd == 2 else aten.max_pool3d_with_indices
        op = "max_pool2d_with_indices" if fn is aten.max_pool2d_with_indices else "max_pool3d_with_indices"
        out.append(case(name, op, [x], lists(k, s, p, d, ceil), fn(x, k, s, p, d, bool(ceil))))

    def avgp(name, x, k, s, p, ceil, cip, div, op="avg_pool2d"):
        fn = getattr(aten, op)
        out.append(case(name, op, [x], lists(k, s, p, ceil, cip, div), fn(x, k, s, p, bool(ceil), bool(cip), div)))

    def adap(name, op, x, size):
        out.append(case(name, op, [x], lists(size), getattr(aten, op)(x, size)))

    x4 = view(ramp(2 * 3 * 7 * 9), f32, [2, 3, 7, 9])
    maxp("max2d_basic", x4, [3, 3], [2, 2], [1, 1], [1, 1], 0)
    maxp("max2d_ceil_dilation", x4, [3, 2], [2, 3], [1, 0], [2, 1], 1)
    maxp("max2d_empty_stride_single_ints", x4, [2], [], [0], [1], 0)
    maxp("max2d_channels_last", cl(ramp(2 * 3 * 7 * 9, 5), f32, [2, 3, 7, 9]), [3, 3], [2, 2], [1, 1], [1, 1], 1)
    maxp("max2d_gapped_offset", view(ramp(3 * 5 * 6, 2), f32, [3, 5, 6], [70, 13, 2], 3), [2, 3], [1, 2], [1, 1], [1, 1], 0)
    maxp("max2d_transposed_hw", view(ramp(2 * 5 * 6, 9), f64, [1, 2, 5, 6], [60, 30, 1, 5]), [2, 2], [2, 2], [0, 1], [1, 1], 1)
    nanx = ramp(2 * 4 * 4, 1)
    nanx[5] = math.nan; nanx[6] = math.nan; nanx[20] = math.inf; nanx[21] = -math.inf
    maxp("max2d_nan_wins", view(nanx, f32, [2, 4, 4]), [2, 2], [2, 2], [0, 0], [1, 1], 0)
    nancl = ramp(1 * 3 * 4 * 4, 2)
    for i in (3, 4, 17, 30, 31):
        nancl[i] = math.nan
    maxp("max2d_nan_channels_last", cl(nancl, f32, [1, 3, 4, 4]), [2, 2], [1, 1], [1, 1], [1, 1], 0)
    maxp("max3d_nan_ties", view([1, 1, math.nan, 2, 2, math.nan, 0, 2], f32, [1, 1, 2, 2, 2]), [2, 2, 2], [], [0, 0, 0], [1, 1, 1], 0)
    adap("amax2d_nan_channels_last", "adaptive_max_pool2d", cl(nancl, f32, [1, 3, 4, 4]), [3, 2])
    maxp("max2d_bf16", view(ramp(2 * 6 * 6, 3), bf16, [2, 6, 6]), [3, 3], [2, 2], [1, 1], [1, 1], 1)
    maxp("max2d_f16", view(ramp(2 * 6 * 6, 4), f16, [1, 2, 6, 6]), [2, 2], [1, 1], [1, 0], [1, 2], 0)
    maxp("max2d_int64", view(pattern(2 * 5 * 5, 3), torch.int64, [2, 5, 5]), [2, 2], [2, 2], [1, 1], [1, 1], 1)
    x5 = view(ramp(2 * 2 * 5 * 6 * 7), f32, [2, 2, 5, 6, 7])
    maxp("max3d_basic", x5, [3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1], 0)
    maxp("max3d_ceil_dilation", x5, [2, 3, 2], [2, 2, 3], [1, 1, 0], [2, 1, 2], 1)
    maxp("max3d_channels_last_3d", cl(ramp(2 * 3 * 4 * 5 * 6, 7), f32, [2, 3, 4, 5, 6]), [2, 2, 2], [2, 2, 2], [1, 0, 1], [1, 1, 1], 1)
    maxp("max3d_unbatched_f64", view(ramp(2 * 4 * 5 * 6, 8), f64, [2, 4, 5, 6], [150, 30, 6, 1], 1), [2, 2, 2], [1, 2, 2], [0, 1, 1], [1, 1, 1], 0)
    maxp("max2d_empty_batch", view([], f32, [0, 2, 5, 5]), [2, 2], [2, 2], [0, 0], [1, 1], 0)
    avgp("avg3d_empty_batch", view([], f64, [0, 2, 3, 4, 4]), [2, 2, 2], [], [0, 0, 0], 0, 1, None, "avg_pool3d")
    adap("aavg2d_zero_output", "_adaptive_avg_pool2d", view(ramp(2 * 3 * 3), f32, [2, 3, 3]), [0, 2])
    maxp("max3d_bf16", view(ramp(1 * 2 * 4 * 4 * 4, 9), bf16, [1, 2, 4, 4, 4]), [2, 2, 2], [], [0, 0, 0], [1, 1, 1], 0)

    avgp("avg2d_basic", x4, [3, 3], [2, 2], [1, 1], 0, 1, None)
    avgp("avg2d_exclude_pad_ceil", x4, [3, 2], [2, 3], [1, 1], 1, 0, None)
    avgp("avg2d_include_pad_ceil", x4, [3, 3], [2, 2], [1, 1], 1, 1, None)
    avgp("avg2d_divisor_override", x4, [2, 3], [1, 2], [1, 0], 0, 1, 5)
    avgp("avg2d_channels_last", cl(ramp(2 * 3 * 7 * 9, 5), f32, [2, 3, 7, 9]), [3, 3], [2, 2], [1, 1], 1, 0, None)
    avgp("avg2d_unbatched_gapped", view(ramp(3 * 5 * 6, 2), f32, [3, 5, 6], [70, 13, 2], 3), [2, 2], [], [1, 1], 0, 1, None)
    avgp("avg2d_bf16", view(ramp(2 * 6 * 6, 3), bf16, [2, 6, 6]), [3, 3], [2, 2], [1, 1], 1, 1, None)
    avgp("avg2d_f16", view(ramp(2 * 6 * 6, 3), f16, [1, 2, 6, 6]), [2, 2], [2, 2], [0, 0], 0, 1, None)
    avgp("avg2d_f64", view(ramp(2 * 6 * 6, 3), f64, [1, 2, 6, 6]), [3, 2], [2, 1], [1, 1], 0, 0, None)
    avgp("avg2d_int64_truncates", view(pattern(2 * 5 * 5, 3), torch.int64, [2, 5, 5]), [2, 2], [2, 2], [1, 1], 1, 0, None)
    avgp("avg3d_basic", x5, [3, 3, 3], [2, 2, 2], [1, 1, 1], 0, 1, None, "avg_pool3d")
    avgp("avg3d_exclude_pad_ceil", x5, [2, 3, 2], [2, 2, 3], [1, 1, 0], 1, 0, None, "avg_pool3d")
    avgp("avg3d_divisor", view(ramp(2 * 4 * 5 * 6, 8), f64, [2, 4, 5, 6], [150, 30, 6, 1], 1), [2, 2, 2], [1, 2, 2], [0, 1, 1], 0, 1, 3, "avg_pool3d")
    avgp("avg3d_channels_last_3d_contiguous_out", cl(ramp(2 * 3 * 4 * 5 * 6, 7), f32, [2, 3, 4, 5, 6]), [2, 2, 2], [2, 2, 2], [1, 0, 1], 1, 1, None, "avg_pool3d")

    adap("aavg2d_uneven_bins", "_adaptive_avg_pool2d", x4, [4, 5])
    adap("aavg2d_channels_last", "_adaptive_avg_pool2d", cl(ramp(2 * 3 * 7 * 9, 5), f32, [2, 3, 7, 9]), [3, 4])
    adap("aavg2d_unbatched_bf16", "_adaptive_avg_pool2d", view(ramp(3 * 5 * 7, 1), bf16, [3, 5, 7]), [2, 3])
    adap("aavg2d_f16_upsamples", "_adaptive_avg_pool2d", view(ramp(1 * 2 * 3 * 3, 1), f16, [1, 2, 3, 3]), [5, 4])
    adap("aavg3d_uneven", "_adaptive_avg_pool3d", x5, [2, 4, 3])
    adap("aavg3d_unbatched_f64_gapped", "_adaptive_avg_pool3d", view(ramp(2 * 4 * 5 * 6, 8), f64, [2, 4, 5, 6], [150, 30, 6, 1], 1), [3, 2, 4])
    adap("aavg3d_channels_last_3d", "_adaptive_avg_pool3d", cl(ramp(2 * 3 * 4 * 5 * 6, 7), f32, [2, 3, 4, 5, 6]), [3, 3, 3])
    adap("amax2d_uneven", "adaptive_max_pool2d", x4, [4, 5])
    adap("amax2d_channels_last", "adaptive_max_pool2d", cl(ramp(2 * 3 * 7 * 9, 5), f32, [2, 3, 7, 9]), [3, 4])
    adap("amax2d_nan", "adaptive_max_pool2d", view(nanx, f32, [2, 4, 4]), [3, 3])
    adap("amax2d_bf16", "adaptive_max_pool2d", view(ramp(3 * 5 * 7, 1), bf16, [3, 5, 7]), [2, 3])
    adap("amax3d_uneven", "adaptive_max_pool3d", x5, [2, 4, 3])
    adap("amax3d_unbatched_f64", "adaptive_max_pool3d", view(ramp(2 * 4 * 5 * 6, 8), f64, [2, 4, 5, 6], [150, 30, 6, 1], 1), [3, 2, 4])

    def frac(name, x, k, size, samples):
        op = f"fractional_max_pool{len(k)}d"
        out.append(case(name, op, [x, samples], lists(k, size), getattr(aten, op)(x, k, size, samples)))

    frac("frac2d_basic", x4, [2, 3], [4, 5], view([0.1, 0.9, 0.5, 0.3, 0.77, 0.01, 0.45, 0.6, 0.2, 0.99, 0.7, 0.35], f32, [2, 3, 2]))
    frac("frac2d_unbatched_channels_strided", view(ramp(3 * 8 * 9, 4), f64, [3, 8, 9], [1, 27, 3]), [3, 2], [3, 5],
         view([0.25, 0.75, 0.5, 0.5, 0.95, 0.05], f64, [1, 3, 2]))
    frac("frac2d_bf16", view(ramp(2 * 7 * 7, 2), bf16, [1, 2, 7, 7]), [2, 2], [4, 3], view([0.3, 0.6, 0.9, 0.1], bf16, [1, 2, 2]))
    frac("frac2d_out1", view(ramp(2 * 7 * 7, 2), f32, [1, 2, 7, 7]), [2, 3], [1, 1], view([0.3, 0.6, 0.9, 0.1], f32, [1, 2, 2]))
    frac("frac3d_basic", x5, [2, 2, 3], [3, 4, 4],
         view([0.1, 0.5, 0.9, 0.3, 0.7, 0.2, 0.6, 0.4, 0.8, 0.05, 0.95, 0.55], f32, [2, 2, 3]))

    def unpool(name, x, k, nd, size, dtype=f32):
        pool = aten.max_pool2d_with_indices if nd == 2 else aten.max_pool3d_with_indices
        v, i = pool(x, k, k, [0] * nd, [1] * nd, False)
        if nd == 2:
            r = aten.max_unpool2d(v, i, size)
            out.append(case(name, "max_unpool2d", [v, i], lists(size), r))
        else:
            r = aten.max_unpool3d(v, i, size, k, [0] * nd)
            out.append(case(name, "max_unpool3d", [v, i], lists(size, k, [0] * nd), r))

    unpool("unpool2d_basic", x4, [2, 2], 2, [7, 9])
    unpool("unpool2d_channels_last", cl(ramp(2 * 3 * 7 * 9, 5), f32, [2, 3, 7, 9]), [2, 3], 2, [6, 9])
    unpool("unpool2d_unbatched_larger_out", view(ramp(3 * 4 * 6, 1), f64, [3, 4, 6]), [2, 2], 2, [5, 7])
    unpool("unpool3d_basic", x5, [2, 2, 2], 3, [5, 6, 7])
    unpool("unpool3d_unbatched", view(ramp(2 * 4 * 4 * 6, 3), f32, [2, 4, 4, 6]), [2, 2, 3], 3, [5, 4, 7])
    # strided input and indices
    v, i = aten.max_pool2d_with_indices(x4, [2, 2], [2, 2], [0, 0], [1, 1], False)
    vt, it = v.transpose(2, 3).contiguous().transpose(2, 3), i.transpose(2, 3).contiguous().transpose(2, 3)
    out.append(case("unpool2d_strided_inputs", "max_unpool2d", [vt, it], lists([7, 9]), aten.max_unpool2d(vt, it, [7, 9])))

    def grid(name, x, g, mode, pad, align):
        out.append(case(name, "grid_sampler_3d", [x, g], [mode, pad, align], aten.grid_sampler_3d(x, g, mode, pad, bool(align))))

    xs = view(ramp(2 * 2 * 3 * 4 * 5, 3), f32, [2, 2, 3, 4, 5])
    gv = [((i * 29 + 7) % 53) / 53 * 2.6 - 1.3 for i in range(2 * 2 * 3 * 2 * 3)]
    gv[0] = 1.0; gv[1] = -1.0; gv[2] = 0.0
    g = view(gv, f32, [2, 2, 3, 2, 3])
    for mode, mname in ((0, "bilinear"), (1, "nearest")):
        for pad, pname in ((0, "zeros"), (1, "border"), (2, "reflection")):
            for align in (0, 1):
                grid(f"grid3d_{mname}_{pname}_align{align}", xs, g, mode, pad, align)
    grid("grid3d_channels_last_3d_f64", cl(ramp(2 * 2 * 3 * 4 * 5, 3), f64, [2, 2, 3, 4, 5]),
         view(gv, f64, [2, 2, 3, 2, 3], [36, 3, 12, 6, 1]), 0, 2, 0)
    grid("grid3d_bf16", view(ramp(2 * 2 * 3 * 4 * 5, 3), bf16, [2, 2, 3, 4, 5]), view(gv, bf16, [2, 2, 3, 2, 3]), 0, 0, 1)

    # _upsample_bilinear2d_aa has no C shim: test_ops_pooling.cpp runs these rows through the
    # proxy executor. ints: output H, W, align_corners; floats: scales_h, scales_w (NaN: None).
    def aa(name, x, size, align, scales=(None, None)):
        r = aten._upsample_bilinear2d_aa(x, size, bool(align), *scales)
        out.append(case(name, "_upsample_bilinear2d_aa", [x], [*size, int(align)], r,
                        floats=[math.nan if s is None else s for s in scales]))

    aa("aa_down", view(ramp(2 * 3 * 7 * 9, 1), f32, [2, 3, 7, 9]), [3, 5], 0)
    aa("aa_up_f64", view(ramp(1 * 2 * 4 * 5, 2), f64, [1, 2, 4, 5]), [9, 11], 0)
    aa("aa_mixed_align", view(ramp(1 * 1 * 8 * 8, 3), f32, [1, 1, 8, 8]), [3, 13], 1)
    aa("aa_to_one_align", view(ramp(25, 4), f32, [1, 1, 5, 5]), [1, 1], 1)
    aa("aa_scales_given", view(ramp(2 * 10 * 6, 5), f32, [1, 2, 10, 6]), [4, 4], 0, (0.4, 0.7))
    aa("aa_only_w_changes", view(ramp(1 * 2 * 5 * 5, 6), f32, [1, 2, 5, 5]), [5, 2], 0)
    aa("aa_channels_last_offset", cl(ramp(2 * 3 * 6 * 7, 7), f32, [2, 3, 6, 7], 3), [3, 4], 0)
    aa("aa_transposed_hw", view(ramp(1 * 2 * 6 * 7, 8), f32, [1, 2, 6, 7], [84, 42, 1, 6]), [4, 3], 0)
    aa("aa_same_size_copies", view(ramp(1 * 1 * 3 * 4, 9), f32, [1, 1, 3, 4], [24, 12, 4, 1], 2), [3, 4], 0)
    aa("aa_empty_batch", view([], f32, [0, 2, 4, 4]), [2, 3], 0)
    return out


# --- matmul ----------------------------------------------------------------------------
# Integer products (Note [Integer matmul on the CPU]): inputs are out, then the operands;
# floats: beta, alpha (addmm, baddbmm); the output is out after the call.
def matmul_cases():
    out = []
    i32, i64 = torch.int32, torch.int64

    def mm(name, op, res, operands, beta=None, alpha=None):
        fn = getattr(torch, op)
        kw = {} if beta is None else {"beta": beta, "alpha": alpha}
        before = view(res.reshape(-1).tolist(), res.dtype, list(res.shape), list(res.stride()),
                      res.storage_offset())
        fn(*operands, out=res, **kw)
        floats = [] if beta is None else [beta, alpha]
        out.append(case(name, op, [before, *operands], [], res, floats))

    a = view(pattern(12), i64, [3, 4])
    b = transposed(pattern(20, 3), i64, [4, 5], 1)
    mm("mm_int64_transposed_operand", "mm", view([0] * 15, i64, [3, 5]), [a, b])
    mm("mm_int32_gapped_views", "mm", view([0] * 6, i32, [3, 2], [1, 4], 2),
       [view(pattern(12, 2), i32, [3, 4], [9, 2], 1), view(pattern(8, 5), i32, [4, 2], [1, 6], 3)])
    mm("mm_int32_wraps", "mm", view([0] * 4, i32, [2, 2]),
       [view([2**30, 2**30, 3, -2**31], i32, [2, 2]), view([2, 2, 1, 5], i32, [2, 2])])
    mm("mm_int64_wraps", "mm", view([0] * 2, i64, [1, 2]),
       [view([2**62, 2**62], i64, [1, 2]), view([2, 4, 2, 1], i64, [2, 2])])
    mm("mm_uint8_wraps", "mm", view([0] * 2, torch.uint8, [1, 2]),
       [view([200, 100], torch.uint8, [1, 2]), view([2, 3, 1, 7], torch.uint8, [2, 2])])
    mm("mm_int8_empty_k", "mm", view([5] * 6, torch.int8, [2, 3]),
       [view([], torch.int8, [2, 0]), view([], torch.int8, [0, 3])])
    mm("addmm_int32_beta_alpha_broadcast_row", "addmm", view([0] * 6, i32, [2, 3]),
       [view([1, -2, 3], i32, [3]), view(pattern(8), i32, [2, 4]), transposed(pattern(12, 1), i32, [4, 3])], 2, 3)
    mm("addmm_int64_fractional_alpha_truncates", "addmm", view([0] * 4, i64, [2, 2], [1, 2]),
       [view(pattern(4, 3), i64, [2, 2]), view(pattern(6), i64, [2, 3]), view(pattern(6, 4), i64, [3, 2])], 1, 1.5)
    mm("addmm_int32_wraps_self", "addmm", view([0] * 2, i32, [1, 2]),
       [view([2**30, 2**30 + 1], i32, [1, 2]), view([1], i32, [1, 1]), view([2, 3], i32, [1, 2])], 4, 3)
    mm("addmm_int16_beta0_ignores_self", "addmm", view([0] * 4, torch.int16, [2, 2]),
       [view([9, 9, 9, 9], torch.int16, [2, 2]), view(pattern(4), torch.int16, [2, 2]),
        view(pattern(4, 2), torch.int16, [2, 2])], 0, 2)
    mm("bmm_int64_permuted", "bmm", view([0] * 12, i64, [2, 3, 2]),
       [view(pattern(24, 1), i64, [2, 3, 4], [1, 8, 2]), view(pattern(16, 3), i64, [2, 4, 2], [8, 1, 4])])
    mm("bmm_int32_out_strided", "bmm", view([0] * 8, i32, [2, 2, 2], [1, 2, 4]),
       [view(pattern(12), i32, [2, 2, 3]), view(pattern(12, 7), i32, [2, 3, 2])])
    mm("baddbmm_int64_broadcast_self", "baddbmm", view([0] * 12, i64, [2, 3, 2]),
       [view([7, -3], i64, [1, 1, 2]), view(pattern(18), i64, [2, 3, 3]), view(pattern(12, 4), i64, [2, 3, 2], [6, 1, 3])],
       -1, 2)
    mm("baddbmm_int32_wraps", "baddbmm", view([0] * 2, i32, [1, 1, 2]),
       [view([2**31 - 1, -2**31], i32, [1, 1, 2]), view([2**16], i32, [1, 1, 1]), view([2**15, 2**16], i32, [1, 1, 2])],
       1, 1)

    # bfloat16/float16 with at most 8 rows against a weight read along K (a linear layer's
    # [N, K] weight transposed): the few-row kernel (Note [Few-row products]), its tile
    # and K tails, a bias, a batch; 9 rows, the gemm. Small multiples of powers of two:
    # every float32 sum is exact, so eager's and aotrt's one rounding agree.
    bf, hf = torch.bfloat16, torch.float16
    mm("mm_bf16_one_row_weight_transposed", "mm", view([0] * 19, bf, [1, 19]),
       [view(pattern(40, 1, 0.25), bf, [1, 40]), transposed(pattern(19 * 40, 2, 0.5), bf, [40, 19])])
    mm("mm_f16_three_rows_k_tail", "mm", view([0] * 30, hf, [3, 10]),
       [view(pattern(3 * 37, 3, 0.25), hf, [3, 37]), transposed(pattern(10 * 37, 1, 0.5), hf, [37, 10])])
    mm("addmm_bf16_two_rows_bias_beta_alpha", "addmm", view([0] * 2 * 21, bf, [2, 21]),
       [view(pattern(21, 4, 0.5), bf, [21]), view(pattern(2 * 24, 5, 0.25), bf, [2, 24]),
        transposed(pattern(21 * 24, 6, 0.5), bf, [24, 21])], 2, 0.5)
    mm("bmm_bf16_four_rows_weight_along_k", "bmm", view([0] * 2 * 4 * 18, bf, [2, 4, 18]),
       [view(pattern(2 * 4 * 16, 7, 0.25), bf, [2, 4, 16]),
        view(pattern(2 * 16 * 18, 8, 0.5), bf, [2, 16, 18], [16 * 18, 1, 16])])
    mm("mm_bf16_nine_rows_gemm", "mm", view([0] * 9 * 5, bf, [9, 5]),
       [view(pattern(9 * 24, 9, 0.25), bf, [9, 24]), transposed(pattern(5 * 24, 1, 0.5), bf, [24, 5])])

    # _grouped_mm (Note [Grouped matmul]): inputs mat_a, mat_b and offs when there is one;
    # ints: whether offs is given. Every row and column is covered by a group (ATen leaves
    # the others uninitialized), empty groups among them.
    bf = torch.bfloat16

    def gmm(name, a, b, offs=None):
        r = torch._grouped_mm(a, b, offs=offs)
        out.append(case(name, "_grouped_mm", [a, b] + ([offs] if offs is not None else []),
                        [int(offs is not None)], r))

    gmm("grouped_mm_2d_3d_bf16", view(pattern(10 * 16, 1, 0.25), bf, [10, 16]),
        view(pattern(4 * 16 * 8, 3, 0.125), bf, [4, 16, 8]), view([2, 5, 5, 10], i32, [4]))
    gmm("grouped_mm_2d_3d_f32_transposed_experts", view(pattern(6 * 8, 2, 0.5), torch.float32, [6, 8]),
        view(pattern(3 * 8 * 4, 1, 0.25), torch.float32, [3, 8, 4], [32, 1, 8]), view([0, 4, 6], i32, [3]))
    gmm("grouped_mm_2d_3d_bf16_out_padded", view(pattern(5 * 8, 4, 0.5), bf, [5, 8]),
        view(pattern(2 * 8 * 12, 2, 0.125), bf, [2, 8, 12], [128, 16, 1]), view([3, 5], i32, [2]))
    gmm("grouped_mm_3d_2d_f32", view(pattern(2 * 3 * 8, 1, 0.5), torch.float32, [2, 3, 8]),
        view(pattern(8 * 8, 5, 0.25), torch.float32, [8, 8]), view([4, 8], i32, [2]))
    gmm("grouped_mm_2d_2d_k_split_f16", view(pattern(4 * 16, 2, 0.25), torch.float16, [4, 16]),
        view(pattern(16 * 8, 1, 0.125), torch.float16, [16, 8]), view([8, 8, 16], i32, [3]))
    gmm("grouped_mm_3d_3d_bf16", view(pattern(2 * 3 * 8, 3, 0.5), bf, [2, 3, 8]),
        view(pattern(2 * 8 * 8, 1, 0.25), bf, [2, 8, 8], [64, 1, 8]))

    # mm.dtype_out (Note [Matmul with an output dtype]): inputs out (as it was), self, mat2;
    # ints: the out_dtype code. torch's CPU has no kernel for mm.dtype (ATen's is CUDA's),
    # so the reference is the product in float64 converted to out's dtype: the operands are
    # multiples of 1/8 or 1/16, so every product and sum is exact in float32 and the float32
    # results need more bits than bfloat16 or float16 keep (a result rounded to the 16-bit
    # dtype on the way shows).
    def mm_dtype(name, res, a, b):
        before = view(res.reshape(-1).tolist(), res.dtype, list(res.shape), list(res.stride()),
                      res.storage_offset())
        res.copy_((a.double() @ b.double()).to(res.dtype))
        out.append(case(name, "mm_dtype", [before, a, b], [CODES[res.dtype]], res))

    g = torch.Generator().manual_seed(11)

    def eighths(sizes, dtype, denominator=8):
        return (torch.randint(-12, 13, sizes, generator=g) / denominator).to(dtype)

    f32, f16 = torch.float32, torch.float16
    mm_dtype("mm_dtype_bf16_to_f32", view([0] * 15, f32, [3, 5]),
             eighths([3, 8], bf), eighths([5, 8], bf).t())
    mm_dtype("mm_dtype_f16_to_f32_strided_views", view([0] * 12, f32, [4, 3], [1, 5], 2),
             view(eighths([4, 6], f16).reshape(-1).tolist(), f16, [4, 6], [13, 2], 1),
             transposed(eighths([6, 3], f16, 16).reshape(-1).tolist(), f16, [6, 3], 3))
    mm_dtype("mm_dtype_bf16_to_f32_k40", view([0] * (17 * 33), f32, [17, 33]),
             eighths([17, 40], bf), eighths([40, 33], bf, 16))
    mm_dtype("mm_dtype_f32_same_dtype_is_mm", view([0] * 6, f32, [2, 3]),
             eighths([2, 4], f32), eighths([4, 3], f32))
    mm_dtype("mm_dtype_bf16_same_dtype_is_mm", view([0] * 6, bf, [2, 3]),
             eighths([2, 4], bf), eighths([4, 3], bf))
    mm_dtype("mm_dtype_bf16_to_f32_empty_k", view([5] * 6, f32, [2, 3]),
             view([], bf, [2, 0]), view([], bf, [0, 3]))
    return out


# --- conv ------------------------------------------------------------------------------
# float64 and integer convolutions (Note [Direct convolution]): inputs are input, weight
# and the bias when there is one; ints: transposed, groups, then stride, padding, dilation
# and output_padding, one entry per spatial dim each.
def conv_cases():
    out = []
    f64, i64 = torch.float64, torch.int64

    def conv(name, x, w, b, stride, padding, dilation, transposed=False, output_padding=None, groups=1):
        k = x.dim() - 2
        output_padding = output_padding or [0] * k
        r = torch.ops.aten.convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups)
        ints = [int(transposed), groups, *stride, *padding, *dilation, *output_padding]
        out.append(case(name, "convolution", [x, w] + ([b] if b is not None else []), ints, r))

    conv("conv2d_f64_gapped_input_stride_padding_bias", view(pattern(2 * 3 * 5 * 6), f64, [2, 3, 5, 6], [200, 60, 12, 2], 3),
         view(pattern(4 * 3 * 9, 1, 0.5), f64, [4, 3, 3, 3]), view([1, -2, 0.5, 3], f64, [4]), [2, 1], [1, 1], [1, 1])
    x = view(pattern(1 * 4 * 6 * 6, 2), f64, [1, 4, 6, 6], [144, 1, 24, 4])  # channels-last
    conv("conv2d_f64_channels_last_groups_dilation", x, view(pattern(6 * 2 * 4, 3), f64, [6, 2, 2, 2]), None,
         [1, 1], [0, 2], [2, 1], groups=2)
    conv("conv1d_f64_permuted_weight", view(pattern(2 * 2 * 7), f64, [2, 2, 7]),
         view(pattern(3 * 2 * 3, 4), f64, [3, 2, 3], [1, 9, 3]), None, [2], [1], [1])
    conv("conv3d_f64_bias", view(pattern(1 * 2 * 4 * 5 * 4), f64, [1, 2, 4, 5, 4]),
         view(pattern(3 * 2 * 2 * 3 * 2, 5), f64, [3, 2, 2, 3, 2]), view([0.25, -1, 2], f64, [3]),
         [1, 2, 1], [1, 0, 1], [1, 1, 2])
    conv("conv2d_f64_batch_gap_transposed_weight", view(pattern(2 * 3 * 4 * 4), f64, [2, 3, 4, 4], [70, 16, 4, 1], 2),
         view(pattern(2 * 3 * 4, 6), f64, [2, 3, 2, 2], [1, 2, 12, 6]), None, [1, 1], [0, 0], [1, 1])
    conv("conv_transpose2d_f64_groups_output_padding_bias", view(pattern(2 * 4 * 3 * 4), f64, [2, 4, 3, 4]),
         view(pattern(4 * 3 * 3 * 2, 1), f64, [4, 3, 3, 2]), view(pattern(6, 2, 0.5), f64, [6]),
         [2, 3], [1, 0], [1, 1], True, [1, 2], 2)
    conv("conv_transpose1d_f64_dilation_output_padding", view(pattern(1 * 2 * 5), f64, [1, 2, 5], [10, 1, 2]),
         view(pattern(2 * 3 * 3, 3), f64, [2, 3, 3]), None, [1], [1], [2], True, [1])
    conv("conv_transpose3d_f64", view(pattern(1 * 2 * 2 * 3 * 2), f64, [1, 2, 2, 3, 2]),
         view(pattern(2 * 2 * 2 * 2 * 2, 7), f64, [2, 2, 2, 2, 2]), view([1, -1], f64, [2]),
         [2, 1, 2], [0, 1, 1], [1, 1, 1], True, [1, 0, 0])
    conv("conv2d_int64_wraps_bias", view([2**62, 2**62, 3, -2, 2**61, 1, 5, 7, 2**62], i64, [1, 1, 3, 3]),
         view([2, 2, 4, 1], i64, [1, 1, 2, 2]), view([2**62], i64, [1]), [1, 1], [0, 0], [1, 1])
    conv("conv_transpose2d_int64_stride", view(pattern(1 * 2 * 3 * 3), i64, [1, 2, 3, 3], [18, 1, 6, 2]),
         view(pattern(2 * 2 * 2 * 2, 1), i64, [2, 2, 2, 2]), view([3, -4], i64, [2]), [2, 2], [0, 1], [1, 1], True)
    conv("conv2d_int32_wraps_gapped", view([2**30, 3, 2**30, -7, 2**30, 1, 2, 2**29, 5, 9, 2, 4], torch.int32,
                                           [1, 1, 3, 4], [30, 30, 10, 2], 1),
         view([4, 1, 2, 8], torch.int32, [1, 1, 2, 2]), None, [1, 1], [1, 0], [1, 1])
    conv("conv1d_uint8_wraps_bias", view([200, 100, 50, 250, 3], torch.uint8, [1, 1, 5]),
         view([3, 2, 1, 2, 1, 5], torch.uint8, [2, 1, 3]), view([100, 7], torch.uint8, [2]), [1], [0], [1])
    conv("conv3d_int16_groups", view(pattern(1 * 2 * 2 * 3 * 3), torch.int16, [1, 2, 2, 3, 3]),
         view(pattern(4 * 1 * 2 * 2 * 2, 2), torch.int16, [4, 1, 2, 2, 2]), None, [1, 1, 1], [0, 1, 0], [1, 1, 1],
         groups=2)
    return out


# --- reduce ----------------------------------------------------------------------------
# hash_tensor (no C shim: test_ops_reduce.cpp runs it through the proxy executor). ints:
# keepdim, then the dims (none: every dim). The uint64 output is recorded as int64 of its
# sizes with a last dim of 2, (high 32 bits, low 32 bits), which doubles hold exactly; its
# strides are contiguous of those sizes (the test checks the result's own).
def hash_cases():
    out = []
    f32, f64 = torch.float32, torch.float64
    nan = math.nan

    def h(name, x, dims, keepdim=0):
        r = torch.ops.aten.hash_tensor(x, dims, keepdim=bool(keepdim))
        assert r.is_contiguous()
        bits = r.view(torch.int64)
        halves = torch.stack([(bits >> 32) & 0xFFFFFFFF, bits & 0xFFFFFFFF], -1)
        out.append(case(name, "hash_tensor", [x], [keepdim, *dims], halves))

    h("hash_all_f32", view(pattern(12, 1, 0.25), f32, [3, 4]), [])
    h("hash_rows_transposed", transposed(pattern(12, 2, 0.5), f32, [3, 4], 1), [1])
    h("hash_dim0_keepdim_f64", view(pattern(12, 3, 0.1), f64, [4, 3], [1, 4]), [0], 1)
    h("hash_two_dims_3d_gapped", view(pattern(24, 4), f32, [2, 3, 4], [30, 8, 2], 1), [0, 2])
    h("hash_nan_signed_zero", view([nan, -0.0, 0.0, 1, nan, 2], f32, [2, 3]), [1])
    h("hash_int8_sign_extends", view([-1, 5, -128, 7], torch.int8, [4]), [])
    h("hash_int64", view([2**40 + 3, -(2**50), 17, 0], torch.int64, [2, 2]), [0])
    h("hash_bool", view([1, 1, 0, 1, 0, 0], torch.bool, [3, 2]), [-1])
    h("hash_f16", view([1.5, -2.25, 0.1, 3], torch.float16, [4]), [])
    h("hash_bf16_keepdim", view([1.5, -2.25, 0.1, 3], torch.bfloat16, [2, 2]), [1], 1)
    h("hash_uint8", view([200, 3, 255], torch.uint8, [3]), [])
    h("hash_0d", view([3.0], f32, []), [])
    h("hash_empty_kept_dim", view([], f32, [0, 3]), [1])
    return out


# --- fft -------------------------------------------------------------------------------
# _fft_r2c, _fft_c2c (C shims) and _fft_c2r (proxy executor). ints: the mask of complex
# inputs (passed as view_as_real), normalization, then onesided (r2c) / forward (c2c) /
# last_dim_size (c2r), then dim. outputs: eager's result (complex as view_as_real), then
# the layout ATen's CUDA kernels give it (no values): the CUDA meta function's, which
# torch's meta functions answer for a tensor on the meta device (Note [cuFFT output
# layouts] in src/ops/fft.cpp).
def fft_cases():
    out = []
    f32, f64, c64, c128 = torch.float32, torch.float64, torch.complex64, torch.complex128
    aten = torch.ops.aten

    def cview(values, sizes, strides=None, offset=0):
        """complex values (row-major over sizes) in a view with these strides and offset."""
        strides = contiguous_strides(sizes) if strides is None else strides
        extent = offset + 1 + sum((sz - 1) * st for sz, st in zip(sizes, strides))
        buf = torch.full((extent + 1,), -77, dtype=values.dtype)
        v = torch.as_strided(buf, sizes, strides, offset)
        v.copy_(values.reshape(sizes))
        return v

    def zpattern(n, dtype, start=0):
        re = torch.tensor(pattern(n, start, 0.5), dtype=torch.float64)
        im = torch.tensor(pattern(n, start + 3, 0.25), dtype=torch.float64)
        return torch.complex(re, im).to(dtype)

    def layout(r):
        return torch.view_as_real(r) if r.is_complex() else r

    def add(name, op, x, norm, flag, dim):
        meta = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
        fn = {"_fft_r2c": aten._fft_r2c, "_fft_c2c": aten._fft_c2c, "_fft_c2r": aten._fft_c2r}[op]
        half = x.dtype in (torch.float16, torch.complex32)
        if half:  # CUDA only (cuFFT's half precision): eager's float32 result, rounded
            wide = torch.complex64 if x.is_complex() else f32
            r = fn(x.to(wide), dim, norm, flag)
            r = r.to(torch.complex32 if r.is_complex() else torch.float16)
        else:
            r = fn(x, dim, norm, flag)
        cuda = layout(fn(meta, dim, norm, flag))
        mask = 1 if x.is_complex() else 0
        ins = [torch.view_as_real(x) if x.is_complex() else x]
        text = case(name, op, ins, [mask, norm, int(flag)] + list(dim), layout(r))
        # The CUDA layout: a second output without values.
        j = lambda v: "{" + ", ".join(str(i) for i in v) + "}"
        cuda_values = (f"Values{{{DTYPES[cuda.dtype]}, {j(list(cuda.shape))}, {j(list(cuda.stride()))}, "
                       f"{cuda.storage_offset()}, {{}}}}")
        assert text.endswith("}},\n")
        out.append(text[:-4] + ",\n      " + cuda_values + "}},\n")

    # r2c: odd and even lengths, every normalization, one- and two-sided, 1-3 dims.
    add("r2c_1d_even", "_fft_r2c", view(pattern(24), f32, [3, 8]), 0, True, [1])
    add("r2c_1d_odd_dim0", "_fft_r2c", view(pattern(21, 2), f32, [7, 3]), 2, True, [0])
    add("r2c_2d_f64_ortho", "_fft_r2c", view(pattern(60, 1), f64, [2, 6, 5]), 1, True, [1, 2])
    add("r2c_2d_dims01", "_fft_r2c", view(pattern(30, 3), f32, [6, 5]), 0, True, [0, 1])
    add("r2c_twosided_odd", "_fft_r2c", view(pattern(28, 4), f32, [4, 7]), 2, False, [1])
    add("r2c_twosided_2d_f64", "_fft_r2c", view(pattern(24, 5), f64, [4, 6]), 0, False, [0, 1])
    add("r2c_3d_dims012", "_fft_r2c", view(pattern(60, 6), f32, [3, 4, 5]), 2, True, [0, 1, 2])
    add("r2c_3d_dim_order", "_fft_r2c", view(pattern(60, 7), f32, [3, 4, 5]), 0, True, [2, 0, 1])
    add("r2c_transposed", "_fft_r2c", transposed(pattern(30, 8), f32, [5, 6]), 0, True, [1])
    # An odd offset: the real input is not aligned as a complex element.
    add("r2c_sliced_odd_offset", "_fft_r2c", view(pattern(30, 9), f32, [3, 10], [13, 1], 1), 1, True, [1])
    add("r2c_stride2_f64", "_fft_r2c", view(pattern(24, 10), f64, [4, 6], [14, 2], 2), 0, True, [1])
    add("r2c_length1", "_fft_r2c", view(pattern(3, 11), f32, [3, 1]), 0, True, [1])
    add("r2c_length2_twosided", "_fft_r2c", view(pattern(6, 12), f32, [3, 2]), 2, False, [1])

    # c2c: forward and inverse, 1-4 dims, views with gaps, offsets, transposes.
    add("c2c_1d_forward", "_fft_c2c", cview(zpattern(24, c64), [3, 8]), 0, True, [1])
    add("c2c_1d_inverse_odd_c128", "_fft_c2c", cview(zpattern(35, c128, 1), [5, 7]), 2, False, [0])
    add("c2c_2d_ortho", "_fft_c2c", cview(zpattern(60, c64, 2), [2, 6, 5]), 1, True, [1, 2])
    add("c2c_3d_inverse_c128", "_fft_c2c", cview(zpattern(60, c128, 3), [3, 4, 5]), 2, False, [0, 1, 2])
    add("c2c_4d", "_fft_c2c", cview(zpattern(48, c64, 4), [2, 3, 2, 4]), 0, True, [0, 1, 2, 3])
    add("c2c_transposed", "_fft_c2c", cview(zpattern(24, c64, 5), [6, 4], [1, 6]), 0, False, [1])
    add("c2c_gapped_offset_2d", "_fft_c2c", cview(zpattern(15, c64, 6), [3, 5], [7, 1], 2), 1, True, [0, 1])
    add("c2c_middle_dim", "_fft_c2c", cview(zpattern(60, c64, 7), [3, 5, 4]), 2, True, [1])
    add("c2c_length1_dim", "_fft_c2c", cview(zpattern(12, c64, 8), [4, 1, 3]), 0, True, [1, 2])

    # c2r: Hermitian spectra (rfft of real data) of n // 2 + 1 bins, as irfft calls it.
    def spec(n_total, sizes, dtype, dims, start=0):
        x = torch.tensor(pattern(n_total, start), dtype=torch.float64).reshape(sizes)
        return torch.fft.rfftn(x, dim=dims).to(dtype)

    add("c2r_1d_even", "_fft_c2r", cview(spec(24, [3, 8], c64, [1]), [3, 5]), 2, 8, [1])
    add("c2r_1d_odd", "_fft_c2r", cview(spec(28, [4, 7], c64, [1], 1), [4, 4]), 0, 7, [1])
    add("c2r_2d_ortho_f64", "_fft_c2r", cview(spec(144, [3, 6, 8], c128, [1, 2], 2), [3, 6, 5]), 1, 8, [1, 2])
    add("c2r_2d_dims01", "_fft_c2r", cview(spec(48, [6, 8], c64, [0, 1], 3), [6, 5]), 2, 8, [0, 1])
    add("c2r_dim0", "_fft_c2r", cview(spec(40, [10, 4], c64, [0], 4), [6, 4]), 0, 10, [0])
    s5 = spec(32, [8, 4], c64, [0], 5).T.contiguous()  # [4, 5]: bins along dim 1
    add("c2r_transposed_offset", "_fft_c2r", cview(s5, [4, 5], [1, 5], 3), 2, 8, [1])
    add("c2r_length1", "_fft_c2r", cview(spec(3, [3, 1], c64, [1], 6), [3, 1]), 0, 1, [1])
    # Imaginary parts in the DC and Nyquist bins: ATen's CPU kernel ignores them; ATen's CUDA
    # kernel gives whatever cuFFT's C2R gives (a CPU-only row, see test_ops_fft.cpp).
    add("c2r_imag_dc_nyquist_cpu", "_fft_c2r", cview(zpattern(10, c64, 7), [2, 5]), 0, 8, [1])

    # float16 / complex32: CUDA only (powers of two), refused on the CPU as ATen's CPU FFT does.
    f16, c32 = torch.float16, torch.complex32
    add("r2c_1d_f16", "_fft_r2c", view(pattern(24, 13), f16, [3, 8]), 2, True, [1])
    add("r2c_2d_twosided_f16", "_fft_r2c", view(pattern(32, 14), f16, [4, 8]), 0, False, [0, 1])
    add("r2c_stride2_f16", "_fft_r2c", view(pattern(32, 15), f16, [4, 8], [20, 2], 2), 0, True, [1])
    add("c2c_2d_inverse_f16", "_fft_c2c", cview(zpattern(32, c64, 16), [4, 8]).to(c32), 1, False, [0, 1])
    add("c2r_1d_f16", "_fft_c2r", cview(spec(24, [3, 8], c64, [1], 17), [3, 5]).to(c32), 2, 8, [1])
    return out

# --- special ---------------------------------------------------------------------------
# The special family (test_ops_special.cpp runs each through the proxy executor and the
# family's function). op: the proxy target after "aten::"; ints: polygamma's n; floats: the
# Scalar of a *_scalar overload. Grids hold the edge values (0, negatives, poles, large
# |x|, NaN, inf; polynomial n = 0, 1, 2, 5, 30, negative, fractional and NaN).
def special_cases():
    out = []
    f16, bf16, f32, f64, i64 = torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int64
    aten = torch.ops.aten
    nan, inf = math.nan, math.inf

    def add(name, op, inputs, r, ints=(), floats=()):
        out.append(case(name, op, inputs, list(ints), r, floats=list(floats)))

    def fn_of(op):  # "special_zeta.other_scalar" -> aten.special_zeta.other_scalar
        name, _, overload = op.partition(".")
        packet = getattr(aten, name)
        return getattr(packet, overload) if overload else packet

    def unary(name, op, values, dtype, sizes=None, strides=None, offset=0):
        sizes = [len(values)] if sizes is None else sizes
        x = view(values, dtype, sizes, strides, offset)
        add(name, op, [x], fn_of(op)(x))

    def binary(name, op, a, b):
        add(name, op, [a, b], fn_of(op)(a, b))

    # digamma: poles (-inf at +0, inf at -0, NaN at negative integers), reflection, the
    # recurrence and the asymptotic range.
    dg = [0.0, -0.0, -1, -2, -10, -0.5, -2.5, -7.25, -30.1, 1e-8, -1e-8, 0.1, 0.5, 1, 1.5, 2,
          3.7, 9.99, 10, 10.01, 25, 100, 1e5, 1e10, 1e300, inf, -inf, nan]
    unary("digamma_f64_edges", "digamma", dg, f64)
    unary("digamma_f32_edges_strided", "digamma", dg, f32, [4, 7], [1, 4], 3)
    unary("digamma_f16", "digamma", [0.0, -0.5, 0.25, 1, 3.5, 11, 1000, -3, inf, nan], f16)
    unary("digamma_bf16", "digamma", [0.0, -0.5, 0.25, 1, 3.5, 11, 1000, -3, inf, nan], bf16)
    unary("digamma_int64_to_f32", "digamma", [-2, -1, 0, 1, 2, 7, 100], i64)
    unary("digamma_bool_to_f32", "digamma", [1, 0, 1], torch.bool)
    unary("digamma_0d", "digamma", [4.5], f64, [])
    unary("digamma_empty", "digamma", [], f32, [0, 3])
    # polygamma n = 0..4 (and 7); n = 1 off the negative integers, where ATen's trigamma
    # returns pi^2 / sin^2(pi * x) of a rounded pi * x (a finite value) and aotrt the pole's inf.
    pg = [-0.0, 0.0, -0.5, -2.5, -7.25, -0.999, -30.1, 1e-6, 0.1, 0.5, 1, 2.5, 5.9, 6.1, 9.5,
          10.5, 40, 1e4, 1e8, inf, -inf, nan]
    poles = [-1, -2, -5]
    for n in (0, 1, 2, 3, 4, 7):
        for dtype in (f64, f32):
            vals = pg + ([] if n == 1 else poles)
            x = view(vals, dtype, [len(vals)])
            add(f"polygamma_{n}_{str(dtype)[6:]}", "polygamma", [x], aten.polygamma(n, x), ints=[n])
    x = view([0.5, 1, 2.5, 10, -0.5, 100], f16, [2, 3], [1, 2])
    add("polygamma_2_f16_transposed", "polygamma", [x], aten.polygamma(2, x), ints=[2])
    x = view([0.5, 1, 2.5, 10, -0.5, 100], bf16, [6])
    add("polygamma_3_bf16", "polygamma", [x], aten.polygamma(3, x), ints=[3])
    x = view([1, 2, 3, 0, -1], i64, [5])
    add("polygamma_2_int64_to_f32", "polygamma", [x], aten.polygamma(2, x), ints=[2])

    # zeta(x, q): x = 1 (inf), x < 1 (NaN), q <= 0 integers (inf), negative q with integral
    # or fractional x, q = inf (NaN as ATen), large q; broadcast x[k, 1] against q[m].
    zx = [-1, 0, 0.5, 1, 1.0001, 1.5, 2, 2.5, 3, 4.5, 7, 20, 100, inf, nan]
    zq = [-10.25, -3, -2.5, -1, -0.5, 0, 1e-5, 0.3, 1, 2, 3.5, 9, 9.5, 25, 1e5, 1e10, inf, -inf, nan]
    for dtype in (f64, f32):
        binary(f"zeta_{str(dtype)[6:]}_grid", "special_zeta", view(zx, dtype, [len(zx), 1]),
               view(zq, dtype, [len(zq)]))
    binary("zeta_int64_to_f32", "special_zeta", view([2, 3, 4], i64, [3]), view([1, 2, 5], i64, [3]))
    binary("zeta_f32_with_0d_f64_stays_f32", "special_zeta", view([2, 3, 4.5], f32, [3]), view([1.5], f64, []))
    binary("zeta_f32_f64_promotes", "special_zeta", view([2, 3, 4.5], f32, [3]), view([1.5, 2, 3], f64, [3]))
    for q in (2.0, -1.5, 0.5):
        x = view([1.5, 2, 3, 6, 0.5, 1], f32, [2, 3], [1, 2], 1)
        add(f"zeta_other_scalar_{str(q).replace('.', '_').replace('-', 'm')}", "special_zeta.other_scalar",
            [x], aten.special_zeta.other_scalar(x, q), floats=[q])
    qv = view([0.5, 1, 3, -1.5, 10], f64, [5])
    add("zeta_self_scalar_f64", "special_zeta.self_scalar", [qv], aten.special_zeta.self_scalar(2.5, qv), floats=[2.5])
    qi = view([1, 2, 3], i64, [3])
    add("zeta_self_scalar_int64_to_f32", "special_zeta.self_scalar", [qi], aten.special_zeta.self_scalar(3.0, qi),
        floats=[3.0])

    # igamma / igammac (P and Q): a = 0, x = 0, infinities, NaN, negatives, both sides of
    # x = a + 1, large a; broadcast a[k, 1] against x[m].
    ga = [-1, 0, 1e-3, 0.1, 0.5, 1, 1.5, 2, 3.7, 10, 25, 100, 1000, inf, nan]
    gx = [-1, 0, 1e-5, 0.01, 0.5, 1, 2, 5, 9.5, 11, 20, 26.5, 99, 101, 150, 900, 1100, 1e4, inf, nan]
    for op in ("igamma", "igammac"):
        for dtype in (f64, f32):
            binary(f"{op}_{str(dtype)[6:]}_grid", op, view(ga, dtype, [len(ga), 1]), view(gx, dtype, [len(gx)]))
        binary(f"{op}_f16", op, view([0.5, 1, 2, 5, 20], f16, [5]), view([0.25, 1, 3, 4, 25], f16, [5]))
        binary(f"{op}_bf16_transposed", op, view([0.5, 1, 2, 5, 20, 3], bf16, [2, 3], [1, 2]),
               view([0.25, 1, 3, 4, 25, 3], bf16, [2, 3]))
        binary(f"{op}_int32_with_f16_is_f16", op, view([1, 2, 3], torch.int32, [3]), view([0.5, 2, 4], f16, [3]))
        binary(f"{op}_f32_0d_other", op, view([0.5, 1, 2, 5], f32, [4]), view([2.0], f32, []))

    # The unary Bessel functions, airy_ai, ndtri, spherical_bessel_j0 in float64 and float32.
    bx = [-inf, -710, -60, -20.5, -20, -8, -2, -1e-3, -0.0, 0.0, 1e-300, 1e-8, 0.5, 1.9999, 2,
          2.0001, 5, 8.5, 19.9, 20, 20.1, 35, 60, 100, 700, 710, 1e4, inf, nan]
    for op in ("special_i0e", "special_i1e", "special_modified_bessel_k0", "special_modified_bessel_k1",
               "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1",
               "special_spherical_bessel_j0"):
        for dtype in (f64, f32):
            unary(f"{op[8:]}_{str(dtype)[6:]}", op, bx, dtype)
    for op in ("special_i0e", "special_i1e"):
        unary(f"{op[8:]}_f16", op, [-20, -1, 0, 0.5, 3, 30, inf, nan], f16)
        unary(f"{op[8:]}_bf16", op, [-20, -1, 0, 0.5, 3, 30, inf, nan], bf16)
    unary("i0e_int64_transposed", "special_i0e", [-3, 0, 1, 2, 50, 7], i64, [2, 3], [1, 2])
    unary("k0_0d", "special_modified_bessel_k0", [1.5], f32, [])
    ax = [-inf, -1e4, -300.5, -60, -20.3, -9.4, -9.2, -5.1, -2.1, -2.09, -2.07, -1, -1e-3, 0, 0.5, 1,
          2.07, 2.09, 2.1, 5, 10, 50, 103.8, 103.9, 200, inf, nan]
    unary("airy_ai_float64", "special_airy_ai", ax, f64)
    # float32 down to -20.3: below, ATen's float zeta = 2/3 |x|^1.5 has lost the phase (x = -1e4:
    # ATen 0.024654, true 0.027057).
    unary("airy_ai_float32", "special_airy_ai", [v for v in ax if not v < -21], f32)
    unary("airy_ai_int64_gapped", "special_airy_ai", [-3, -1, 0, 1, 3], i64, [5], [2], 1)
    nx = [-0.1, 0, 1e-300, 1e-30, 1e-10, 1e-3, 0.02, 0.1, 0.2499, 0.25, 0.3, 0.5 - 1e-9, 0.5, 0.5 + 1e-9,
          0.7, 0.9, 0.975, 1 - 1e-6, 1 - 1e-12, 1, 1.1, inf, nan]
    for dtype in (f64, f32):
        unary(f"ndtri_{str(dtype)[6:]}", "special_ndtri", nx, dtype)
    unary("ndtri_bool", "special_ndtri", [1, 0], torch.bool)
    unary("spherical_bessel_j0_0d", "special_spherical_bessel_j0", [0.25], f64, [])

    # The polynomials: x[k, 1] against n[m]. ATen's U, W, shifted T, Legendre and Laguerre
    # kernels return an uninitialised value for a NaN x with n >= 2, so NaN x is its own row
    # with n = 0 and 1.
    px = [-inf, -10, -2.5, -1.5, -1, -0.999, -0.7, -0.5, -0.1, 0, 0.3, 0.5, 0.9, 1, 1.0001, 2, 3.5, inf]
    pn = [-3, -1, -0.5, 0, 1, 2, 2.5, 3, 5, 6, 7, 8, 9, 12, 30, 31, nan]
    polys = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
             "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
             "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
             "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]
    for p in polys:
        op = "special_" + p
        xs = [(v + 1) / 2 for v in px] if p.startswith("shifted") else px  # [0, 1] is theirs
        binary(f"{p}_float64", op, view(xs, f64, [len(xs), 1]), view(pn, f64, [len(pn)]))
        # float32 without x = -10, where ATen's float recurrence overflows (legendre at n = 30:
        # (2k+1) x P_k passes 3.4e38 before the division; the value is 1.02e38).
        xf = [v for i, v in enumerate(xs) if px[i] != -10]
        binary(f"{p}_float32", op, view(xf, f32, [len(xf), 1]), view(pn, f32, [len(pn)]))
        binary(f"{p}_nan_x", op, view([nan, nan], f64, [2]), view([0, 1], f64, [2]))
        x = view(xs[4:10], f32, [2, 3], [1, 2])
        add(f"{p}_n_scalar_5", op + ".n_scalar", [x], getattr(aten, op).n_scalar(x, 5), floats=[5])
        n = view([0, 1, 2, 5, 30], i64, [5])
        add(f"{p}_x_scalar_int64_n", op + ".x_scalar", [n], getattr(aten, op).x_scalar(0.375, n), floats=[0.375])
    binary("chebyshev_polynomial_t_int64_both", "special_chebyshev_polynomial_t", view([-1, 0, 1, 2], i64, [4]),
           view([3, 3, 3, 3], i64, [4]))
    binary("hermite_polynomial_h_f32_0d_f64_n", "special_hermite_polynomial_h", view([0.5, -1.5, 2], f32, [3]),
           view([4.0], f64, []))
    return out


# The reduce family's rows: test_ops_reduce.cpp runs each by its op (amax, hash_tensor).
def reduce_cases():
    return amax_cases() + hash_cases()


# --- intmatmul ------------------------------------------------------------------------
# _weight_int4pack_mm_cpu_tensor (Note [Int4 packed weights]): inputs A, B (packed by
# eager under the ATen capability named by ints[0]: 0 default, 1 avx2, 2 avx512), the
# 0-d int64 group size, qScaleAndZeros. A of small integers, scales powers of two and
# zeros quarters, so that every product and sum is exact in float32: the output is
# eager's to the last bit (bfloat16 included). The packing runs in a child process
# (a process's capability is fixed once ATen reads it).
INT4_CAPS = ("default", "avx2", "avx512")


def int4_pack(q, cap):
    import os
    import subprocess
    import tempfile
    code = ("import sys, torch; q = torch.load(sys.argv[1]); "
            "torch.save(torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, 1), sys.argv[1])")
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "q.pt")
        torch.save(q, f)
        subprocess.run([sys.executable, "-c", code, f], check=True,
                       env={**os.environ, "ATEN_CPU_CAPABILITY": cap})
        return torch.load(f)


def intmatmul_cases():
    out = []
    g = torch.Generator().manual_seed(4)

    def row(name, dtype, M, N, K, gs, cap, a_view=None):
        q = torch.randint(0, 16, (N, K), dtype=torch.int32, generator=g)
        scale = 2.0 ** torch.randint(-2, 2, (K // gs, N), generator=g).to(torch.float64)
        zero = torch.randint(-4, 5, (K // gs, N), generator=g).to(torch.float64) / 4
        sz = torch.stack([scale, zero], dim=-1).to(dtype)
        a = a_view if a_view is not None else view(pattern(M * K), dtype, [M, K])
        b = int4_pack(q, INT4_CAPS[cap])
        own = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, 1)  # this process's layout
        r = torch.ops.aten._weight_int4pack_mm_for_cpu(a.contiguous(), own, gs, sz)
        gt = torch.tensor(gs, dtype=torch.int64)
        out.append(case(name, "_weight_int4pack_mm_cpu_tensor", [a, b, gt, sz], [cap], r))

    f32, bf16, f16 = torch.float32, torch.bfloat16, torch.float16
    for cap in range(3):
        row(f"int4_f32_m3_n48_k64_g32_{INT4_CAPS[cap]}", f32, 3, 48, 64, 32, cap)
        row(f"int4_bf16_m5_n80_k128_g64_{INT4_CAPS[cap]}", bf16, 5, 80, 128, 64, cap)
    row("int4_f16_m2_n32_k256_g256_avx2", f16, 2, 32, 256, 256, 1)
    row("int4_bf16_m1_n64_k64_g32_avx512", bf16, 1, 64, 64, 32, 2)
    row("int4_f32_m6_n16_k128_g128_default", f32, 6, 16, 128, 128, 0)
    row("int4_f32_transposed_a_m4_n32_k64_g64_avx2", f32, 4, 32, 64, 64, 1,
        a_view=transposed(pattern(4 * 64, 5), f32, [4, 64], offset=2))
    row("int4_bf16_m0_n16_k32_g32_avx2", bf16, 0, 16, 32, 32, 1)

    # _convert_weight_to_int4pack_for_cpu (no C shim: the proxy executor): input q [N, K]
    # int32; ints: capability, innerKTiles; the output as eager packs it under that capability.
    def pack_row(name, q, cap, inner=1):
        out.append(case(name, "_convert_weight_to_int4pack_for_cpu", [q], [cap, inner],
                        int4_pack(q.contiguous(), INT4_CAPS[cap])))

    for cap in range(3):
        c = INT4_CAPS[cap]
        pack_row(f"int4pack_n48_k8_{c}", torch.randint(0, 16, (48, 8), dtype=torch.int32, generator=g), cap)
        pack_row(f"int4pack_n80_k6_{c}", torch.randint(0, 16, (80, 6), dtype=torch.int32, generator=g), cap, 2)
    pack_row("int4pack_out_of_range_n16_k4_avx2", view([17, -1, 255, 16] * 16, torch.int32, [16, 4]), 1)
    pack_row("int4pack_transposed_n64_k4_avx512",
             transposed([(i * 5) % 16 for i in range(256)], torch.int32, [64, 4], offset=1), 2)
    return out


# --- int8pack -------------------------------------------------------------------------
# _weight_int8pack_mm (Note [Int8 weight-only matmul on the CPU]): inputs A [M, K], B [N, K]
# int8, scales [N]; the output eager's. Random values (sums with cancellation, not exact
# in float32): the test's tolerance is stated there. Shapes: the decode kernel's M = 1..8
# with column tails of its 4-, 2- and 1-row tiles and K not a multiple of 8, and the
# dequantized gemm past 8 rows (N past one 128-row chunk).
def int8pack_cases():
    out = []
    g = torch.Generator().manual_seed(29)

    def row(name, dtype, M, N, K, a_view=None):
        a = a_view if a_view is not None else torch.randn(M, K, generator=g).to(dtype)
        b = torch.randint(-128, 128, (N, K), dtype=torch.int8, generator=g)
        sc = (torch.rand(N, generator=g) * 0.02 + 0.001).to(dtype)
        out.append(case(name, "_weight_int8pack_mm", [a, b, sc], [],
                        torch.ops.aten._weight_int8pack_mm(a.contiguous(), b, sc)))

    f32, bf16, f16 = torch.float32, torch.bfloat16, torch.float16
    for M in (1, 2, 3, 4, 5, 8):
        row(f"int8pack_bf16_m{M}_n37_k120", bf16, M, 37, 120)
    row("int8pack_bf16_m1_n19_k203", bf16, 1, 19, 203)
    row("int8pack_f16_m3_n21_k67", f16, 3, 21, 67)
    row("int8pack_f32_m6_n40_k64", f32, 6, 40, 64)
    row("int8pack_f32_m1_n12_k1024", f32, 1, 12, 1024)
    row("int8pack_bf16_m12_n130_k24", bf16, 12, 130, 24)
    row("int8pack_f32_m33_n20_k16", f32, 33, 20, 16)
    # Eager wants A contiguous; aotrt reads a view (eager's values of its contiguous copy).
    row("int8pack_bf16_transposed_a_m2_n24_k40", bf16, 2, 24, 40,
        a_view=torch.randn(40, 2, generator=g).to(bf16).t())
    row("int8pack_bf16_m0_n8_k16", bf16, 0, 8, 16)
    return out


# --- cpusdpa ---------------------------------------------------------------------------
# _scaled_dot_product_flash_attention_for_cpu at decode (Note [Attention at decode]): q
# [B, H, Lq, E] with Lq <= 8 against k, v [B, Hk, Lk, E] (GQA: Hk divides H), as a static
# cache is read (the cache's [B, Hk, Lmax, E] buffer, a prefix attended through an additive
# mask), random values; inputs q, k, v, then the mask when given; ints: is_causal, has
# mask; outputs eager's (output, logsumexp).
def cpusdpa_cases():
    out = []
    g = torch.Generator().manual_seed(30)

    def row(name, dtype, B, H, Hk, Lq, Lk, E, causal=False, mask=None, q_view=None):
        q = q_view if q_view is not None else torch.randn(B, H, Lq, E, generator=g).to(dtype)
        k = torch.randn(B, Hk, Lk, E, generator=g).to(dtype)
        v = torch.randn(B, Hk, Lk, E, generator=g).to(dtype)
        kk, vv = (t.repeat_interleave(H // Hk, 1) for t in (k, v))  # eager's CPU kernel wants H heads
        o, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            q, kk, vv, 0.0, causal, attn_mask=mask)[:2]
        ins = [q, k, v] + ([] if mask is None else [mask])
        out.append(case(name, "_scaled_dot_product_flash_attention_for_cpu", ins,
                        [int(causal), int(mask is not None)], [o, lse]))

    def cache_mask(B, Lq, Lk, filled, dtype):  # keys past `filled` hidden, as a static cache
        m = torch.zeros(B, 1, Lq, Lk)
        m[..., filled:] = -math.inf
        return m.to(dtype)

    f32, bf16, f16 = torch.float32, torch.bfloat16, torch.float16
    row("decode_gqa_bf16_q1_cache100_e40", bf16, 1, 8, 2, 1, 100, 40, mask=cache_mask(1, 1, 100, 61, bf16))
    row("decode_gqa_bf16_q5_cache37_e24", bf16, 2, 4, 1, 5, 37, 24,
        mask=torch.randn(1, 1, 5, 37, generator=g).to(bf16))
    row("decode_f16_q3_no_mask_e20", f16, 1, 3, 3, 3, 50, 20)
    row("decode_f32_q8_gqa_causal", f32, 1, 4, 2, 8, 8, 16, causal=True)
    row("decode_bf16_q2_transposed_query", bf16, 1, 4, 2, 2, 30, 32,
        q_view=torch.randn(1, 2, 4, 32, generator=g).to(bf16).transpose(1, 2))
    # Rows that hide different keys (a chunk of prompt over a static cache: row i sees keys
    # < 20 + 3 i), keys no row sees (not read: Note [Attention at decode]) and, in the
    # second case, a row that sees none (eager: NaN output, -inf logsumexp).
    stair = torch.zeros(1, 1, 4, 64)
    for i in range(4):
        stair[..., i, 20 + 3 * i:] = -math.inf
    row("decode_f32_q4_rows_hide_different_keys", f32, 1, 4, 2, 4, 64, 16, mask=stair.clone())
    stair[..., 2, :] = -math.inf
    row("decode_bf16_q4_a_row_sees_no_key", bf16, 1, 4, 2, 4, 64, 16, mask=stair.to(bf16))
    # float64 takes the loop of Note [Attention loop order], whatever the length.
    row("f64_q4_a_row_sees_no_key", torch.float64, 1, 4, 2, 4, 64, 16, mask=stair.double())
    return out


# --- scaledmm --------------------------------------------------------------------------
# _scaled_mm (Note [Scaled matmul]) on the CPU, and the float8 conversions it rests on (Note
# [Float8 conversions]).
# _scaled_mm rows: inputs self, mat2, scale_a, scale_b, then bias and scale_result when given;
# ints: out_dtype code (kNone: None), use_fast_accum, has bias, has scale_result, 1 for the
# .out form (the output's layout is the out tensor's); floats: the tolerance, (fraction of the
# largest |eager| value, relative): 0 0 where the operands make every product and sum exact
# in float32 (small integers, power-of-two scales: any gemm order gives eager's bits).
# float8 rows: "float8_decode" (input: the 256 codes as uint8; output: eager's values of
# view(float8)) and "float8_encode" (input: float32 or float64 values; output: the bytes of
# eager's .to(float8) as uint8, NaN's sign included).
FLOAT8 = (torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz)


def float8_probe_values(dtype):
    """Every finite value of the format, the midpoints between neighbours and a float32 ulp
    either side of them, both signs, and the edges (zero, past the max, inf, NaN, tiny)."""
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(dtype).to(torch.float32)
    pos = sorted(set(v for v in codes.tolist() if v == v and v > 0 and v != float("inf")))
    vals = [0.0] + pos
    for lo, hi in zip([0.0] + pos, pos):
        mid = torch.tensor((lo + hi) / 2, dtype=torch.float32)
        vals += [mid.item(), torch.nextafter(mid, torch.tensor(0.0)).item(),
                 torch.nextafter(mid, torch.tensor(float("inf"))).item()]
    top = pos[-1]
    vals += [top * 1.0625, top * 1.125, top * 1.5, top * 4, 1e30, 3.4e38, float("inf"), pos[0] / 4]
    vals = vals + [-v for v in vals] + [float("nan")]
    return torch.tensor(vals, dtype=torch.float32)


def scaledmm_cases():
    out = []
    g = torch.Generator().manual_seed(8)
    e4, e5, f32, bf16, f16 = torch.float8_e4m3fn, torch.float8_e5m2, torch.float32, torch.bfloat16, torch.float16

    for dt in FLOAT8:
        nm = str(dt).split(".")[-1]
        codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
        out.append(case(f"{nm}_decode_every_code", "float8_decode", [codes], [CODES[dt]], codes.view(dt)))
        vals = float8_probe_values(dt)
        out.append(case(f"{nm}_encode_rounds_to_nearest_even", "float8_encode", [vals], [CODES[dt]],
                        vals.to(dt).view(torch.uint8)))
    # float64 reaches float8 through float32: a value a hair above a midpoint becomes the midpoint
    # in float32, which then rounds to even.
    mids = torch.tensor([1.0625 + 2**-40, 1.1875 - 2**-40, 17.0 + 2**-30, -1.0625 - 2**-40], dtype=torch.float64)
    out.append(case("float8_e4m3fn_encode_float64_rounds_twice", "float8_encode", [mids], [CODES[e4]],
                    mids.to(e4).view(torch.uint8)))

    def ints(sizes, lo=-8, hi=8):  # integers every float8 holds exactly
        return torch.randint(lo, hi + 1, sizes, generator=g).to(torch.float64)

    def normal(sizes, dt, scale=1.0):  # values the float8 dtype holds
        return (torch.randn(sizes, generator=g, dtype=torch.float64) * scale).to(dt).to(torch.float64)

    def lay(vals, dt, layout, offset=0):
        """vals (a float64 [R, C] tensor) as a dt view: row-major, column-major ("col"), rows
        with a gap ("gap"), every other element ("step")."""
        R, C = vals.shape
        flat = vals.reshape(-1).tolist()
        if layout == "row":
            return view(flat, dt, [R, C], None, offset)
        if layout == "col":
            return transposed(flat, dt, [R, C], offset)
        if layout == "gap":
            return view(flat, dt, [R, C], [C + 3, 1], offset)
        return view(flat, dt, [R, C], [2 * C, 2], offset)

    def scalar(v):
        return torch.tensor(v, dtype=f32)

    def mm(name, a, b, sa, sb, bias=None, sr=None, out_dtype=None, fast=False, out_layout=None,
           tol=(0, 0)):
        if out_layout is None:
            r = torch._scaled_mm(a, b, sa, sb, bias=bias, scale_result=sr, out_dtype=out_dtype,
                                 use_fast_accum=fast)
        else:
            M, N = a.shape[0], b.shape[1]
            r = lay(torch.zeros(M, N, dtype=torch.float64), out_dtype or a.dtype, out_layout, 1)
            torch.ops.aten._scaled_mm.out(a, b, sa, sb, bias, sr, out_dtype, fast, out=r)
        inputs = [a, b, sa, sb] + ([bias] if bias is not None else []) + ([sr] if sr is not None else [])
        ints_ = [CODES[out_dtype] if out_dtype is not None else NONE, int(fast), int(bias is not None),
                 int(sr is not None), int(out_layout is not None)]
        out.append(case(f"scaled_mm_{name}", "_scaled_mm", inputs, ints_, r, list(tol)))

    def ab(M, K, N, da=e4, db=e4, la="row", lb="col", maker=ints):
        return lay(maker([M, K]) if maker is ints else maker([M, K], da), da, la), \
            lay(maker([K, N]) if maker is ints else maker([K, N], db), db, lb, 2)

    a, b = ab(5, 16, 7)
    mm("tensorwise_f32", a, b, scalar(0.5), scalar(2.0), out_dtype=f32)
    mm("tensorwise_default_out_e4m3_saturates", a, b, scalar(1.0), scalar(2.0))
    mm("tensorwise_bf16", a, b, scalar(0.25), scalar(1.0), out_dtype=bf16)
    mm("tensorwise_f16", a, b, scalar(4.0), scalar(0.125), out_dtype=f16)
    mm("tensorwise_f64", a, b, scalar(1.0), scalar(1.0), out_dtype=torch.float64)
    mm("tensorwise_int32_out", a, b, scalar(0.5), scalar(0.25), out_dtype=torch.int32)
    mm("scale_result_divides_e5m2_out", a, b, scalar(2.0), scalar(2.0), sr=scalar(4.0), out_dtype=e5)
    mm("scale_result_third_e4m3_out", a, b, scalar(1.0), scalar(1.0), sr=scalar(3.0), out_dtype=e4)
    mm("scale_result_ignored_f32_out", a, b, scalar(1.0), scalar(1.0), sr=scalar(4.0), out_dtype=f32)
    mm("scale_result_ignored_when_out_dtype_none", a, b, scalar(0.25), scalar(0.25), sr=scalar(4.0))
    mm("fast_accum_ignored", a, b, scalar(0.5), scalar(0.5), out_dtype=bf16, fast=True)
    mm("saturates_e4m3_out", a, b, scalar(64.0), scalar(64.0), out_dtype=e4)
    mm("overflows_e5m2_out_to_inf", a, b, scalar(512.0), scalar(256.0), out_dtype=e5)
    a5, b5 = ab(4, 32, 6, e5, e4)
    mm("e5m2_by_e4m3_default_out_e5m2", a5, b5, scalar(0.5), scalar(0.5))
    a5, b5 = ab(4, 32, 6, e4, e5)
    mm("e4m3_by_e5m2_f32", a5, b5, scalar(1.0), scalar(0.5), out_dtype=f32)
    a5, b5 = ab(3, 16, 5, e5, e5)
    mm("e5m2_by_e5m2_bf16", a5, b5, scalar(2.0), scalar(0.5), out_dtype=bf16)
    a5, b5 = ab(3, 16, 5, torch.float8_e4m3fnuz, torch.float8_e4m3fnuz)
    mm("e4m3fnuz_default_out_saturates_to_nan", a5, b5, scalar(4.0), scalar(4.0))
    a5, b5 = ab(3, 16, 5, torch.float8_e5m2fnuz, torch.float8_e4m3fnuz)
    mm("e5m2fnuz_by_e4m3fnuz_f32", a5, b5, scalar(1.0), scalar(0.5), out_dtype=f32)

    M, K, N = 6, 32, 9
    a, b = ab(M, K, N)
    pow2 = lambda sizes: (2.0 ** torch.randint(-3, 3, sizes, generator=g)).to(f32)
    mm("rowwise_f32", a, b, pow2([M, 1]), pow2([1, N]), out_dtype=f32)
    mm("rowwise_default_out_e4m3", a, b, pow2([M, 1]), pow2([1, N]))
    mm("rowwise_bias_bf16", a, b, pow2([M, 1]), pow2([1, N]), bias=(ints([N]) / 4).to(bf16), out_dtype=bf16)
    mm("bias_f32_f32_out", a, b, scalar(0.5), scalar(1.0), bias=(ints([N]) / 8).to(f32), out_dtype=f32)
    mm("bias_f64_f32_out", a, b, scalar(1.0), scalar(1.0), bias=ints([N]).to(torch.float64) / 3,
       out_dtype=f32)
    mm("bias_1xN_f16_out", a, b, scalar(1.0), scalar(0.5), bias=ints([1, N]).to(f16), out_dtype=f16)
    mm("bias_bf16_e4m3_out_scale_result", a, b, scalar(1.0), scalar(1.0), bias=ints([N]).to(bf16),
       sr=scalar(2.0), out_dtype=e4)
    a, b = ab(5, 24, 4, la="col", lb="row")
    mm("self_column_major_mat2_row_major", a, b, scalar(0.5), scalar(1.0), out_dtype=f32)
    a, b = ab(5, 24, 4, la="gap", lb="step")
    mm("gapped_and_stepped_operands", a, b, scalar(1.0), scalar(0.5), out_dtype=bf16)
    a, b = ab(1, 16, 1)
    mm("one_by_one", a, b, scalar(1.0), scalar(1.0), out_dtype=f32)
    a, b = ab(3, 0, 4)
    mm("k0_bias_only", a, b, scalar(1.0), scalar(1.0), bias=ints([4]).to(f32), out_dtype=f32)
    a, b = ab(0, 16, 4)
    mm("m0", a, b, scalar(1.0), scalar(1.0), out_dtype=bf16)
    nan = lay(ints([3, 16]), e4, "row")
    nan[1, 3] = float("nan")
    mm("nan_propagates_to_its_row", nan, lay(ints([16, 4]), e4, "col"), scalar(1.0), scalar(1.0),
       out_dtype=f32)
    a, b = ab(7, 32, 5)
    mm("out_column_major_f32", a, b, scalar(0.5), scalar(2.0), out_dtype=f32, out_layout="col")
    mm("out_gapped_bf16", a, b, scalar(1.0), scalar(1.0), out_dtype=bf16, out_layout="gap")
    mm("out_stepped_e4m3_scale_result", a, b, scalar(1.0), scalar(1.0), sr=scalar(2.0), out_dtype=e4,
       out_layout="step")
    mm("out_without_out_dtype", a, b, scalar(1.0), scalar(1.0), out_layout="row")
    # Operands that round: float32 sums in another order than eager's gemm; the output's own
    # rounding may then go the other way (one ulp of it).
    a, b = ab(17, 64, 24, maker=normal)
    mm("random_f32", a, b, scalar(0.37), scalar(1.93), out_dtype=f32, tol=(1e-5, 0))
    mm("random_bf16_bias", a, b, scalar(0.37), scalar(1.93), bias=torch.randn(24, generator=g).to(bf16),
       out_dtype=bf16, tol=(1e-5, 2**-7))
    mm("random_rowwise_f16", a, b, (torch.rand(17, 1, generator=g) + 0.5), (torch.rand(1, 24, generator=g) + 0.5),
       out_dtype=f16, tol=(1e-5, 2**-10))
    mm("random_e4m3_out", a, b, scalar(0.37), scalar(1.93), sr=scalar(0.7), out_dtype=e4, tol=(1e-5, 2**-3))
    return out


# --- dynquant --------------------------------------------------------------------------
# _dyn_quant_pack_4bit_weight and _dyn_quant_matmul_4bit (Note [Dynamic int4 matmul]). Pack
# rows: inputs weights (uint8 [N, K/2]), scales_zeros, then bias when given; ints:
# block_size, in_features, out_features, has bias. Matmul rows: inputs inp and the packed
# weight eager made; ints: block_size, in_features, out_features. Both exact: ATen's
# reference kernel is float32 arithmetic in a fixed order. (inp is contiguous: ATen reads any
# inp's memory as dense rows, and aotrt refuses another layout.)
def dynquant_cases():
    out = []
    g = torch.Generator().manual_seed(9)
    f32, bf16 = torch.float32, torch.bfloat16
    P, Mm = torch.ops.aten._dyn_quant_pack_4bit_weight, torch.ops.aten._dyn_quant_matmul_4bit

    def weights(N, K, bs, sz_dtype=f32, with_bias=False):
        w = torch.randint(0, 256, (N, K // 2), dtype=torch.uint8, generator=g)
        sz = (torch.rand(N, K // bs, generator=g) * 0.1 + 0.01).to(sz_dtype)
        bias = torch.randn(N, generator=g) if with_bias else None
        return w, sz, bias

    def pack(name, N, K, bs, sz_dtype=f32, with_bias=False, w_view=None):
        w, sz, bias = weights(N, K, bs, sz_dtype, with_bias)
        if w_view is not None:
            w = w_view(w)
        r = P(w, sz, bias, bs, K, N)
        out.append(case(f"dyn_quant_pack_{name}", "_dyn_quant_pack_4bit_weight",
                        [w, sz] + ([bias] if bias is not None else []), [bs, K, N, int(bias is not None)], r))

    def mm(name, M, N, K, bs, dtype=f32, with_bias=False, x=None):
        w, sz, bias = weights(N, K, bs, f32, with_bias)
        p = P(w, sz, bias, bs, K, N)
        x = (torch.randn(M, K, generator=g) * 2).to(dtype) if x is None else x
        out.append(case(f"dyn_quant_matmul_{name}", "_dyn_quant_matmul_4bit", [x, p], [bs, K, N],
                        Mm(x, p, bs, K, N)))

    pack("groupwise_f32", 8, 64, 32)
    pack("groupwise_bias", 8, 64, 32, with_bias=True)
    pack("channelwise_bf16_scales", 4, 48, 48, bf16, True)
    pack("transposed_weights", 6, 64, 64, w_view=lambda w: w.t().contiguous().t())
    mm("groupwise_f32", 5, 16, 64, 32)
    mm("groupwise_bias", 3, 24, 128, 64, with_bias=True)
    mm("groupwise_k256_bs128", 7, 24, 256, 128, with_bias=True)
    mm("channelwise_f32", 4, 8, 48, 48)
    mm("channelwise_bias", 2, 8, 40, 40, with_bias=True)
    mm("channelwise_bf16_truncates", 3, 16, 64, 64, bf16, with_bias=True)
    mm("one_row", 1, 8, 96, 32, with_bias=True)
    rows = torch.randn(6, 64, generator=g)
    rows[0] = 0  # rmin == rmax: scale 1
    rows[1] = rows[1].abs() + 0.5  # all positive: rmin 0
    rows[2] = -rows[2].abs() - 0.5  # all negative: rmax 0
    rows[3, 7] = float("inf")  # scale 0: the row's results are 0
    rows[4, 9] = float("nan")
    rows[5] = 3.0
    mm("edge_rows", 6, 8, 64, 32, with_bias=True, x=rows)
    mm("m0", 0, 8, 64, 32)
    return out


# --- attention -------------------------------------------------------------------------
# _efficient_attention_forward (CUDA only: ATen has no CPU kernel for it). The reference is
# eager CPU attention in float64 on the same values (softmax(q k^T * scale + bias, causal
# mask) v, logsumexp over the keys); sizes, strides and the returned ints are those of
# torch's meta function for the op. inputs: query, key, value [B, M, H, K] views, then the
# bias when given (an expanded bias as the tensor it was expanded from, size 1 where the test
# gives it stride 0); ints: custom_mask_type, compute_log_sumexp, max_seqlen_k (kNone: None),
# then the max_seqlen_q and max_seqlen_k the op returns; floats: the scale, when given.
# outputs: output [B, M, H, Kv], logsumexp [B, H, ceil(M / 32) * 32] (padding rows +inf,
# as the memory-efficient kernel writes them) or [B, H, 0].
def attention_cases():
    out = []
    g = torch.Generator().manual_seed(7)

    def rand(sizes, dtype):  # multiples of 1/64 in [-1, 1]: exact in bf16 and fp16 too
        return (torch.randint(-64, 65, sizes, generator=g, dtype=torch.int64) / 64).to(dtype)

    def bmhk(B, M, H, K, dtype, from_bhmk=False):
        if from_bhmk:  # [B, H, M, K] memory seen as BMHK, as OpInfo's samples make them
            return rand([B, H, M, K], dtype).transpose(1, 2)
        return rand([B, M, H, K], dtype)

    def row(name, q, k, v, mask_type, lse, bias=None, scale=None, max_seqlen_k=None):
        meta = torch.ops.aten._efficient_attention_forward(
            q.to("meta"), k.to("meta"), v.to("meta"), None if bias is None else bias.to("meta"),
            None, None, None, max_seqlen_k, 0.0, mask_type, lse, scale=scale)
        M, N = q.shape[1], k.shape[1]
        qh, kh, vh = (t.double().permute(0, 2, 1, 3) for t in (q, k, v))
        s = qh @ kh.transpose(-1, -2) * (scale if scale is not None else q.shape[-1] ** -0.5)
        if bias is not None:
            s = s + bias.double()
        if mask_type:
            offset = 0 if mask_type == 1 else N - M
            hidden = torch.arange(N)[None, :] > torch.arange(M)[:, None] + offset
            if hidden.all(-1).any():
                raise ValueError(f"{name}: a query row sees no key; its result is no eager fact")
            s = s.masked_fill(hidden, -math.inf)
        o = (torch.softmax(s, -1) @ vh).permute(0, 2, 1, 3).contiguous().to(q.dtype)
        want_o = torch.empty_strided(meta[0].shape, meta[0].stride(), dtype=meta[0].dtype)
        want_o.copy_(o)
        want_lse = torch.full(meta[1].shape, math.inf, dtype=meta[1].dtype)
        if lse:
            want_lse[:, :, :M] = torch.logsumexp(s, -1)
        assert want_lse.stride() == meta[1].stride()
        ins = [q, k, v]
        if bias is not None:  # an expanded bias as its un-expanded tensor: the test expands it
            base = bias[tuple(slice(0, 1) if st == 0 else slice(None) for st in bias.stride())]
            ins.append(torch.empty(base.shape, dtype=base.dtype).copy_(base))
        ints = [mask_type, int(lse), NONE if max_seqlen_k is None else max_seqlen_k, meta[4], meta[5]]
        out.append(case(name, "_efficient_attention_forward", ins, ints, [want_o, want_lse],
                        floats=[] if scale is None else [scale]))

    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    # OpInfo's sample (torch.ops.aten._efficient_attention_forward; batch and heads 2, not 4):
    # transposed BHMK memory.
    q, k, v = (bmhk(2, L, 2, 8, f32, True) for L in (11, 32, 32))
    row("opinfo_causal_top_left_f32", q, k, v, 1, False)
    row("opinfo_causal_bottom_right_scale1_lse_f32", q, k, v, 2, True, scale=1.0)
    row("no_mask_bias_kv_dim_lse_f32", bmhk(1, 20, 2, 8, f32), bmhk(1, 45, 2, 8, f32),
        bmhk(1, 45, 2, 16, f32), 0, True, bias=rand([1, 2, 20, 45], f32))
    # sdpa expands a broadcast mask to [B, H, M, N] (stride 0) before the kernel.
    row("bottom_right_expanded_bias_f32", bmhk(2, 12, 2, 8, f32), bmhk(2, 40, 2, 8, f32),
        bmhk(2, 40, 2, 8, f32), 2, True, bias=rand([1, 1, 12, 40], f32).expand(2, 2, 12, 40))
    # Several query and key tiles of aotrt's kernel (32 x 32), the diagonal 30 keys in.
    row("bottom_right_tiles_lse_f32", bmhk(1, 70, 1, 8, f32), bmhk(1, 100, 1, 8, f32),
        bmhk(1, 100, 1, 8, f32), 2, True)
    row("max_seqlen_k_returned_f32", bmhk(1, 5, 1, 8, f32), bmhk(1, 7, 1, 8, f32),
        bmhk(1, 7, 1, 8, f32), 0, False, max_seqlen_k=99)
    # Half precisions: cuDNN's kernels where it serves the call (no bias with a bottom-right
    # mask; M a multiple of 32 when the logsumexp is asked), aotrt's otherwise.
    for dt in (f16, bf16):
        nm = DTYPES[dt][1:].lower()
        row(f"bottom_right_lse_{nm}", bmhk(1, 64, 1, 8, dt), bmhk(1, 96, 1, 8, dt),
            bmhk(1, 96, 1, 8, dt), 2, True)
        row(f"causal_top_left_{nm}", bmhk(1, 40, 1, 8, dt), bmhk(1, 56, 1, 8, dt),
            bmhk(1, 56, 1, 8, dt), 1, False)
    row("bias_bottom_right_odd_lengths_lse_f16", bmhk(1, 37, 1, 8, f16), bmhk(1, 50, 1, 8, f16),
        bmhk(1, 50, 1, 8, f16), 2, True, bias=rand([1, 1, 37, 50], f16))
    return out


# --- flash attention -------------------------------------------------------------------
# _scaled_dot_product_flash_attention (query, key, value [B, H, L, E]) and
# _flash_attention_forward ([B, L, H, E]), CUDA only: ATen's kernel is FlashAttention-2's. The
# reference is eager CPU attention in float64 with FlashAttention's causal mask, aligned to the
# bottom-right corner (key j hidden from query i when j > i + Lk - Lq); layouts and returned
# ints are those of torch's meta functions. inputs: query, key, value; ints: is_causal, then
# for the SDPA op the max_q and max_k it returns, for the forward window_size_left and
# window_size_right (kNone: None); floats: the scale, when given. outputs: output, logsumexp
# [B, H, Lq]. float32 rows are aotrt's own (ATen's kernel takes fp16 and bf16 only).
def flash_cases():
    out = []
    g = torch.Generator().manual_seed(11)

    def rand(sizes, dtype):  # multiples of 1/64 in [-1, 1]: exact in bf16 and fp16 too
        return (torch.randint(-64, 65, sizes, generator=g, dtype=torch.int64) / 64).to(dtype)

    def meta_of(t):  # the same sizes and strides on the meta device
        return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")

    def reference(q, k, v, causal, scale):  # [B, H, L, E] in float64
        H, Hk, Lq, Lk = q.shape[1], k.shape[1], q.shape[2], k.shape[2]
        k, v = (t.double().repeat_interleave(H // Hk, 1) for t in (k, v))
        s = q.double() @ k.transpose(-1, -2) * (scale if scale is not None else q.shape[-1] ** -0.5)
        if causal:
            hidden = torch.arange(Lk)[None, :] > torch.arange(Lq)[:, None] + (Lk - Lq)
            if hidden.all(-1).any():
                raise ValueError("a query row sees no key; its result is no eager fact")
            s = s.masked_fill(hidden, -math.inf)
        return torch.softmax(s, -1) @ v, torch.logsumexp(s, -1)

    def laid_out(meta, values):
        t = torch.empty_strided(meta.shape, meta.stride(), dtype=meta.dtype)
        return t.copy_(values)

    def sdpa_row(name, q, k, v, causal, scale=None):
        meta = torch.ops.aten._scaled_dot_product_flash_attention(
            meta_of(q), meta_of(k), meta_of(v), 0.0, causal, False, scale=scale)
        o, lse = reference(q, k, v, causal, scale)
        out.append(case(name, "_scaled_dot_product_flash_attention", [q, k, v],
                        [int(causal), meta[4], meta[5]], [laid_out(meta[0], o), laid_out(meta[1], lse)],
                        floats=[] if scale is None else [scale]))

    def forward_row(name, q, k, v, causal, scale=None, window=(None, None)):
        meta = torch.ops.aten._flash_attention_forward(
            meta_of(q), meta_of(k), meta_of(v), None, None, q.shape[1], k.shape[1], 0.0, causal, False,
            scale=scale, window_size_left=window[0], window_size_right=window[1])
        o, lse = reference(*(t.transpose(1, 2) for t in (q, k, v)), causal, scale)
        ints = [int(causal)] + [NONE if w is None else w for w in window]
        out.append(case(name, "_flash_attention_forward", [q, k, v], ints,
                        [laid_out(meta[0], o.transpose(1, 2)), laid_out(meta[1], lse)],
                        floats=[] if scale is None else [scale]))

    def blhe(B, L, H, E, dtype):
        return rand([B, L, H, E], dtype)

    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    # SDPA: q, k, v as attention modules pass them (linear -> view -> transpose: [B, L, H, E]
    # memory), the output laid out like the query. Long rows and more head dims are in
    # tests/unit/cuda/test_cuda_attention.cpp, against a host reference.
    for dt in (f16, bf16):
        nm = DTYPES[dt][1:].lower()
        sdpa_row(f"sdpa_causal_square_e64_{nm}", *(blhe(1, 9, 1, 64, dt).transpose(1, 2) for _ in range(3)), True)
    sdpa_row("sdpa_gqa_causal_odd_e128_bf16", blhe(1, 7, 2, 128, bf16).transpose(1, 2),
             blhe(1, 7, 1, 128, bf16).transpose(1, 2), blhe(1, 7, 1, 128, bf16).transpose(1, 2), True)
    sdpa_row("sdpa_contiguous_query_lq_lk_f16", rand([1, 2, 21, 16], f16), rand([1, 2, 45, 16], f16),
             rand([1, 2, 45, 16], f16), False)
    sdpa_row("sdpa_scale_causal_tiles_f32", rand([1, 1, 70, 8], f32), rand([1, 1, 70, 8], f32),
             rand([1, 1, 70, 8], f32), True, scale=0.5)
    # The forward: [B, L, H, E]; the causal diagonal ends at the bottom-right corner.
    forward_row("forward_bottom_right_f16", blhe(1, 24, 2, 16, f16), blhe(1, 56, 2, 16, f16),
                blhe(1, 56, 2, 16, f16), True)
    forward_row("forward_decode_gqa_e64_bf16", blhe(1, 1, 4, 64, bf16), blhe(1, 19, 2, 64, bf16),
                blhe(1, 19, 2, 64, bf16), True)
    forward_row("forward_bottom_right_tiles_f32", blhe(1, 33, 1, 8, f32), blhe(1, 100, 1, 8, f32),
                blhe(1, 100, 1, 8, f32), True)
    # Windows that limit nothing (ATen turns a side of at least Lk into none) are served.
    forward_row("forward_windows_limiting_nothing_f32", blhe(1, 9, 2, 8, f32), blhe(1, 12, 2, 8, f32),
                blhe(1, 12, 2, 8, f32), False, scale=0.25, window=(-1, 12))
    # q, k, v sliced out of one packed [B, L, 3, H, E] projection: not dense, so the output
    # is a dense [B, L, H, E] tensor (empty_like's rule).
    qkv = rand([2, 17, 3, 2, 8], f16)
    forward_row("forward_packed_qkv_odd_f16", qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], True)
    return out


# --- scaledgrouped ---------------------------------------------------------------------
# _scaled_grouped_mm (Note [Scaled grouped matmul]): torch's CPU has no kernel for it, so the
# outputs come from its formula: per group, the float8_e4m3fn values' product summed in
# float64, times scale_a, times scale_b, one rounding to bfloat16; out's sizes and (padded)
# strides are torch's meta function's. Inputs: mat_a (row-major), mat_b (column-major),
# scale_a, scale_b, then offs when given; ints: whether offs is given. Operands are halves in
# [-4, 4] and scales powers of two, so every product and sum is exact in float32 (eager's bits
# in any order), except in the *_random_scales row. Rows or groups no range covers are zero,
# aotrt's choice where ATen leaves them uninitialized (the *_uncovered_* and *_empty_* rows).
def scaled_grouped_reference(a, b, sa, sb, offs):
    meta = torch._scaled_grouped_mm(a.to("meta"), b.to("meta"), sa.to("meta"), sb.to("meta"),
                                    offs=None if offs is None else offs.to("meta"),
                                    out_dtype=torch.bfloat16)
    out = torch.empty_strided(meta.shape, meta.stride(), dtype=torch.float64).zero_()
    a64, b64, sa64, sb64 = (t.double() for t in (a, b, sa, sb))
    ends = [] if offs is None else [int(v) for v in offs]
    starts = [0] + ends[:-1]
    if a.dim() == 2 and b.dim() == 3:
        for g, (s0, e0) in enumerate(zip(starts, ends)):
            out[s0:e0] = (a64[s0:e0] @ b64[g]) * sa64[s0:e0, None] * sb64[g][None, :]
    elif a.dim() == 3 and b.dim() == 2:
        for g, (s0, e0) in enumerate(zip(starts, ends)):
            out[:, s0:e0] = (a64[g] @ b64[:, s0:e0]) * sa64[g][:, None] * sb64[s0:e0][None, :]
    elif a.dim() == 2:
        M, N = a.shape[0], b.shape[1]
        for g, (s0, e0) in enumerate(zip(starts, ends)):
            if e0 > s0:
                out[g] = ((a64[:, s0:e0] @ b64[s0:e0]) * sa64[g * M:(g + 1) * M, None]
                          * sb64[g * N:(g + 1) * N][None, :])
    else:
        out[:] = (a64 @ b64) * sa64[:, :, None] * sb64[:, None, :]
    r = torch.empty_strided(meta.shape, meta.stride(), dtype=torch.bfloat16)
    r.copy_(out.float())  # exact in float32, then one rounding
    return r


def scaledgrouped_cases():
    out = []
    g = torch.Generator().manual_seed(31)
    f8 = torch.float8_e4m3fn

    def halves(*sizes):
        return (torch.randint(-8, 9, sizes, generator=g) / 2).to(f8)

    def pow2(*sizes):
        return 2.0 ** torch.randint(-3, 2, sizes, generator=g).float()

    def col_major(t):  # [.., K, N] values laid out column-major in the last two dims
        return t.transpose(-2, -1).contiguous().transpose(-2, -1)

    def row(name, a, b, sa, sb, offs=None):
        r = scaled_grouped_reference(a, b, sa, sb, offs)
        ins = [a, b, sa, sb] + ([offs] if offs is not None else [])
        out.append(case(name, "_scaled_grouped_mm", ins, [int(offs is not None)], r))

    i32 = torch.int32
    row("sgmm_2d_3d_with_an_empty_group", halves(40, 32), col_major(halves(4, 32, 16)),
        pow2(40), pow2(4, 16), torch.tensor([10, 10, 33, 40], dtype=i32))
    row("sgmm_3d_2d", halves(3, 8, 32), col_major(halves(32, 48)), pow2(3, 8), pow2(48),
        torch.tensor([16, 16, 48], dtype=i32))
    row("sgmm_2d_2d_k_split", halves(8, 64), col_major(halves(64, 16)), pow2(3 * 8), pow2(3 * 16),
        torch.tensor([16, 48, 64], dtype=i32))
    row("sgmm_2d_2d_empty_k_group_is_zero", halves(8, 32), col_major(halves(32, 16)), pow2(3 * 8),
        pow2(3 * 16), torch.tensor([16, 16, 32], dtype=i32))
    row("sgmm_3d_3d", halves(2, 8, 32), col_major(halves(2, 32, 16)), pow2(2, 8), pow2(2, 16))
    row("sgmm_2d_3d_uncovered_rows_are_zero", halves(32, 16), col_major(halves(2, 16, 32)),
        pow2(32), pow2(2, 32), torch.tensor([8, 20], dtype=i32))
    row("sgmm_2d_3d_random_scales", halves(37, 64), col_major(halves(3, 64, 32)),
        torch.rand(37, generator=g) + 0.1, torch.rand(3, 32, generator=g) + 0.1,
        torch.tensor([5, 21, 37], dtype=i32))
    return out


# --- int4cuda --------------------------------------------------------------------------
# CUDA's _weight_int4pack_mm (Note [Int4 tinygemm layout]): inputs A [M, K] bfloat16, B (the
# packed weight), qScaleAndZeros [K/g, N, 2] bfloat16; ints: qGroupSize, innerKTiles. torch's
# CPU can run neither _weight_int4pack_mm on this layout nor the CUDA packer, so B comes from
# tinygemm_pack below and the output from the op's formula: w = bfloat16((q - 8) * scale +
# zero) (one rounding: the values are chosen so that the sum is exact in float32 before it),
# out = bfloat16(A @ w^T) summed in float64. tests/e2e/test_cuda_int4_tinygemm.py checks the
# layout against torch's own packer on a GPU.
def tinygemm_pack(q, inner_k_tiles):
    """q [N, K] (ints 0..15) as CUDA's torch.ops.aten._convert_weight_to_int4pack(w,
    inner_k_tiles) packs w = (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8), written from the
    layout facts of ATen's native/cuda/int4mm.cu: int32 [N/8, K/(inner_k_tiles*16), 32,
    inner_k_tiles/2]; q[n, k] is in n-tile n // 8 and outer k-tile k // (inner_k_tiles * 16);
    with t = the 16-value k-tile inside the outer one and kk = k % 16, in lane
    (n % 8) * 4 + (kk % 8) // 2, int32 t // 2 of the lane, nibble (bits 4i..4i+3)
    i = (kk % 2) * 4 + (t % 2) * 2 + (kk >= 8)."""
    N, K = q.shape
    outer = K // (inner_k_tiles * 16)
    words = [0] * (N // 8 * outer * 32 * (inner_k_tiles // 2))
    for n in range(N):
        for k in range(K):
            t, kk = (k % (inner_k_tiles * 16)) // 16, k % 16
            lane = (n % 8) * 4 + (kk % 8) // 2
            word = (((n // 8) * outer + k // (inner_k_tiles * 16)) * 32 + lane) * (inner_k_tiles // 2) + t // 2
            nibble = (kk % 2) * 4 + (t % 2) * 2 + (1 if kk >= 8 else 0)
            words[word] |= int(q[n, k]) << (4 * nibble)
    signed = [w - (1 << 32) if w >= (1 << 31) else w for w in words]
    return torch.tensor(signed, dtype=torch.int32).reshape(N // 8, outer, 32, inner_k_tiles // 2)


def int4cuda_cases():
    out = []
    g = torch.Generator().manual_seed(21)
    bf = torch.bfloat16

    def row(name, M, N, K, group, inner, a_view=None, exact=True):
        q = torch.randint(0, 16, (N, K), generator=g)
        if exact:  # powers of two and quarters: w, every product and every sum exact
            scale = 2.0 ** torch.randint(-2, 2, (K // group, N), generator=g).double()
            zero = torch.randint(-4, 5, (K // group, N), generator=g).double() / 4
        else:  # bfloat16 values of a few bits each: (q - 8) * scale + zero exact in float32
            scale = (torch.rand(K // group, N, generator=g) * 0.09 + 0.01).to(bf).double()
            zero = ((torch.rand(K // group, N, generator=g) - 0.5) * 0.2).to(bf).double()
        sz = torch.stack([scale, zero], dim=-1).to(bf)
        a = a_view if a_view is not None else view(pattern(M * K, 0, 0.125), bf, [M, K])
        s64, z64 = sz[..., 0].double(), sz[..., 1].double()
        w = ((q.double() - 8).T.reshape(K // group, group, N) * s64[:, None, :] + z64[:, None, :])
        w = w.reshape(K, N).float().to(bf)  # exact in float32, then one rounding
        r = (a.double() @ w.double()).to(bf)
        out.append(case(name, "_weight_int4pack_mm", [a, tinygemm_pack(q, inner), sz],
                        [group, inner], r))

    row("int4_m3_n16_k64_g32_inner2", 3, 16, 64, 32, 2)
    row("int4_m17_n24_k128_g64_inner4", 17, 24, 128, 64, 4)
    row("int4_m1_n32_k256_g128_inner8", 1, 32, 256, 128, 8)
    row("int4_m5_n8_k256_g256_inner2", 5, 8, 256, 256, 2)
    row("int4_transposed_a_m4_n16_k128_g32_inner8", 4, 16, 128, 32, 8,
        a_view=transposed(pattern(4 * 128, 3, 0.25), bf, [4, 128], offset=1))
    row("int4_rounded_weights_m6_n40_k128_g32_inner4", 6, 40, 128, 32, 4, exact=False)
    row("int4_m0_n16_k64_g64_inner4", 0, 16, 64, 64, 4)
    return out


# --- rnn -------------------------------------------------------------------------------
# The fused cells (Note [Fused RNN cells]): torch's CPU has no kernel for
# _thnn_fused_lstm_cell or _thnn_fused_gru_cell, so the outputs come from ATen's formulas
# (native/cuda/RNN.cu), computed here with torch's CPU ops in ATen's accumulation type
# (float32 for float16 and bfloat16, float64 for float64), the sums in ATen's order, each
# output rounded once to the operands' dtype. Inputs: input_gates, hidden_gates, cx / hx,
# then input_bias and hidden_bias when given; ints: whether the biases are given. Outputs:
# hy, cy, workspace (LSTM) or hy, workspace (GRU), contiguous as torch's meta function
# (empty_like(..., contiguous_format)) makes them.
def fused_cell_reference(kind, ig, hg, prev, ib=None, hb=None):
    acc = torch.float64 if ig.dtype == torch.float64 else torch.float32
    chunks = 4 if kind == "lstm" else 3
    H = prev.shape[1]
    x, h, p = ig.to(acc), hg.to(acc), prev.to(acc)
    zeros = torch.zeros(chunks * H, dtype=acc)
    b1, b2 = (ib.to(acc), hb.to(acc)) if ib is not None else (zeros, zeros)
    q = lambda t, k: t[..., k * H:(k + 1) * H]
    pre = lambda k: q(x, k) + q(h, k) + q(b1, k) + q(b2, k)
    out = lambda t: t.to(ig.dtype).contiguous()
    if kind == "lstm":
        i, f, o = torch.sigmoid(pre(0)), torch.sigmoid(pre(1)), torch.sigmoid(pre(3))
        g = torch.tanh(pre(2))
        cy = f * p + i * g
        hy = o * torch.tanh(cy)
        return out(hy), out(cy), out(torch.cat([i, f, g, o], dim=1))
    r, z = torch.sigmoid(pre(0)), torch.sigmoid(pre(1))
    hn = q(h, 2) + q(b2, 2)
    n = torch.tanh(q(x, 2) + q(b1, 2) + r * hn)
    hy = n + z * (p - n)
    return out(hy), out(torch.cat([r, z, n, p, hn], dim=1))


def rnn_cases():
    out = []
    f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16

    def row(name, kind, B, H, dtype, bias, gates_view="dense", prev_view="dense"):
        G = (4 if kind == "lstm" else 3) * H
        vals = lambda n, start: pattern(n, start, 0.35)
        if gates_view == "transposed":  # [B, G] whose memory is column-major, at an offset
            ig = transposed(vals(B * G, 1), dtype, [B, G], offset=3)
            hg = transposed(vals(B * G, 4), dtype, [B, G])
        elif gates_view == "gapped":  # every other column of a wider buffer
            ig = view(vals(B * G, 1), dtype, [B, G], [2 * G + 1, 2], 1)
            hg = view(vals(B * G, 4), dtype, [B, G], [G + 3, 1], 2)
        else:
            ig, hg = view(vals(B * G, 1), dtype, [B, G]), view(vals(B * G, 4), dtype, [B, G])
        if prev_view == "transposed":
            prev = transposed(pattern(B * H, 2, 0.5), dtype, [B, H])
        else:
            prev = view(pattern(B * H, 2, 0.5), dtype, [B, H])
        inputs = [ig, hg, prev]
        if bias:
            inputs += [view(vals(G, 5), dtype, [G]), view(vals(G, 7), dtype, [G], [2], 1)]
        r = fused_cell_reference(kind, *inputs)
        op = "_thnn_fused_lstm_cell" if kind == "lstm" else "_thnn_fused_gru_cell"
        out.append(case(name, op, inputs, [int(bias)], r))

    for kind in ("lstm", "gru"):
        row(f"{kind}_f32_bias", kind, 3, 4, f32, True)
        row(f"{kind}_f32_no_bias_transposed_gates", kind, 2, 5, f32, False, "transposed")
        row(f"{kind}_f64_bias_gapped_gates", kind, 3, 2, f64, True, "gapped")
        row(f"{kind}_bf16_bias_transposed_prev", kind, 4, 3, bf16, True, prev_view="transposed")
        row(f"{kind}_f16_no_bias", kind, 2, 6, f16, False)
        row(f"{kind}_empty_batch", kind, 0, 3, f32, True)
        row(f"{kind}_zero_hidden", kind, 2, 0, f32, False)
    return out


FAMILIES = {"reduce": reduce_cases, "scan": scan_cases, "sort": sort_cases, "views": views_cases, "indexing": indexing_cases,
            "shape": shape_cases, "pooling": pooling_cases, "embedding": embedding_cases,
            "linear": linear_cases, "segment": segment_cases, "histogram": histogram_cases,
            "distance": distance_cases,
            "linalg": linalg_cases, "linalgproxy": linalgproxy_cases, "pointwise": pointwise_cases, "matmul": matmul_cases,
            "conv": conv_cases, "complex": complex_cases, "fft": fft_cases,
            "special": special_cases, "intmatmul": intmatmul_cases, "int8pack": int8pack_cases,
            "cpusdpa": cpusdpa_cases,
            "scaledmm": scaledmm_cases, "dynquant": dynquant_cases,
            "attention": attention_cases, "flash": flash_cases, "rnn": rnn_cases,
            "int4cuda": int4cuda_cases, "scaledgrouped": scaledgrouped_cases}


def main(names):
    for name in names or FAMILIES:
        text = (f"// Generated by tests/unit/ops/gen_ops_reference.py from torch {torch.__version__} eager: "
                "do not edit.\n// OpCase{name, op, inputs, ints, floats, outputs}; see ops_testing.h.\n"
                f"const std::vector<OpCase> k{name.capitalize()}Cases = {{\n" + "".join(FAMILIES[name]()) + "};\n")
        (HERE / f"reference_{name}.inc").write_text(text)
        print(f"wrote reference_{name}.inc")


if __name__ == "__main__":
    main(sys.argv[1:])
