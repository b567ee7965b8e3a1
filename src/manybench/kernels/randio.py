"""`io.randread` / `io.randwrite`: random block I/O at a queue depth on a per-slot file.

Random, block-aligned offsets over the file's first `size` bytes, `iodepth` I/Os in flight
through io_uring, Linux AIO or threads (native/randio.c), as fio's randread and randwrite with
ioengine=io_uring, libaio or psync. By default each block once per pass in a random order (fio's
default random map, native/randmap.h); randommap = false draws with replacement (fio's
norandommap), which rereads about a third of one file's worth of I/Os from the pages it cached.
The file is laid out before T0; for reads its cached pages are then dropped unless cache =
"keep" (fio's invalidate=1).

engine = "auto" picks what fio's users would: at iodepth 1 plain pread/pwrite in the slot's
own thread (fio's psync), deeper queues io_uring where the kernel allows it, else Linux AIO,
else `iodepth` threads of pread/pwrite.
"""
from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field, replace
from types import ModuleType

from ..extra_keys import CACHE_DROPS, SUBMIT_CALLS
from ..node.wire_types import Result, SlotContext
from .base import REQUIRED, Kernel, KernelError, Param
from .facts import Fact
from .native import native, result_from_native, user_message
from .iofile import ALIGN, explain, file_problems, laid_out, slot_file
from .scratchfs import root_of
from .figures import (BANDWIDTH, CONTEXT, FSYNC, LATENCY, OPS_RATE, READS_CACHE, SLOT,
                      ELAPSED, Figure)
from .pagecache import CACHE, add_from_memory, prepare_cache, read_bytes

ENGINES = ("auto", "psync", "io_uring", "aio", "threads")
DEFAULT_DURATION = 5.0     # seconds, when neither `ops` nor `duration` is given
MAX_IODEPTH = 4096
LAYOUT_BLOCK = 1 << 20     # write size when laying out the file

_PARAMS = {
    "dir": Param("dir", "Directory to work under; each slot uses {dir}/<run>/<slot>/. "
                        "Defaults to the plan's `scratch`, else <results dir>/scratch."),
    "file": Param("str", "File name inside the slot's directory.", default="rand.dat"),
    "size": Param("size", "The file's size and the region the offsets fall in (\"1GiB\"); "
                          "the file is laid out to it before T0 when missing or shorter.",
                  default=REQUIRED, minimum=1),
    "block": Param("size", "Bytes per I/O; offsets are multiples of it.", default="4KiB",
                   minimum=1),
    "iodepth": Param("int", "I/Os in flight (threads engine: this many threads).",
                     default=1, minimum=1),
    "batch": Param("int", "io_uring and aio: new I/Os handed to the kernel per system call, "
                          "as fio's iodepth_batch_submit. 1 (default, as fio) submits each I/O "
                          "as soon as it is issued; larger batches cost fewer calls, but the "
                          "kernel plugs the block queue around them, which can delay their "
                          "dispatch to the device.", default=1, minimum=1),
    "direct": Param("bool", "O_DIRECT (bypass the page cache); block must be a multiple of "
                            "4096 and the file system must allow it.", default=False),
    "duration": Param("duration", "Stonewall: stop issuing at T0 + duration, the same instant "
                                  "for every slot (I/Os in flight then still complete). "
                                  "Default 5s when `ops` is not given either."),
    "ops": Param("int", "Number of I/Os to do (with `duration` too, whichever comes first).",
                 minimum=1),
    "engine": Param("choice", "auto: at iodepth 1 psync (pread/pwrite in the slot's own "
                              "thread, as fio's psync); deeper, io_uring where the kernel allows "
                              "it, else Linux AIO, else `iodepth` threads of pread/pwrite. The "
                              "engine used is kept in the record's extra as `engine`.",
                    default="auto", choices=ENGINES),
    "randommap": Param("bool", "true (default, as fio): each block once per pass, in a random "
                               "order that each pass draws anew; false: offsets drawn with "
                               "replacement (fio's norandommap), so blocks repeat within a "
                               "pass (`repeats` in the record says how often).", default=True),
    "seed": Param("int", "Seed of the offsets: the same seed gives the same sequence (as fio's "
                         "randrepeat); each slot (rank) and each thread gets a stream of its "
                         "own.", default=0, maximum=2**63 - 1),
}


def _check(params: dict) -> list[tuple[str, str]]:
    out = file_problems(params)
    size, block = params.get("size"), params.get("block")
    if size is not None and block is not None and size < block:
        out.append(("size", f"must hold at least one block ({block} bytes)"))
    if params.get("direct") and block is not None and block % ALIGN:
        out.append(("block", f"direct = true needs a multiple of {ALIGN} bytes"))
    if (params.get("iodepth") or 1) > MAX_IODEPTH:
        out.append(("iodepth", f"at most {MAX_IODEPTH}"))
    return out


