"""Calls aotrt's op shims from Python through ctypes, on torch tensors' own memory.

    lib = ShimHarness("build/libaotrt.so")
    rc, results = lib.call("aoti_torch_cpu_mm_out", out, a, b)   # torch tensors in, handles made
    lib.to_torch(results[0])                                     # a torch copy, same sizes/strides

Each tensor argument becomes an aotrt handle made with aoti_torch_create_tensor_from_blob over
the tensor's storage, with its sizes, strides and storage offset: aotrt reads and writes the
very memory torch holds, so a strided view is a strided view for both. Arguments are passed by
the kinds of torch's own C shim declarations (aotrt_tools.c_shims): tensors, optional tensors
(None), lists, scalars, optional scalars, strings; result pointers are made here and returned.
Works for CUDA tensors too (a CUDA build of libaotrt.so, `aoti_torch_cuda_<op>`): results are
copied into torch memory with aoti_torch_copy_, and the device synchronised around each call.

libaotrt.so is loaded with RTLD_NOW | RTLD_LOCAL: torch's own aoti_torch_* definitions live in
libtorch, which torch loads privately, so the two never meet.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import torch

from aotrt_tools import c_shims

_P = ctypes.c_void_p
_SCALAR = {"int64": ctypes.c_int64, "int32": ctypes.c_int32, "real": ctypes.c_double}
_LIST = {"int64_list": ctypes.c_int64, "int32_list": ctypes.c_int32, "real_list": ctypes.c_double}
_DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
           "complex64", "complex128"]


class ShimError(RuntimeError):
    pass


class ShimHarness:
    def __init__(self, lib_path: str | Path):
        self.lib = ctypes.CDLL(str(lib_path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
        self.lib.aotrt_last_error.restype = ctypes.c_char_p
        headers = c_shims.torch_headers()
        self.ops, _ = c_shims.load([headers / f"c_shim_{d}.h" for d in ("cpu", "cuda", "aten")])
        self.codes = {getattr(torch, n): getattr(self.lib, f"aoti_torch_dtype_{n}")() for n in _DTYPES}
        self.dtypes = {c: d for d, c in self.codes.items()}

    def has(self, name: str) -> bool:
        return hasattr(self.lib, name)

    def last_error(self) -> str:
        return (self.lib.aotrt_last_error() or b"").decode(errors="replace")

    # --- Tensors ----------------------------------------------------------------------------
    def handle(self, t: torch.Tensor) -> int:
        """A new aotrt handle viewing t's memory (the caller deletes it)."""
        n = t.dim()
        sizes, strides = (ctypes.c_int64 * max(n, 1))(*t.shape), (ctypes.c_int64 * max(n, 1))(*t.stride())
        storage = t.untyped_storage().data_ptr()
        dev_type = 1 if t.is_cuda else 0
        out = _P()
        rc = self.lib.aoti_torch_create_tensor_from_blob(
            _P(storage), ctypes.c_int64(n), sizes, strides, ctypes.c_int64(t.storage_offset()),
            ctypes.c_int32(self.codes[t.dtype]), ctypes.c_int32(dev_type),
            ctypes.c_int32(t.device.index or 0), ctypes.byref(out))
        if rc != 0:
            raise ShimError(f"create_tensor_from_blob: {self.last_error()}")
        return out.value

    def delete(self, h: int) -> None:
        if self.lib.aoti_torch_delete_tensor_object(_P(h)) != 0:
            raise ShimError(f"delete_tensor_object: {self.last_error()}")

    def layout(self, h: int) -> tuple[list[int], list[int], torch.dtype, int]:
        dim, dtype = ctypes.c_int64(), ctypes.c_int32()
        sizes, strides = ctypes.POINTER(ctypes.c_int64)(), ctypes.POINTER(ctypes.c_int64)()
        dev_type = ctypes.c_int32()
        for rc in (self.lib.aoti_torch_get_dim(_P(h), ctypes.byref(dim)),
                   self.lib.aoti_torch_get_sizes(_P(h), ctypes.byref(sizes)),
                   self.lib.aoti_torch_get_strides(_P(h), ctypes.byref(strides)),
                   self.lib.aoti_torch_get_dtype(_P(h), ctypes.byref(dtype)),
                   self.lib.aoti_torch_get_device_type(_P(h), ctypes.byref(dev_type))):
            if rc != 0:
                raise ShimError(f"getter: {self.last_error()}")
        n = dim.value
        return [sizes[i] for i in range(n)], [strides[i] for i in range(n)], self.dtypes[dtype.value], dev_type.value

    def to_torch(self, h: int, device: str = "cpu") -> torch.Tensor:
        """A torch copy of the handle's view with the same sizes and strides (made by aotrt's copy_)."""
        sizes, strides, dtype, _ = self.layout(h)
        dst = torch.empty_strided(sizes, strides, dtype=dtype, device=device)
        dh = self.handle(dst)
        try:
            if self.lib.aoti_torch_copy_(_P(dh), _P(h), ctypes.c_int32(0)) != 0:
                raise ShimError(f"copy_: {self.last_error()}")
        finally:
            self.delete(dh)
        self._sync(device)
        return dst

    @staticmethod
    def _sync(device: str) -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    # --- Calls ------------------------------------------------------------------------------
    def call(self, name: str, *args, device: str = "cpu") -> tuple[int, list]:
        """Calls op `name` with one Python value per parameter that is not a result (tensors,
        None, lists, numbers, str). Returns (rc, results): handles for tensor results (the caller
        deletes them, e.g. through take()), numbers for scalar results."""
        op = self.ops[name]
        fn = getattr(self.lib, name)
        fn.restype = ctypes.c_int32
        values = iter(args)
        c_args, results, made, keep = [], [], [], []

        def tensor(v):
            if v is None:
                return None
            h = self.handle(v)
            made.append(h)
            return h

        for p in op.params:
            k = p.kind
            if k.startswith("ret_"):
                cell = _P() if k == "ret_tensor" else {"ret_int64": ctypes.c_int64, "ret_int32": ctypes.c_int32,
                                                       "ret_real": ctypes.c_double}[k]()
                results.append((k, cell))
                c_args.append(ctypes.byref(cell))
                continue
            v = next(values)
            if k == "tensor":
                c_args.append(_P(tensor(v)))
            elif k == "opt_tensor":
                c_args.append(None if v is None else ctypes.byref(_P(tensor(v))))
            elif k == "tensor_list":
                arr = (_P * max(len(v), 1))(*[tensor(t) for t in v])
                c_args += [arr, ctypes.c_int64(len(v))]
            elif k == "opt_tensor_list":
                cells = [None if t is None else _P(tensor(t)) for t in v]
                keep.append(cells)
                arr = (ctypes.POINTER(_P) * max(len(v), 1))(
                    *[ctypes.POINTER(_P)() if c is None else ctypes.pointer(c) for c in cells])
                c_args += [arr, ctypes.c_int64(len(v))]
            elif k in _LIST:
                c_args += [(_LIST[k] * max(len(v), 1))(*v), ctypes.c_int64(len(v))]
            elif k in ("opt_int64_list", "opt_real_list"):
                ct = ctypes.c_int64 if k == "opt_int64_list" else ctypes.c_double
                if v is None:
                    c_args += [None, ctypes.c_int64(0)]
                else:
                    arr = (ct * max(len(v), 1))(*v)
                    ptr = ctypes.cast(arr, ctypes.POINTER(ct))
                    keep += [arr, ptr]
                    c_args += [ctypes.byref(ptr), ctypes.c_int64(len(v))]
            elif k in _SCALAR:
                c_args.append(_SCALAR[k](v))
            elif k.startswith("opt_") and k[4:] in _SCALAR:
                c_args.append(None if v is None else ctypes.byref(_SCALAR[k[4:]](v)))
            elif k == "string":
                c_args.append(ctypes.c_char_p(v.encode()))
            elif k == "opt_string":
                c_args.append(None if v is None else ctypes.byref(ctypes.c_char_p(v.encode())))
            elif k == "generator":
                c_args.append(None)
            else:
                raise ValueError(f"{name}: parameter kind {k}")
        self._sync(device)
        try:
            rc = fn(*c_args)
            self._sync(device)
        finally:
            for h in made:
                self.delete(h)
        out = [cell.value for _, cell in results]
        return rc, out

    def take(self, h: int | None, device: str = "cpu") -> torch.Tensor | None:
        """to_torch, then deletes the handle."""
        if h is None:
            return None
        try:
            return self.to_torch(h, device)
        finally:
            self.delete(h)
