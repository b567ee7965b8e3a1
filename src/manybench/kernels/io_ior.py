"""IOR's semantics in io.*: the stonewall with wear-out (-D with stoneWallingWearOut) and
reads of another rank's file (-C). See io.py's docstring for what each does."""
from __future__ import annotations

import os
from dataclasses import replace

from ..extra_keys import FILE
from ..status import Status

from ..node.wire_types import Result
from .base import KernelError
from .figures import (REORDER_SHIFT, STONEWALL_BLOCKS, STONEWALL_BYTES, STONEWALL_S,
                      WEAR_OUT_BLOCKS)
from .hist import latency_metrics, merge
from .iofile import IoState, explain, open_file
from .native import result_from_native
from .pagecache import prepare_cache


def publish(st: IoState) -> dict | None:
    """What the phase's other slots need: rank 0's group port (wear_out), our file (reorder)."""
    if not st.publishes:
        return None
    return {**(st.group.published() if st.group else {}), "path": st.path}


def connect(st: IoState, peers: dict[int, dict]) -> None:
    """Before T0: join the group (wear_out), or open the next rank's file (reorder)."""
    if st.group is not None:
        st.group.connect(peers)
    if st.reorder:
        shift = _next_node(st.rank, st.workers, peers)
        other = peers.get((st.rank + shift) % st.workers, {}).get("path")
        if not other:
            raise KernelError("io.read (reorder): the next rank published no file")
        fd = open_file(st.root, other, os.O_RDONLY, st.direct, "io.read (reorder)")
        try:
            size = st.size or os.fstat(fd).st_size
            st.metrics.update(prepare_cache(st.lib, fd, size, st.cache, f"io.read {other}"))
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        except (OSError, KernelError):
            os.close(fd)
            raise
        os.close(st.fd)
        st.fd, st.path = fd, other
        st.metrics[REORDER_SHIFT.name] = shift


def _next_node(rank: int, workers: int, peers: dict[int, dict]) -> int:
    """How far to the first rank on another node (IOR -C: one node over, whether ranks go
    round the nodes, spread, or fill one first, pack); 1 when every rank is on one node."""
    here = peers.get(rank, {}).get("host")
    for k in range(1, workers):
        if peers.get((rank + k) % workers, {}).get("host") != here:
            return k
    return 1


def wear_out(st: IoState, t0_ns: int, spin_ns: int) -> Result:
    """IOR's stonewall with wear-out, one timed window: write until the stonewall, agree on
    the most blocks any slot wrote, write up to that many, fsync. The stonewall figures are
    this slot's at the moment the group agreed (IOR's stonewall time)."""
    why = lambda err, text: explain(st, err, text)   # noqa: E731
    deadline = t0_ns + round(st.duration * 1e9)
    first = st.lib.run_io(st.fd, True, st.block, st.size, deadline, False, st.direct, t0_ns,
                          spin_ns)
    res = result_from_native(first, why)
    if res.status != Status.OK:
        return res
    blocks = -(-res.bytes // st.block)
    try:
        target = st.group.max(blocks)
    except OSError as e:
        return replace(res, status=Status.ERROR,
                       error=f"io.write (wear_out): the all-reduce failed: {e}")
    agreed_ns = st.lib.now_ns()
    metrics = {**res.metrics, STONEWALL_S.name: (agreed_ns - res.start_ns) / 1e9,
               STONEWALL_BYTES.name: res.bytes, STONEWALL_BLOCKS.name: blocks,
               WEAR_OUT_BLOCKS.name: target}
    left = (target - blocks) * st.block
    if left or st.fsync_end:
        # size 0 means "no limit" to run_io: with nothing left, only the fsync is timed
        rest = st.lib.run_io(st.fd, True, st.block, left, 0, st.fsync_end, st.direct, 0, 0) \
            if left else _fsync_only(st)
        more = result_from_native(rest, why)
        hist = merge([res.hist, more.hist]) if more.hist else res.hist
        if more.hist:
            metrics.update(latency_metrics(hist))
        if st.fsync_end and rest.get("fsync_ns"):
            metrics["fsync_us"] = rest["fsync_ns"] / 1e3
        failed = {"status": more.status, "error": more.error} if more.status != Status.OK else {}
        res = replace(res, ops=res.ops + more.ops, bytes=res.bytes + more.bytes,
                      end_ns=more.end_ns, elapsed_ns=more.end_ns - res.start_ns, hist=hist,
                      **failed)
    return replace(res, metrics={**metrics, **st.metrics}, extra={**res.extra, FILE: st.path})


def _fsync_only(st: IoState) -> dict:
    """A run_io-shaped dict for a final fsync with nothing left to write."""
    t = st.lib.mono_ns()
    err = 0
    try:
        os.fsync(st.fd)
    except OSError as e:
        err = e.errno or 0
    t2 = st.lib.mono_ns()
    now = st.lib.now_ns()
    return {"start_ns": now, "end_ns": now, "elapsed_ns": 0, "armed_ns": 0, "ops": 0,
            "bytes": 0, "errno": err, "error": "fsync" if err else "", "hist": None,
            "fsync_ns": t2 - t}