def _params(params: dict) -> dict:
    out = dict(params)
    for name, spec in _PARAMS.items():
        if out.get(name) is None and spec.default is not None and spec.default is not REQUIRED:
            out[name] = spec.parse(spec.default)
    if out.get("duration") is None and out.get("ops") is None:
        out["duration"] = DEFAULT_DURATION
    return out


@dataclass
class _State:
    lib: ModuleType
    kernel: str
    fd: int
    path: str
    write: bool
    engine: str
    iodepth: int
    batch: int
    block: int
    size: int
    ops: int                # 0 = until the deadline
    duration: float | None
    fsync_end: bool
    direct: bool
    seed: int
    randommap: bool
    drop_each_pass: bool    # reads, cache = "drop", the map: again before each later pass
    metrics: dict = field(default_factory=dict)   # known before T0 (the page cache)
    read_bytes0: int | None = None                # read_bytes() once the cache was set

    @property
    def label(self) -> str:
        return f"{self.kernel} {self.path}"


_ENGINE_HINTS = {
    errno.EPERM: "io_uring is disabled here (sysctl kernel.io_uring_disabled) or blocked by "
                 "a seccomp filter, as in many containers",
    errno.ENOSYS: "this kernel does not have it, or a seccomp filter hides it",
    errno.EAGAIN: "the system-wide AIO limit (fs.aio-max-nr) is used up",
    errno.ENOMEM: "the locked-memory limit (ulimit -l) is too small for the ring",
}


def _probe(lib: ModuleType, kernel: str, engine: str, iodepth: int) -> str:
    """The engine that will run; psync is the threads engine with its one thread: the slot's."""
    if engine == "psync" or (engine == "auto" and iodepth == 1):
        if iodepth != 1:
            raise KernelError(f"{kernel}: engine = \"psync\" does one I/O at a time: iodepth "
                              "must be 1 (threads: `iodepth` parallel pread/pwrite)")
        return "psync"
    try:
        return lib.randio_probe(engine, iodepth)
    except OSError as e:
        hint = _ENGINE_HINTS.get(e.errno or 0)
        others = ", ".join(f'"{x}"' for x in ENGINES if x != engine)
        raise KernelError(f"{kernel}: engine = \"{engine}\" is refused: {e.strerror}"
                          + (f" ({hint})" if hint else "") + f"; use engine = {others}") \
            from None


def _prepare(ctx: SlotContext, params: dict, write: bool) -> _State:
    kernel = "io.randwrite" if write else "io.randread"
    lib = native()
    p = _params(params)
    for fld, msg in _check(p):
        raise KernelError(f"{kernel}: {fld}: {msg}")
    size, block, iodepth = p["size"], p["block"], p["iodepth"]
    engine = _probe(lib, kernel, p["engine"], iodepth)
    path = slot_file(ctx, p, kernel)
    fd = laid_out(root_of(ctx), path, size, max(block, LAYOUT_BLOCK), p["direct"], kernel, lib,
                  os.O_RDWR if write else os.O_RDONLY)
    cache: dict[str, float] = {}
    try:
        if not write:
            cache = prepare_cache(lib, fd, size, p.get("cache") or CACHE.default,
                                  f"{kernel} {path}")
        # POSIX_FADV_RANDOM (no read-ahead), as fio's default fadvise_hint=1 for random jobs
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    except (OSError, KernelError) as e:
        os.close(fd)
        if isinstance(e, KernelError):
            raise
        raise KernelError(user_message(f"{kernel} {path}", e.errno or 0,
                                       f"fadvise before the I/O: {e.strerror}")) from None
    seed = (p["seed"] + ctx.rank * 0x9E3779B97F4A7C15) % (1 << 64)
    return _State(lib=lib, kernel=kernel, fd=fd, path=path, write=write, engine=engine,
                  iodepth=iodepth, batch=min(p["batch"], iodepth), block=block, size=size,
                  ops=p.get("ops") or 0, duration=p.get("duration"),
                  fsync_end=write and p.get("fsync") == "end", direct=bool(p["direct"]),
                  seed=seed, randommap=p["randommap"],
                  drop_each_pass=(not write and p["randommap"] and not p["direct"]
                                  and (p.get("cache") or CACHE.default) == "drop"),
                  metrics=cache, read_bytes0=read_bytes())


def _run(st: _State, t0_ns: int, spin_ns: int) -> Result:
    deadline = t0_ns + round(st.duration * 1e9) if st.duration else 0
    engine = "threads" if st.engine == "psync" else st.engine   # psync: one thread, ours
    d = st.lib.run_randio(st.fd, st.write, engine, st.iodepth, st.batch, st.block,
                          st.size, st.ops, deadline, st.fsync_end, st.seed, st.randommap,
                          st.drop_each_pass, t0_ns, spin_ns)
    metrics = dict(st.metrics)
    if d["ops"] > 0 and d.get("distinct") is not None:
        metrics[REPEATS.name] = 1.0 - min(d["distinct"], d["ops"]) / d["ops"]
    if not st.write:
        add_from_memory(metrics, st.read_bytes0, d["bytes"])
    if d["elapsed_ns"] > 0:
        sec = d["elapsed_ns"] / 1e9
        metrics["iops"] = d["ops"] / sec
        metrics["mb_s"] = d["bytes"] / sec / 1e6
    if st.fsync_end and d.get("fsync_ns"):
        metrics["fsync_us"] = d["fsync_ns"] / 1e3
    # submit_calls: system calls that handed I/Os to the kernel (what `batch` really did)
    extra = {"engine": st.engine, SUBMIT_CALLS: d.get("submits", 0)}
    if st.drop_each_pass:
        extra[CACHE_DROPS] = d.get("drops", 0)     # inside the window, as fio's
    return result_from_native(d, lambda err, text: explain(st, err, text), metrics=metrics,
                              extra=extra)


