"""Reading the generated `<hash>.wrapper.cpp` (and, on CPU, `<hash>.kernel.cpp`): which
fallback ops it calls, on which views, and what the kernels look like.

The zoo uses this to check that a model exercises what it is there for (e.g. that the CUDA
wrapper hands `aoti_torch_cuda_bmm_out` a permuted view rather than a packed copy), and the
e2e reports list the calls. Views are made by lines such as

    static constexpr int64_t int_array_2[] = {2L, 64L, 400L};
    static constexpr int64_t int_array_3[] = {1L, 800L, 2L};
    aoti_torch_cuda_bmm_out(buf0, wrap_with_raii_handle_if_needed(
        reinterpret_tensor_wrapper(arg1_1, 3, int_array_2, int_array_3, 0L)), w)

(sizes and strides are named arrays, or inline braces in some wrapper versions).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Callable

_INT_ARRAY = re.compile(r"\b(int_array_\d+)\[\]\s*=\s*\{([^}]*)\}")
_ARRAY = r"(int_array_\d+|\{[^}]*\})"
_VIEW = re.compile(
    r"reinterpret_tensor_wrapper\(\s*(\w+)\s*,\s*(\d+)L?\s*,\s*" + _ARRAY + r"\s*,\s*" + _ARRAY
    + r"\s*,\s*(-?\d+)L?\s*\)")
_CALL = re.compile(r"AOTI_TORCH_ERROR_CODE_CHECK\(\s*aoti_torch_(cpu|cuda)_(\w+)\(")


@dataclasses.dataclass(frozen=True)
class View:
    base: str
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int

    def row_major(self) -> bool:
        """Dense C-order (size-1 dims' strides ignored)."""
        expected = 1
        for size, stride in reversed(list(zip(self.sizes, self.strides))):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True

    def __str__(self) -> str:
        return f"{self.base}{list(self.sizes)}/{list(self.strides)}+{self.offset}"


@dataclasses.dataclass(frozen=True)
class Call:
    device: str  # 'cpu' or 'cuda'
    op: str  # e.g. 'bmm_out', 'convolution'
    line: int  # 1-based line in the wrapper .cpp
    views: tuple[View, ...]  # operands made by reinterpret_tensor_wrapper on that line


def _ints(text: str) -> tuple[int, ...] | None:
    """The integers of a C array literal; None when one is symbolic (a dynamic dim, `s77`)."""
    items = [x.strip().rstrip("L") for x in text.strip("{} ").split(",") if x.strip()]
    if not all(x.lstrip("-").isdigit() for x in items):
        return None
    return tuple(int(x) for x in items)


def fallback_calls(text: str) -> list[Call]:
    """Every `aoti_torch_{cpu,cuda}_*` call made through AOTI_TORCH_ERROR_CODE_CHECK."""
    arrays: dict[str, tuple[int, ...]] = {}
    calls = []
    for no, line in enumerate(text.splitlines(), 1):
        for m in _INT_ARRAY.finditer(line):
            arrays[m[1]] = _ints(m[2])  # the latest definition wins, as in C++ scoping
        m = _CALL.search(line)
        if not m:
            continue
        views = []
        for v in _VIEW.finditer(line):
            sizes = arrays.get(v[3]) if v[3].startswith("int_array") else _ints(v[3])
            strides = arrays.get(v[4]) if v[4].startswith("int_array") else _ints(v[4])
            if sizes is not None and strides is not None:
                views.append(View(v[1], sizes, strides, int(v[5])))
        calls.append(Call(m[1], m[2], no, tuple(views)))
    return calls


def op_summary(text: str) -> dict[str, int]:
    """'device_op' -> number of calls, e.g. {'cuda_convolution': 64, 'cuda_addmm_out': 1}."""
    counts: dict[str, int] = {}
    for c in fallback_calls(text):
        key = f"{c.device}_{c.op}"
        counts[key] = counts.get(key, 0) + 1
    return counts


@dataclasses.dataclass(frozen=True)
class WrapperCheck:
    """A claim about the code a zoo entry compiles to: `check(text, device)` returns
    (holds, what was found), `text` being the generated wrapper (and kernel) source."""

    description: str
    predicate: Callable[[str, str], tuple[bool, str]]

    def __call__(self, text: str, device: str) -> tuple[bool, str]:
        return self.predicate(text, device)


def _kind(device: str) -> str:
    return device.split(":")[0]


def calls_op_with_view(op: str, sizes: tuple[int, ...], strides: tuple[int, ...]) -> WrapperCheck:
    """The wrapper calls aoti_torch_<device>_<op> with this exact view as an operand."""

    def pred(text: str, device: str) -> tuple[bool, str]:
        mine = [c for c in fallback_calls(text) if c.op == op and c.device == _kind(device)]
        seen = [v for c in mine for v in c.views]
        ok = any(v.sizes == sizes and v.strides == strides for v in seen)
        return ok, f"{len(mine)} {op} call(s); views passed: {', '.join(map(str, seen)) or 'none'}"

    return WrapperCheck(f"{op} takes a view {list(sizes)}/{list(strides)}", pred)


def calls_op_with_strided_view(op: str) -> WrapperCheck:
    """The wrapper calls aoti_torch_<device>_<op> with an operand that is a view whose
    strides are not dense C-order (a transposed or permuted view, not a packed copy)."""

    def pred(text: str, device: str) -> tuple[bool, str]:
        mine = [c for c in fallback_calls(text) if c.op == op and c.device == _kind(device)]
        seen = [v for c in mine for v in c.views]
        ok = any(not v.row_major() for v in seen)
        return ok, f"{len(mine)} {op} call(s); views passed: {', '.join(map(str, seen)) or 'none'}"

    return WrapperCheck(f"{op} takes a non-row-major view", pred)


def calls_op_matching(pattern: str) -> WrapperCheck:
    """The wrapper calls some aoti_torch_<device>_<op> whose op name matches `pattern`."""
    rx = re.compile(pattern)

    def pred(text: str, device: str) -> tuple[bool, str]:
        ops = sorted({c.op for c in fallback_calls(text) if c.device == _kind(device)})
        hits = [op for op in ops if rx.search(op)]
        return bool(hits), f"matching: {', '.join(hits) or 'none'} (of {', '.join(ops) or 'no fallback ops'})"

    return WrapperCheck(f"calls an op matching /{pattern}/", pred)


def code_contains(pattern: str, description: str, device_kind: str | None = None) -> WrapperCheck:
    """The generated code matches `pattern` (checked only on `device_kind` when given)."""
    rx = re.compile(pattern)

    def pred(text: str, device: str) -> tuple[bool, str]:
        if device_kind is not None and _kind(device) != device_kind:
            return True, f"not checked on {_kind(device)}"
        n = len(rx.findall(text))
        return n > 0, f"{n} match(es) of /{pattern}/"

    return WrapperCheck(description, pred)
