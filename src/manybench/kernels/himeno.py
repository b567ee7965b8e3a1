"""`cpu.himeno`: the Himeno benchmark (himenoBMTxp) as a slot kernel.

The C side (native/himeno.c) has himenoBMTxp's grids, initmt and Jacobi loops. Before T0
(prepare) the grids are allocated and initialised and, when `iterations` is 0, the count is
calibrated as himenoBMTxp does: a rehearsal of 3 iterations (more on grids too small to
time 3 well), then as many as fit in `seconds` (himenoBMTxp's target is 60 s); a longer
rehearsal's changes to p are undone. Then, calibrated or not, himenoBMTxp's own rehearsal:
3 iterations whose changes it keeps, so the timed iterations start where himenoBMTxp's
measured ones do and `gosa` is the residual it prints ("Gosa", after 3 + iterations).
The timed window is the iterations.
MFLOPS as himenoBMTxp: fflop(imax, jmax, kmax) * iterations / time * 1e-6, with
fflop(mx, my, mz) = (mz-2)(my-2)(mx-2) * 34 and imax = MIMAX - 1, etc.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..node.wire_types import Result, SlotContext
from .base import Kernel, KernelError, Param, Standalone
from .figures import MFLOPS, Figure
from .native import native, result_from_native
from .stream import check_memory, check_threads, threads_fit

# himenoBMTxp's sizes as (MIMAX, MJMAX, MKMAX): XS = SSMALL, S = SMALL, M = MIDDLE,
# L = LARGE, XL = ELARGE
GRIDS = {
    "XS": (33, 33, 65),
    "S": (65, 65, 129),
    "M": (129, 129, 257),
    "L": (257, 257, 513),
    "XL": (513, 513, 1025),
}
FLOPS_PER_POINT = 34
REHEARSAL = 3          # himenoBMTxp's rehearsal iterations
MIN_REHEARSAL_S = 0.02  # ... repeated with more until it lasts this long (see _calibrate)
MIN_DIM = 4            # the smallest grid with one interior point
BYTES_PER_POINT = 14 * 4   # p, a[4], b[3], c[3], bnd, wrk1, wrk2 in single precision

_DIMS_RE = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*[xX]\s*(\d+)\s*$")


def fflop(mx: int, my: int, mz: int) -> float:
    """himenoBMTxp's floating-point operations of one iteration."""
    return float(mz - 2) * float(my - 2) * float(mx - 2) * FLOPS_PER_POINT


def mflops(nn: int, cpu: float, flop: float) -> float:
    """himenoBMTxp's MFLOPS of nn iterations that took cpu seconds."""
    return flop / cpu * 1.0e-6 * float(nn)


def parse_dims(text: Any) -> tuple[int, int, int]:
    """"IxJxK" -> (MIMAX, MJMAX, MKMAX); ValueError says what is wrong."""
    m = _DIMS_RE.match(text) if isinstance(text, str) else None
    if not m:
        raise ValueError(f"dims must look like IxJxK (e.g. \"65x65x129\"), got {text!r}")
    dims = tuple(int(g) for g in m.groups())
    small = [d for d in dims if d < MIN_DIM]
    if small:
        raise ValueError(f"every dimension of dims must be at least {MIN_DIM} (one interior "
                         f"point), got {text!r}")
    if dims[0] * dims[1] * dims[2] * BYTES_PER_POINT > 2 ** 50:
        raise ValueError(f"dims {text!r} needs more than a PiB")
    return dims   # type: ignore[return-value]


def grid_dims(params: dict) -> tuple[int, int, int]:
    """The grid the params ask for; ValueError when grid and dims do not agree."""
    grid = params.get("grid") or PARAMS["grid"].default
    dims = params.get("dims")
    if grid == "custom":
        if dims is None:
            raise ValueError('grid = "custom" needs dims = "IxJxK"')
        return parse_dims(dims)
    if dims is not None:
        raise ValueError(f'dims is only for grid = "custom" (grid is {grid!r})')
    if grid not in GRIDS:
        raise ValueError(f"unknown grid {grid!r}")
    return GRIDS[grid]


PARAMS = {
    "grid": Param("choice", "himenoBMTxp's grid sizes (MIMAX x MJMAX x MKMAX): XS 33x33x65, "
                            "S 65x65x129, M 129x129x257, L 257x257x513, XL 513x513x1025 "
                            "(56 bytes per point: S 31 MB, M 240 MB, L 1.9 GB, XL 15 GB per "
                            "slot); custom takes `dims`.",
                  default="S", choices=("XS", "S", "M", "L", "XL", "custom")),
    "dims": Param("str", "With grid = \"custom\": \"IxJxK\" (MIMAX x MJMAX x MKMAX), each at "
                         f"least {MIN_DIM}."),
    "iterations": Param("int", "Jacobi iterations to time; 0 = choose them as himenoBMTxp does "
                               "(a rehearsal before T0, then as many as fit in `seconds`): "
                               "each slot calibrates for itself, so for the same work on "
                               "every slot give a number.", default=0, minimum=0),
    "seconds": Param("duration", "Target duration when iterations = 0 (himenoBMTxp aims at "
                                 "60s).", default="1s"),
    "threads": Param("int", "OpenMP threads per slot, sharing the i loop; they run on the "
                            "slot's cpus, so more than one needs placement pin = \"numa\" or "
                            "\"none\". With 1, no OpenMP at all.", default=1, minimum=1),
}


def _check(params: dict) -> list[tuple[str, str]]:
    probs = []
    try:
        grid_dims(params)
    except ValueError as e:
        probs.append(("dims", str(e)))
    if not params.get("iterations") and params.get("seconds") is not None \
            and params["seconds"] <= 0:
        probs.append(("seconds", "must be greater than zero when iterations = 0"))
    return probs


