"""io.randread / io.randwrite: counts, engines at depth, O_DIRECT, the CLI."""
from __future__ import annotations

import os
import shutil
import textwrap

import pytest

pytest.importorskip("manybench._native",
                    reason="C kernels not built (python setup.py build_ext --inplace)")
from builders import ctx_for, run_kernel  # noqa: E402
from conftest import export_json, run_cli  # noqa: E402
from odirect import in_private_ramfs, odirect_refused  # noqa: E402
from manybench import _native  # noqa: E402
from manybench.kernels import KERNELS, Result  # noqa: E402
from manybench.kernels.base import KernelError  # noqa: E402

KiB, MiB = 1024, 1024 * 1024
ENGINES = ("io_uring", "aio", "threads")


def engine_or_skip(engine: str, iodepth: int) -> None:
    try:
        _native.randio_probe(engine, iodepth)
    except OSError as e:
        pytest.skip(f"this kernel refuses engine {engine}: {e.strerror}")


def check(r: Result, block: int, ops: int | None = None) -> None:
    assert r.status == "ok", r.error
    if ops is not None:
        assert r.ops == ops
    assert r.ops > 0 and r.bytes == r.ops * block
    assert sum(r.hist.values()) == r.ops
    m = r.metrics
    assert m["iops"] > 0 and m["mb_s"] > 0
    assert m["mb_s"] == pytest.approx(m["iops"] * block / 1e6)
    assert 0 < m["lat_p50_us"] <= m["lat_p99_us"] <= m["lat_max_us"]


@pytest.mark.parametrize("kernel", ["io.randread", "io.randwrite"])
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("iodepth", [1, 8])
def test_ops_and_bytes_with_each_engine(tmp_path, kernel, engine, iodepth):
    engine_or_skip(engine, iodepth)
    r = run_kernel(kernel, ctx_for(tmp_path), {"size": 1 * MiB, "ops": 300,
                                               "engine": engine, "iodepth": iodepth})
    check(r, 4 * KiB, ops=300)
    assert r.extra["engine"] == engine
    # io_uring/aio: one I/O per submitting call at batch 1 (the default); threads: no such call
    if engine == "threads":
        assert r.extra["submit_calls"] == 0
    else:
        assert r.extra["submit_calls"] >= 300
    # laid out to size before T0 and never truncated or extended by the I/O
    assert os.path.getsize(os.path.join(ctx_for(tmp_path).scratch, "rand.dat")) == 1 * MiB


