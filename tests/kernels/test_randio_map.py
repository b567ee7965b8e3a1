"""io.randread / io.randwrite take each block once per pass by default, as fio's default random
map (issue 32, item 5: sampling with replacement, fio's norandommap, read 1.37x fio's default
IOPS, 22-25% of its reads from pages cached earlier in the run); `randommap = false` samples
with replacement. `repeats` in the record: the share of the I/Os at a block the run did before.

The offsets are counted where the kernel cannot report them itself: every pread64/pwrite64 on
the file under strace (psync and threads), the device bytes of /proc/self/io (io_uring, aio)."""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter

import pytest

pytest.importorskip("manybench._native",
                    reason="C kernels not built (python setup.py build_ext --inplace)")
from builders import ctx_for, in_memory, run_kernel  # noqa: E402
from manybench import _native  # noqa: E402

KiB = 1024
BLOCK = 4 * KiB
NBLOCKS = 61                  # not a power of two: the permutation's cycle walk is exercised

RUN = """
import json, sys
from manybench import _native
from manybench.kernels import KERNELS, SlotContext
d, kernel, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
ctx = SlotContext(run="r", node="n", slot=0, rank=0, workers=1, cpu=-1, scratch=d, shared=d)
k = KERNELS[kernel]
st = k.prepare(ctx, params)
try:
    r = k.run(st, _native.now_ns() + 2_000_000, 0)
finally:
    k.cleanup(st)
print(json.dumps({"status": r.status, "error": r.error, "ops": r.ops, "metrics": r.metrics}))
"""
CALL = re.compile(r"p(?:read|write)64\(\d+, .*, (\d+), (\d+)\)\s+= (\d+)")


