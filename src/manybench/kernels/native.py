"""The C extension as kernels use it: loading it, and turning its result dicts and errnos
into Results and one-line messages a user can act on."""
from __future__ import annotations

import dataclasses
import errno
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from ..build_isa import CpuMismatch
from ..status import Status
from ..node.wire_types import Result
from .base import KernelError
from .hist import decode, latency_metrics


_NATIVE: ModuleType | None = None     # once imported: a null phase's prepare is this call


def native() -> ModuleType:
    """The compiled `manybench._native`, or a KernelError saying how to build it.

    Imported lazily so that plan checks and dry runs work without the C extension.
    """
    global _NATIVE
    if _NATIVE is None:
        try:
            from .. import _native
        except CpuMismatch as e:      # built, for a cpu this one is not
            raise KernelError(str(e)) from e
        except ImportError as e:
            raise KernelError("manybench's C kernels are not built: run `pip install .` (or "
                              "`python setup.py build_ext --inplace`) in the source tree "
                              f"({e})") from e
        _NATIVE = _native
    return _NATIVE


# What the user can do about the errors their plan can cause.
_HINTS = {
    errno.ENOSPC: "the file system is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EACCES: "check the owner and mode of the directory and its parents",
    errno.EPERM: "check the owner, mode and attributes of the file and its directory",
    errno.EROFS: "the file system is mounted read-only",
    errno.EFBIG: "larger than the file system or the file size limit (ulimit -f) allows",
    errno.EMLINK: "too many entries in one directory for this file system",
    errno.ENOENT: "the directory vanished or was never created",
}


def user_message(prefix: str, err: int, text: str) -> str:
    """One line: "<prefix>: <what failed>: <strerror> (<what to do>)"."""
    hint = _HINTS.get(err)
    return f"{prefix}: {text}" + (f" ({hint})" if hint else "")


def result_from_native(d: Mapping[str, Any],
                       explain: Callable[[int, str], str] | None = None, *,
                       metrics: Mapping[str, Any] | None = None,
                       extra: Mapping[str, Any] | None = None, **fields: Any) -> Result:
    """A Result from a `run_*` dict: status from errno, error text through `explain`; the
    kernel's own `metrics` after the latency figures, its `extra`, and `fields` that replace
    what the dict says (a kernel that counts its bytes itself)."""
    h = decode(d.get("hist"))
    err = int(d.get("errno") or 0)
    text = str(d.get("error") or "")
    if err and explain is not None:
        text = explain(err, text)
    made: dict[str, Any] = dict(
        start_ns=d["start_ns"], end_ns=d["end_ns"], elapsed_ns=d["elapsed_ns"],
        armed_ns=d["armed_ns"], ops=d["ops"], bytes=d["bytes"],
        status=Status.ERROR if err else Status.OK, error=text if err else "",
        metrics={**latency_metrics(h), **(metrics or {})} if h else dict(metrics or {}),
        hist=h or None, extra=dict(extra or {}), samples=[], sample_unit="")
    if fields:
        made.update(fields)
    if made.keys() != _RESULT_FIELDS:
        return Result(**made)      # a field not given: its default; its TypeError names
                                   # one given that is not a field
    # every field given: made as Result(**made) makes it (a frozen dataclass, no
    # __post_init__), without its __init__'s call per field (every phase of every slot)
    out = object.__new__(Result)
    out.__dict__.update(made)
    return out


_RESULT_FIELDS = frozenset(f.name for f in dataclasses.fields(Result))