@pytest.mark.parametrize("engine", ["io_uring", "aio"])
@pytest.mark.parametrize("batch", [3, 8, 64])
def test_batched_submission(tmp_path, engine, batch):
    """`batch` I/Os go to the kernel per system call (submit_calls counts the calls that
    handed new I/Os over). A call never hands over more than min(batch, iodepth), so there
    are at least ops / that many. The file was just laid out and cache = "keep" leaves it in
    the page cache, so every read completes inside the call that submits it (io_uring's
    inline completion, buffered AIO's synchronous io_submit): each wait reaps a full queue,
    and each refill of `iodepth` I/Os costs ceil(iodepth / batch) calls (the last partial
    batch rides on the wait)."""
    engine_or_skip(engine, 8)
    ops, depth = 301, 8

    def calls(b: int) -> int:
        r = run_kernel("io.randread", ctx_for(tmp_path), {"size": 1 * MiB, "ops": ops,
                                                          "engine": engine, "iodepth": depth,
                                                          "batch": b, "cache": "keep"})
        check(r, 4 * KiB, ops=ops)
        assert r.metrics["cached_fraction"] == 1.0      # the premise: reads from memory
        per_call = min(b, depth)
        ideal = -(-ops // depth) * -(-depth // per_call)
        n = r.extra["submit_calls"]
        # slack: a round whose completions straggle in over two waits costs one call more
        # (as does a short read's remainder); up to `depth` such rounds are allowed
        assert -(-ops // per_call) <= n <= ideal + depth, (b, n, ideal)
        return n
    one, batched = calls(1), calls(batch)
    assert one >= ops - depth                       # about a call per I/O
    assert batched * 2 < one                        # and markedly fewer with a batch


def test_auto_picks_an_engine_and_duration_stonewalls(tmp_path):
    r = run_kernel("io.randread", ctx_for(tmp_path),
                   {"size": 512 * KiB, "block": 8 * KiB, "duration": 0.1, "iodepth": 4})
    check(r, 8 * KiB)
    assert r.extra["engine"] in ENGINES


def test_ops_and_duration_whichever_first(tmp_path):
    r = run_kernel("io.randread", ctx_for(tmp_path),
                   {"size": 256 * KiB, "duration": 30.0, "ops": 50, "engine": "threads",
                    "iodepth": 3})
    check(r, 4 * KiB, ops=50)   # the ops limit is shared by the threads, exactly


def test_existing_longer_file_is_kept_and_write_fsyncs_at_end(tmp_path):
    ctx = ctx_for(tmp_path)
    os.makedirs(ctx.scratch)
    path = os.path.join(ctx.scratch, "mine.dat")
    with open(path, "wb") as f:
        f.write(b"\0" * (3 * MiB))
    r = run_kernel("io.randwrite", ctx, {"size": 1 * MiB, "file": "mine.dat", "ops": 64,
                                         "fsync": "end"})
    check(r, 4 * KiB, ops=64)
    assert r.metrics["fsync_us"] > 0
    assert os.path.getsize(path) == 3 * MiB
    with open(path, "rb") as f:        # the writes landed within the first `size` bytes
        head, tail = f.read(1 * MiB), f.read()
    assert head.count(0) < len(head) and tail.count(0) == len(tail)


def test_size_must_hold_a_block(tmp_path):
    with pytest.raises(KernelError, match="size: must hold at least one block"):
        KERNELS["io.randread"].prepare(ctx_for(tmp_path), {"size": 1024, "ops": 1})


def test_direct_needs_an_aligned_block(tmp_path):
    with pytest.raises(KernelError, match="block: direct = true needs a multiple of 4096"):
        KERNELS["io.randread"].prepare(ctx_for(tmp_path), {"size": 1 * MiB, "block": 1000,
                                                           "direct": True, "ops": 1})


@pytest.mark.parametrize("engine", ENGINES)
def test_direct_at_depth_where_supported(tmp_path, engine):
    if odirect_refused(str(tmp_path)):
        pytest.skip(f"{tmp_path} refuses O_DIRECT")
    engine_or_skip(engine, 4)
    for kernel in ("io.randwrite", "io.randread"):
        r = run_kernel(kernel, ctx_for(tmp_path), {"size": 1 * MiB, "ops": 40, "iodepth": 4,
                                                   "direct": True, "engine": engine})
        check(r, 4 * KiB, ops=40)


_DIRECT_SCRIPT = textwrap.dedent("""
    import sys
    from manybench.kernels import KERNELS, SlotContext
    from manybench.kernels.base import KernelError
    d = sys.argv[1]
    ctx = SlotContext(run="r", node="n", slot=0, rank=0, workers=1, cpu=-1,
                      scratch=d + "/s0", shared=d + "/shared")
    try:
        KERNELS["io.randread"].prepare(ctx, {"size": 1 << 20, "direct": True, "ops": 10})
    except KernelError as e:
        print(e)
        sys.exit(0)
    sys.exit(3)
""")


def test_direct_on_a_file_system_without_odirect_is_a_clear_error(tmp_path):
    """tmpfs (/dev/shm) refused O_DIRECT before Linux 6.6; ramfs still does."""
    if os.path.isdir("/dev/shm") and odirect_refused("/dev/shm"):
        d = os.path.join("/dev/shm", f"mb-randio-{os.getpid()}")
        try:
            with pytest.raises(KernelError) as ei:
                KERNELS["io.randread"].prepare(ctx_for(d), {"size": MiB, "direct": True,
                                                            "ops": 10})
            msg = str(ei.value)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    else:
        msg = in_private_ramfs(tmp_path, _DIRECT_SCRIPT)
    assert "\n" not in msg
    assert msg.startswith("io.randread ")
    assert "refuses O_DIRECT" in msg and "direct = false" in msg


@pytest.mark.e2e
def test_cli_end_to_end(plan_file, tmp_path):
    plan = plan_file("""
        name = "rio"
        [placement]
        workers = [1, 2]
        [[task]]
        name = "rr"
        kernel = "io.randread"
        dir = "{tmp}"
        size = "1MiB"
        ops = 200
        iodepth = [1, 4]
        [[task]]
        name = "rw"
        kernel = "io.randwrite"
        dir = "{tmp}"
        size = "1MiB"
        block = "8KiB"
        duration = "100ms"
        engine = "threads"
        iodepth = 2
    """)
    out_dir = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out_dir, "-q")
    assert res.returncode == 0, res.stderr + res.stdout
    rows = export_json(out_dir)
    rr = [r for r in rows if r["task"] == "rr"]
    rw = [r for r in rows if r["task"] == "rw"]
    assert len(rr) == 2 * (1 + 2) and len(rw) == 1 + 2
    for r in rows:
        assert r["status"] == "ok", r["error"]
        for m in ("iops", "mb_s", "lat_p50_us", "lat_p99_us"):
            assert r["metrics"][m] > 0
    for r in rr:
        assert r["kernel"] == "io.randread" and r["ops"] == 200 and r["bytes"] == 200 * 4096
        assert r["params"]["iodepth"] in (1, 4) and r["params"]["engine"] == "auto"
    for r in rw:
        assert r["kernel"] == "io.randwrite" and r["bytes"] == r["ops"] * 8192 > 0
        assert r["params"]["fsync"] == "never"


@pytest.mark.e2e
def test_kernel_doc_lists_params():
    res = run_cli("kernels", "io.randread")
    assert res.returncode == 0
    for name in ("size", "block", "iodepth", "batch", "direct", "duration", "ops", "engine",
                 "seed", "io_uring", "psync", "cache", "randommap", "repeats"):
        assert name in res.stdout
    res = run_cli("kernels", "io.randwrite")
    assert res.returncode == 0 and "fsync" in res.stdout and "end|never" in res.stdout


@pytest.mark.e2e
def test_plan_errors_name_the_field(plan_file, tmp_path):
    plan = plan_file("""
        [[task]]
        name = "rr"
        kernel = "io.randread"
        dir = "{tmp}"
        size = "2KiB"
        engine = "spdk"
    """)
    res = run_cli("run", plan, "-o", str(tmp_path / "res"))
    assert res.returncode == 2
    out = res.stderr + res.stdout
    assert "task.rr.engine" in out
    plan = plan_file("""
        [[task]]
        name = "rr"
        kernel = "io.randread"
        dir = "{tmp}"
    """, name="p2.toml")
    res = run_cli("run", plan, "-o", str(tmp_path / "res2"))
    assert res.returncode == 2 and "task.rr.size" in res.stderr + res.stdout