def traced(tmp_path, kernel: str, params: dict) -> tuple[dict, list[int]]:
    """Run the kernel in a child under strace: its result and the block index of every
    pread64/pwrite64 on its file, in the order issued."""
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    d = str(tmp_path / "slot")
    os.makedirs(d)
    path = os.path.join(d, "rand.dat")
    with open(path, "wb") as f:            # laid out first, so strace -P knows the path
        f.write(b"\1" * params["size"])
    log = str(tmp_path / "trace")
    # -ff: a log per thread, so no call is split into "unfinished" and "resumed" lines
    p = subprocess.run(["strace", "-ff", "-qq", "-s", "0", "-e", "trace=pread64,pwrite64",
                        "-P", path, "-o", log, sys.executable, "-c", RUN, d, kernel,
                        json.dumps(params)], capture_output=True, text=True)
    if p.returncode != 0 and "ptrace" in p.stderr:
        pytest.skip(f"strace cannot trace here: {p.stderr.strip()}")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.splitlines()[-1])
    assert out["status"] == "ok", out["error"]
    offsets = []
    for name in sorted(glob.glob(log + ".*")):
        with open(name) as f:
            for m in filter(None, map(CALL.search, f)):
                size, off, got = (int(x) for x in m.groups())
                assert size == got == BLOCK and off % BLOCK == 0, m.group(0)
                offsets.append(off // BLOCK)
    assert len(offsets) == out["ops"], "a call per I/O"
    return out, offsets


@pytest.mark.parametrize("kernel", ["io.randread", "io.randwrite"])
@pytest.mark.parametrize("engine,iodepth", [("psync", 1), ("threads", 3)])
def test_each_block_once_per_pass_by_default(tmp_path, kernel, engine, iodepth):
    passes = 3
    out, offsets = traced(tmp_path, kernel, {"size": NBLOCKS * BLOCK, "ops": passes * NBLOCKS,
                                             "engine": engine, "iodepth": iodepth})
    assert Counter(offsets) == {b: passes for b in range(NBLOCKS)}
    if engine == "psync":     # in issue order: every pass a permutation, and not the same one
        runs = [offsets[i * NBLOCKS:(i + 1) * NBLOCKS] for i in range(passes)]
        assert all(sorted(r) == list(range(NBLOCKS)) for r in runs)
        assert runs[0] != runs[1] != runs[2] and runs[0] != sorted(runs[0])
    assert out["metrics"]["repeats"] == pytest.approx((passes - 1) / passes)


@pytest.mark.parametrize("engine,iodepth", [("psync", 1), ("threads", 3)])
def test_randommap_false_samples_with_replacement(tmp_path, engine, iodepth):
    out, offsets = traced(tmp_path, "io.randread",
                          {"size": NBLOCKS * BLOCK, "ops": 4 * NBLOCKS, "engine": engine,
                           "iodepth": iodepth, "randommap": False})
    distinct = len(set(offsets))
    # 244 draws from 61 blocks: some block is drawn other than 4 times (P(all 4) ~ 1e-20)
    assert sorted(Counter(offsets).values()) != [4] * NBLOCKS
    assert out["metrics"]["repeats"] == pytest.approx(1 - distinct / len(offsets))


def test_the_same_seed_gives_the_same_order(tmp_path):
    params = {"size": NBLOCKS * BLOCK, "ops": NBLOCKS, "seed": 7}
    _, a = traced(tmp_path / "a", "io.randread", params)
    _, b = traced(tmp_path / "b", "io.randread", params)
    _, c = traced(tmp_path / "c", "io.randread", {**params, "seed": 8})
    assert a == b != c


def device_counted(tmp_path, engine: str, iodepth: int):
    """The slot's context where the engine runs and reads are counted at the device."""
    try:
        _native.randio_probe(engine, iodepth)
    except OSError as e:
        pytest.skip(f"this kernel refuses engine {engine}: {e.strerror}")
    if in_memory(str(tmp_path)):
        pytest.skip("scratch on tmpfs: every read is memory's")
    return ctx_for(tmp_path)


@pytest.mark.parametrize("engine", ["io_uring", "aio"])
def test_one_pass_reads_every_byte_from_the_device(tmp_path, engine):
    """The device's count (/proc/self/io read_bytes), which load cannot move: one pass of the
    map, cache dropped at T0, fetches every block once; sampling with replacement rereads
    about 1/e of the I/Os from the pages it cached, and `repeats` says how many."""
    ctx = device_counted(tmp_path, engine, 8)
    n = 512
    params = {"size": n * BLOCK, "ops": n, "engine": engine, "iodepth": 8}
    mapped = run_kernel("io.randread", ctx, params)
    sampled = run_kernel("io.randread", ctx, {**params, "randommap": False})
    assert mapped.status == "ok" == sampled.status, (mapped.error, sampled.error)
    assert mapped.metrics["cached_fraction"] <= 0.05 >= sampled.metrics["cached_fraction"]
    assert mapped.metrics["repeats"] == 0.0
    assert mapped.metrics["from_memory"] <= 0.02
    assert 0.25 <= sampled.metrics["repeats"] <= 0.5      # 1/e = 0.37 expected
    assert sampled.metrics["from_memory"] == pytest.approx(sampled.metrics["repeats"], abs=0.05)
    assert "cache_drops" not in sampled.extra             # no pass ends: nothing to drop


@pytest.mark.parametrize("engine,iodepth", [("io_uring", 8), ("threads", 3)])
def test_each_later_pass_is_dropped_as_fio_does(tmp_path, engine, iodepth):
    """fio with invalidate=1 (its default) drops the file's cache again when a time-based
    job's random map is used up (io_u.c loop_cache_invalidate; strace: a DONTNEED per pass),
    so each pass reads the device. cache = "drop" does the same, inside the window; "keep"
    never drops and the later passes read memory."""
    ctx = device_counted(tmp_path, engine, iodepth)
    n = 256
    params = {"size": n * BLOCK, "ops": 3 * n, "engine": engine, "iodepth": iodepth}
    dropped = run_kernel("io.randread", ctx, params)
    kept = run_kernel("io.randread", ctx, {**params, "cache": "keep"})
    assert dropped.status == "ok" == kept.status, (dropped.error, kept.error)
    assert dropped.extra["cache_drops"] == 2 and "cache_drops" not in kept.extra
    assert dropped.metrics["repeats"] == kept.metrics["repeats"] == pytest.approx(2 / 3)
    # in flight across a pass's end, a few reads of the pass before may land after its drop
    assert dropped.metrics["from_memory"] <= 0.05
    assert kept.metrics["from_memory"] >= 0.9


def test_randommap_is_a_checked_bool(tmp_path):
    from manybench.kernels import KERNELS
    k = KERNELS["io.randread"]
    assert k.params["randommap"].default is True
    with pytest.raises(ValueError, match="true or false"):
        k.params["randommap"].parse("yes")