def _cleanup(st: _State) -> None:
    if st.fd >= 0:
        fd, st.fd = st.fd, -1
        try:
            os.close(fd)
        except OSError as e:
            raise KernelError(user_message(st.label, e.errno or 0,
                                           f"closing the file: {e.strerror}")) from None


_DOC = ("Random, block-aligned {what} of `block` bytes over the first `size` bytes of one "
        "file per slot, each block once per pass (fio's random map; randommap = false: drawn "
        "with replacement), `iodepth` in flight, until `ops` or `duration` (default 5s). The "
        "file is laid out before T0 when missing or short (never inside the timed window). "
        "Engines: psync (pread/pwrite, iodepth 1), io_uring (raw syscalls), Linux AIO, or "
        "`iodepth` pread/pwrite threads; the one used is kept in the record's extra as "
        "`engine`.{cache} Metrics: iops, mb_s (10^6 "
        "bytes/s), lat_* = per-I/O submission-to-completion latency{more}.")

# a repeated block of a buffered read comes from the page cache, whatever was dropped at T0
REPEATS = Figure("repeats", "share", "repeated blocks", "", role=CONTEXT,
                 formula="a slot's I/Os at a block it had already read (or written) in the "
                 "window / its I/Os: (ops - distinct blocks) / ops, the distinct blocks "
                 "counted after the window from the offsets' seed. 0 within a pass of the "
                 "random map (randommap = true, fio's default), (ops - blocks) / ops past "
                 "it; drawn with replacement (randommap = false) about 1/e of one file's "
                 "worth of I/Os")

FIGURES = (OPS_RATE.first(), BANDWIDTH.first(), LATENCY.first(), ELAPSED,
           # fio's figures: each slot's own rate, summed over the phase's slots as fio's
           # group total; named as rates, in the units of the computed ones beside them
           Figure("iops", "ops/s", "fio ops rate", scope=SLOT, sums=True,
                  formula="a slot's ops / its own time, as fio counts them; the aggregate "
                  "their sum over the phase's slots"),
           Figure("mb_s", "MB/s", "fio bandwidth", scope=SLOT, sums=True,
                  formula="a slot's bytes / its own time (10^6 bytes/s), as fio; the "
                  "aggregate their sum over the phase's slots"), FSYNC, REPEATS) + READS_CACHE

# the engine that ran, not the plan's `auto`: io_uring, aio, threads or psync
FACTS = (Fact("engine", "I/O engine", note="the engine the I/Os went through (`auto` picks "
              "psync at iodepth 1, else io_uring where the kernel allows it, else aio, else "
              "threads)"),)

RANDREAD = Kernel(
    name="io.randread",
    figures=FIGURES,
    doc=_DOC.format(what="reads", more=" (as fio's lat: slat + clat)",
                    cache=" The file's cached pages are dropped before T0 unless cache = "
                          "\"keep\" (fio's invalidate=1), and with the random map again as "
                          "each later pass begins (inside the window, as fio's); records "
                          "carry cached_fraction."),
    params={**_PARAMS,
            "cache": replace(CACHE, doc=CACHE.doc + " With the random map, \"drop\" drops "
                             "them again as each later pass begins, inside the timed window, "
                             "as fio's invalidate=1 does when a time-based job's map is used "
                             "up (the record's extra cache_drops counts them).")},
    prepare=lambda ctx, params: _prepare(ctx, params, False), run=_run, cleanup=_cleanup,
    check=_check, uses_dir=True, progress="bytes", facts=FACTS,
)

RANDWRITE = Kernel(
    name="io.randwrite",
    figures=FIGURES,
    doc=_DOC.format(what="overwrites", more="; with fsync = \"end\", fsync_us is the final "
                                           "fsync inside the window", cache=""),
    params={**_PARAMS,
            "fsync": Param("choice", "fsync the file at the end, inside the timed window (as "
                                     "fio's end_fsync), or never.", default="never",
                           choices=("end", "never"))},
    prepare=lambda ctx, params: _prepare(ctx, params, True), run=_run, cleanup=_cleanup,
    check=_check, uses_dir=True, progress="bytes", facts=FACTS,
)

KERNELS = [RANDREAD, RANDWRITE]
