"""The exceptions aotrt raises: one class per kind of error aotrt reports.

Every one is an ``aotrt.Error`` (a ``RuntimeError``) whose message is aotrt's
own: what was asked, and what was wrong. ``kind`` names the kind as the C++
API does (``aotrt::error_kind_name``).
"""

from __future__ import annotations


class Error(RuntimeError):
    """An error aotrt reported."""

    kind: str | None = None


class InvalidArgumentError(Error, ValueError):
    """A value the caller passed is wrong (count, dtype, sizes, strides, device)."""

    kind = "invalid argument"


class InvalidHandleError(Error):
    """A tensor handle that was deleted or never made."""

    kind = "invalid handle"


class OutOfBoundsError(Error, IndexError):
    """A view that reaches outside its storage, or sizes that overflow."""

    kind = "out of bounds"


class UnsupportedError(Error):
    """Valid input that aotrt does not serve (the message says why)."""

    kind = "unsupported"


class OutOfMemoryError(Error, MemoryError):
    """An allocator could not give the bytes asked for."""

    kind = "out of memory"


class PackageError(Error):
    """A .pt2 package that cannot be loaded."""

    kind = "bad package"


class BackendError(Error):
    """A library or driver call failed, or the model itself reported an error."""

    kind = "backend failure"


class InternalError(Error):
    """A broken invariant in aotrt itself."""

    kind = "internal error"


CLASSES: dict[str, type[Error]] = {
    c.kind: c
    for c in (InvalidArgumentError, InvalidHandleError, OutOfBoundsError, UnsupportedError,
              OutOfMemoryError, PackageError, BackendError, InternalError)
}

for _cls in (Error, *CLASSES.values()):
    _cls.__module__ = "aotrt"  # shown as aotrt.InvalidArgumentError, where users catch it
del _cls
