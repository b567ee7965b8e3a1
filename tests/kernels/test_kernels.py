"""Built-in kernels through their prepare/run/cleanup contract, and the histogram helpers."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import textwrap

import pytest

pytest.importorskip("manybench._native",
                    reason="C kernels not built (python setup.py build_ext --inplace)")
from builders import LAT_KEYS, check_latency, ctx_for, run_kernel  # noqa: E402
from odirect import in_private_ramfs, odirect_refused  # noqa: E402
from manybench import _native  # noqa: E402
from manybench.kernels import KERNELS, SlotContext  # noqa: E402
from manybench.kernels import hist  # noqa: E402
from manybench.kernels.base import KernelError  # noqa: E402

KiB, MiB = 1024, 1024 * 1024


# ---- null ------------------------------------------------------------------------------------

def test_null(tmp_path):
    r = run_kernel("null", ctx_for(tmp_path), {})
    assert r.status == "ok" and r.ops == 0 and r.hist is None and r.metrics == {}
    assert r.armed_ns <= r.start_ns


# ---- io.write / io.read ------------------------------------------------------------------

def test_write_size_block_and_file(tmp_path):
    ctx = ctx_for(tmp_path)
    r = run_kernel("io.write", ctx, {"size": 4 * MiB, "block": 256 * KiB, "file": "io.dat",
                                     "fsync": "end"})
    assert r.status == "ok", r.error
    assert r.bytes == 4 * MiB and r.ops == 4 * MiB // (256 * KiB)
    assert os.path.getsize(os.path.join(ctx.scratch, "io.dat")) == 4 * MiB
    check_latency(r)
    assert 0 <= r.metrics["fsync_us"] * 1e3 <= r.elapsed_ns


def test_write_truncates_and_defaults(tmp_path):
    ctx = ctx_for(tmp_path)
    run_kernel("io.write", ctx, {"size": 2 * MiB})
    r = run_kernel("io.write", ctx, {"size": 1 * MiB, "fsync": "never"})
    assert r.status == "ok" and "fsync_us" not in r.metrics
    assert r.ops == 1                                     # default block 1MiB
    assert os.path.getsize(os.path.join(ctx.scratch, "io.dat")) == 1 * MiB


def test_write_stonewall_stops_at_deadline(tmp_path):
    """Writes until its duration's deadline. A window descheduled whole (a busy machine)
    writes nothing and still ends at the deadline; then a 10x longer one is tried."""
    ctx = ctx_for(tmp_path)
    k = KERNELS["io.write"]
    for duration in (0.03, 0.3, 3.0):
        st = k.prepare(ctx, {"duration": duration, "block": 4 * KiB, "fsync": "never"})
        try:
            t0 = _native.now_ns() + 2_000_000
            r = k.run(st, t0, 0)
        finally:
            k.cleanup(st)
        assert r.status == "ok" and r.end_ns >= t0 + int(duration * 1e9)
        if r.bytes:
            break
    assert r.bytes > 0


def test_read_lays_out_missing_file_and_reads_size(tmp_path):
    ctx = ctx_for(tmp_path)
    r = run_kernel("io.read", ctx, {"size": 3 * MiB, "block": 1 * MiB, "cache": "drop"})
    assert r.status == "ok", r.error
    assert r.bytes == 3 * MiB and r.ops == 3
    assert os.path.getsize(os.path.join(ctx.scratch, "io.dat")) == 3 * MiB
    check_latency(r)


def test_read_extends_a_short_file_left_by_a_writer(tmp_path):
    ctx = ctx_for(tmp_path)
    run_kernel("io.write", ctx, {"size": 1 * MiB, "file": "shared.dat"})
    r = run_kernel("io.read", ctx, {"size": 2 * MiB, "block": 512 * KiB, "file": "shared.dat"})
    assert r.status == "ok" and r.bytes == 2 * MiB and r.ops == 4
    assert os.path.getsize(os.path.join(ctx.scratch, "shared.dat")) == 2 * MiB


def test_read_with_duration_is_time_based(tmp_path):
    ctx = ctx_for(tmp_path)
    # a file of one block, so that a second read is a wrap: 0.2 s holds two reads even on a
    # loaded machine (64 KiB in 0.03 s read 20 KiB once in CI)
    r = run_kernel("io.read", ctx, {"size": 4 * KiB, "block": 4 * KiB, "duration": 0.2})
    assert r.status == "ok", r.error
    assert r.bytes > 4 * KiB and r.bytes % (4 * KiB) == 0   # wrapped at the end of the file
    assert r.end_ns >= r.start_ns + 150_000_000     # the duration, less the stamps' jitter


def test_direct_needs_aligned_block_and_size(tmp_path):
    with pytest.raises(KernelError, match="multiples of 4096.*block = 1000"):
        KERNELS["io.write"].prepare(ctx_for(tmp_path),
                                    {"size": 1 * MiB, "block": 1000, "direct": True})
    with pytest.raises(KernelError, match="size = 5000"):
        KERNELS["io.read"].prepare(ctx_for(tmp_path),
                                   {"size": 5000, "block": 4096, "direct": True})


def test_direct_works_where_supported(tmp_path):
    if odirect_refused(str(tmp_path)):
        pytest.skip(f"{tmp_path} refuses O_DIRECT")
    ctx = ctx_for(tmp_path)
    r = run_kernel("io.write", ctx, {"size": 1 * MiB, "block": 64 * KiB, "direct": True})
    assert r.status == "ok" and r.bytes == 1 * MiB
    r = run_kernel("io.read", ctx, {"size": 1 * MiB, "block": 64 * KiB, "direct": True})
    assert r.status == "ok" and r.bytes == 1 * MiB


_DIRECT_SCRIPT = textwrap.dedent("""
    import sys
    from manybench.kernels import KERNELS, SlotContext
    from manybench.kernels.base import KernelError
    d = sys.argv[1]
    ctx = SlotContext(run="r", node="n", slot=0, rank=0, workers=1, cpu=-1,
                      scratch=d + "/s0", shared=d + "/shared")
    try:
        KERNELS["io.write"].prepare(ctx, {"size": 1 << 20, "block": 1 << 20, "direct": True})
    except KernelError as e:
        print(e)
        sys.exit(0)
    sys.exit(3)