@dataclass
class _State:
    lib: ModuleType
    handle: Any
    dims: tuple[int, int, int]
    iterations: int
    threads: int


def _value(params: dict, name: str) -> Any:
    v = params.get(name)
    return PARAMS[name].parse(PARAMS[name].default if v is None else v)


def _calibrate(lib: ModuleType, handle: Any, seconds: float) -> int:
    """himenoBMTxp's count: nn = target / (rehearsal time / 3). Three iterations of a small
    grid take well under a millisecond, too short to time, so the rehearsal is repeated with
    4x the iterations until it lasts MIN_REHEARSAL_S (or a tenth of the target)."""
    nn = REHEARSAL
    cpu, _ = lib.himeno_rehearse(handle, nn)
    while cpu < min(MIN_REHEARSAL_S, seconds / 10) and nn < 1 << 20:
        nn *= 4
        cpu, _ = lib.himeno_rehearse(handle, nn)
    return max(1, int(seconds / (cpu / nn))) if cpu > 0 else nn


def _checked(params: dict) -> tuple[tuple[int, int, int], int, int, float]:
    """dims, threads, iterations, seconds, checked against the slot's cpus and memory."""
    try:
        dims = grid_dims(params)
    except ValueError as e:
        raise KernelError(f"cpu.himeno: {e}") from None
    threads, iterations, seconds = (_value(params, k)
                                    for k in ("threads", "iterations", "seconds"))
    if iterations == 0 and seconds <= 0:
        raise KernelError("cpu.himeno: seconds must be greater than zero when iterations = 0")
    check_threads("cpu.himeno", threads)
    check_memory("cpu.himeno", dims[0] * dims[1] * dims[2] * BYTES_PER_POINT,
                 f"the {'x'.join(map(str, dims))} grids", "use a smaller grid")
    return dims, threads, iterations, seconds


def _prepare(ctx: SlotContext, params: dict) -> _State:
    lib = native()
    dims, threads, iterations, seconds = _checked(params)
    try:
        handle = lib.himeno_new(*dims, threads)
    except OSError as e:
        mb = dims[0] * dims[1] * dims[2] * BYTES_PER_POINT / 1e6
        raise KernelError(f"{e.strerror} ({mb:.0f} MB for this slot: use a smaller grid)") \
            from None
    if iterations == 0:
        iterations = _calibrate(lib, handle, seconds)
    lib.himeno_rehearse(handle, REHEARSAL, True)   # kept, as himenoBMTxp keeps it
    return _State(lib, handle, dims, iterations, threads)


def _run(st: _State, t0_ns: int, spin_ns: int) -> Result:
    d = st.lib.himeno_run(st.handle, st.iterations, t0_ns, spin_ns)
    return _finish(d, st.dims, st.iterations)


def _finish(d: dict, dims: tuple[int, int, int], iterations: int) -> Result:
    """The Result of a himeno_run dict (the extension's or mbkernel's)."""
    mx, my, mz = dims
    cpu = d["elapsed_ns"] / 1e9
    return result_from_native(d, metrics={
        "mflops": mflops(iterations, cpu, fflop(mx - 1, my - 1, mz - 1)) if cpu > 0
        else float("inf"),
        "gosa": d["gosa"],
        "gosa_first": d["gosa1"],
        "iterations": iterations,
    })


def _standalone_args(ctx: SlotContext, params: dict) -> dict:
    """mbkernel calibrates (iterations = 0) as _calibrate does, inside the wrap."""
    dims, threads, iterations, seconds = _checked(params)
    return {"mimax": dims[0], "mjmax": dims[1], "mkmax": dims[2], "threads": threads,
            "iterations": iterations, "seconds_ns": round(seconds * 1e9)}


def _standalone_finish(d: dict, args: dict) -> Result:
    return _finish(d, (args["mimax"], args["mjmax"], args["mkmax"]), int(d["iterations"]))


def _cleanup(st: _State) -> None:
    if st.handle is not None:
        handle, st.handle = st.handle, None
        st.lib.himeno_release(handle)


FIGURES = (MFLOPS.first(),
           Figure("gosa", "", "gosa (residual)", "",
                  note="after himenoBMTxp's 3 rehearsal iterations (before T0, kept) and the "
                       "timed ones: the Gosa himenoBMTxp prints for the same iterations"),
           Figure("gosa_first", "", "first timed gosa", "",
                  note="the first timed iteration's residual (the 4th from initmt)"),
           Figure("iterations", "", "iterations", ""))

HIMENO = Kernel(
    name="cpu.himeno",
    figures=FIGURES,
    doc="The Himeno benchmark (himenoBMTxp) per slot: Jacobi iterations of a 19-point stencil "
        "for Poisson's equation in single precision on a MIMAX x MJMAX x MKMAX grid, timed in C "
        "from T0. Grids are initialised (and the iteration count calibrated) before T0. "
        "Before T0, himenoBMTxp's rehearsal of 3 iterations, kept as it keeps them. Metrics: "
        "mflops (himenoBMTxp's: 34 flops per interior point), gosa (the residual of the last "
        "iteration, after the rehearsal's 3 and the timed ones: the Gosa himenoBMTxp prints "
        "for the same iterations; a non-finite or growing gosa makes the record an error), "
        "gosa_first (the first timed iteration's), iterations (timed). ops = iterations.",
    params=PARAMS, prepare=_prepare, run=_run, cleanup=_cleanup, check=_check,
    check_placement=threads_fit,
    standalone=Standalone(args=_standalone_args, finish=_standalone_finish),
    progress="ops",
)

KERNELS = [HIMENO]