""")


def test_direct_on_a_file_system_without_odirect_is_a_clear_error(tmp_path):
    """tmpfs (/dev/shm) refused O_DIRECT before Linux 6.6; ramfs still does."""
    if os.path.isdir("/dev/shm") and odirect_refused("/dev/shm"):
        base = str(tmp_path).replace("/", "_")
        d = os.path.join("/dev/shm", f"mb-test-{os.getpid()}-{base[-40:]}")
        try:
            with pytest.raises(KernelError) as ei:
                KERNELS["io.write"].prepare(ctx_for_dir(d), {"size": MiB, "direct": True})
            msg = str(ei.value)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    else:
        # This kernel's tmpfs accepts O_DIRECT: mount a ramfs in a private mount namespace.
        msg = in_private_ramfs(tmp_path, _DIRECT_SCRIPT)
    assert "\n" not in msg
    assert "refuses O_DIRECT" in msg and "direct = false" in msg


def ctx_for_dir(d: str) -> SlotContext:
    return SlotContext(run="r", node="n", slot=0, rank=0, workers=1, cpu=-1,
                       scratch=os.path.join(d, "s0"), shared=os.path.join(d, "shared"))


@pytest.fixture
def full_disk(tmp_path):
    """A 1 MiB tmpfs: writes past it fail with ENOSPC (the slot's file in scratch must be a
    regular file, so /dev/full no longer serves)."""
    d = tmp_path / "small"
    d.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(d)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"needs to mount a tmpfs (root): {r.stderr.strip()}")
    yield d
    subprocess.run(["umount", "-l", str(d)], capture_output=True)


def test_no_space_left_is_a_clear_error(full_disk):
    # a write past the file system's end fails with ENOSPC: the run's error, not an exception
    ctx = ctx_for(full_disk)
    r = run_kernel("io.write", ctx, {"size": 2 * MiB, "block": 256 * KiB})
    assert r.status == "error" and r.bytes < 2 * MiB
    assert "\n" not in r.error
    assert r.error.startswith(f"io.write {ctx.scratch}/io.dat: write at offset ")
    assert "file system is full" in r.error


def test_permission_denied_is_a_clear_error(tmp_path):
    ctx = ctx_for(tmp_path)
    os.makedirs(ctx.scratch)
    os.chmod(ctx.scratch, 0o555)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:   # as an unprivileged user when root (root ignores modes)
        try:
            os.close(r)
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            try:
                KERNELS["io.write"].prepare(ctx, {"size": MiB})
                os.write(w, b"no error")
            except KernelError as e:
                os.write(w, str(e).encode())
        finally:
            os._exit(0)
    os.close(w)
    msg = os.read(r, 4096).decode()
    os.close(r)
    os.waitpid(pid, 0)
    os.chmod(ctx.scratch, 0o755)
    # pytest's own tmp dirs are 0700, so an unprivileged user may fail one level up already
    assert msg.startswith("io.write: cannot open ") and str(tmp_path) in msg, msg
    assert ": Permission denied (check the owner and mode of the directory" in msg
    assert "\n" not in msg


# ---- histogram helpers -------------------------------------------------------------------

def test_bucket_ranges_tile_every_uint64():
    prev_hi = -1
    for b in range(hist.HIST_BUCKETS):
        lo, hi = hist.bucket_range(b)
        assert lo == prev_hi + 1 and hi >= lo
        assert (hi - lo + 1) <= max(1, lo / 32)          # relative width <= 1/32
        assert hist.bucket_of(lo) == b == hist.bucket_of(hi)
        prev_hi = hi
    assert prev_hi == 2**64 - 1


def _hist_of(values: list[int]) -> dict[int, int]:
    h: dict[int, int] = {}
    for v in values:
        b = hist.bucket_of(v)
        h[b] = h.get(b, 0) + 1
    return h


def _close(estimate: float, exact: float) -> bool:
    lo, hi = hist.bucket_range(hist.bucket_of(int(exact)))
    return lo <= estimate <= hi


def test_percentiles_of_known_values():
    values = [1000] * 50 + [20_000] * 40 + [500_000] * 9 + [3_000_000]
    h = _hist_of(values)
    assert _close(hist.percentile(h, 50), 1000)
    assert _close(hist.percentile(h, 90), 20_000)
    assert _close(hist.percentile(h, 99), 500_000)
    assert _close(hist.percentile(h, 100), 3_000_000)
    assert _close(hist.percentile(h, 0), 1000)
    qs = [hist.percentile(h, q) for q in range(0, 101, 5)]
    assert qs == sorted(qs)
    exact_mean = sum(values) / len(values)
    assert abs(hist.mean(h) - exact_mean) <= exact_mean / 32
    m = hist.latency_metrics(h)
    assert set(m) == set(LAT_KEYS)
    assert _close(m["lat_p50_us"] * 1e3, 1000) and _close(m["lat_max_us"] * 1e3, 3_000_000)


def test_small_values_are_exact():
    h = _hist_of([5, 7, 7, 63])
    assert hist.percentile(h, 50) == 7 and hist.percentile(h, 100) == 63


def test_decode_merge_and_json_round_trip():
    raw = bytearray(8 * hist.HIST_BUCKETS)
    raw[8 * 100:8 * 101] = (3).to_bytes(8, "little")
    raw[8 * 1919:8 * 1920] = (2**40).to_bytes(8, "little")
    h = hist.decode(bytes(raw))
    assert h == {100: 3, 1919: 2**40}
    back = json.loads(json.dumps(h))                    # keys come back as str
    assert set(back) == {"100", "1919"}
    assert hist.merge([h, back, None, {}]) == {100: 6, 1919: 2**41}
    assert hist.latency_metrics(back) == hist.latency_metrics(h)
    assert hist.percentile(back, 50) == hist.percentile(h, 50)
    assert hist.count(back) == 3 + 2**40


def test_empty_histograms():
    assert hist.decode(None) == {} and hist.decode(b"") == {}
    assert hist.latency_metrics({}) == {} and hist.latency_metrics(None) == {}
    with pytest.raises(ValueError):
        hist.percentile({}, 50)
    with pytest.raises(ValueError):
        hist.percentile({1: 1}, 101)


def test_native_histogram_matches_result(tmp_path):
    r = run_kernel("meta.create", ctx_for(tmp_path), {"items": 40})
    assert hist.count(r.hist) == 40
    assert r.metrics == hist.latency_metrics(json.loads(json.dumps(r.hist)))


@pytest.mark.parametrize("params, preallocated", [
    ({"size": 8 * MiB}, True),                        # fio's default fallocate=native
    ({"size": 8 * MiB, "fallocate": False}, False),   # as IOR and dd
    ({"size": 8 * MiB, "duration": 0.05}, False),     # a stonewall may stop short of size
])
def test_io_write_preallocates_before_t0_as_fio_does(tmp_path, params, preallocated):
    ctx = ctx_for(tmp_path)
    k = KERNELS["io.write"]
    state = k.prepare(ctx, params)
    try:
        st = os.stat(state.path)
        if preallocated and st.st_blocks == 0:
            pytest.skip("this file system has no fallocate: fio preallocates nothing either")
        # before T0: the file holds its blocks already (fallocate mode 0 sets its size too)
        assert (st.st_blocks * 512 >= 8 * MiB) is preallocated
        assert (st.st_size == 8 * MiB) is preallocated
        r = k.run(state, _native.now_ns() + 2_000_000, 0)
        assert r.status == "ok", r.error
    finally:
        k.cleanup(state)


def test_a_result_is_built_whole_and_never_changed_after(tmp_path):
    """A kernel's Result is made once with everything it measured (issue 16, item 8): a later
    step makes a new one (dataclasses.replace), so no copy held elsewhere changes under it."""
    res = run_kernel("io.write", ctx_for(tmp_path), {"size": 64 * KiB, "block": 4 * KiB})
    assert res.status == "ok" and res.extra["file"] and "lat_p50_us" in res.metrics
    for name, value in (("status", "error"), ("metrics", {}), ("samples", [(1, 1.0)])):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(res, name, value)
    later = dataclasses.replace(res, status="error", error="later")
    assert (res.status, later.status, later.metrics) == ("ok", "error", res.metrics)
