"""Reads come from the device by default (fio's invalidate=1); every record says how much of
its file was in the page cache at T0, and the report says where a point's reads came from."""
from __future__ import annotations

import pytest

pytest.importorskip("manybench._native",
                    reason="C kernels not built (python setup.py build_ext --inplace)")
from conftest import export_json, run_cli  # noqa: E402
from manybench.kernels.base import KernelError  # noqa: E402
from builders import ctx_for, in_memory, run_kernel  # noqa: E402

MiB = 1024 * 1024


@pytest.mark.parametrize("kernel,params", [
    ("io.read", {"size": 4 * MiB, "block": MiB}),
    ("io.randread", {"size": 4 * MiB, "ops": 64})])
def test_reads_after_a_write_drop_the_cache_unless_kept(tmp_path, kernel, params):
    ctx = ctx_for(tmp_path)
    name = {"file": "data.bin"}
    run_kernel("io.write", ctx, {"size": 4 * MiB, **name})      # its pages are now cached
    dropped = run_kernel(kernel, ctx, {**params, **name})         # the default: drop
    run_kernel("io.write", ctx, {"size": 4 * MiB, **name})      # cached again
    kept = run_kernel(kernel, ctx, {**params, **name, "cache": "keep"})
    assert dropped.status == "ok" == kept.status, (dropped.error, kept.error)
    assert dropped.metrics["cache_dropped"] == 1.0 and kept.metrics["cache_dropped"] == 0.0
    assert kept.metrics["cached_fraction"] >= 0.9
    if in_memory(ctx.scratch):
        assert dropped.metrics["cached_fraction"] >= 0.9    # tmpfs: the cache is the storage
    else:
        assert dropped.metrics["cached_fraction"] <= 0.1


def test_auto_engine_is_psync_at_depth_one_and_queues_deeper(tmp_path):
    one = run_kernel("io.randread", ctx_for(tmp_path), {"size": MiB, "ops": 32})
    assert one.status == "ok" and one.extra["engine"] == "psync"
    deep = run_kernel("io.randread", ctx_for(tmp_path), {"size": MiB, "ops": 32, "iodepth": 8})
    assert deep.status == "ok" and deep.extra["engine"] in ("io_uring", "aio", "threads")
    with pytest.raises(KernelError, match="psync.*iodepth must be 1"):
        run_kernel("io.randread", ctx_for(tmp_path), {"size": MiB, "ops": 8, "iodepth": 4,
                                                      "engine": "psync"})


@pytest.mark.e2e
def test_report_says_where_reads_came_from(plan_file, tmp_path):
    plan = plan_file("""
        scratch = "{tmp}"
        [[task]]
        name = "w"
        kernel = "io.write"
        size = "4MiB"
        [[task]]
        name = "r"
        kernel = "io.read"
        size = "4MiB"
        cache = ["drop", "keep"]
    """)
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "-q")
    assert res.returncode == 0, res.stderr
    rows = {r["params"]["cache"]: r["metrics"] for r in export_json(out) if r["task"] == "r"}
    assert rows["keep"]["cached_fraction"] >= 0.9
    report = run_cli("report", out).stdout
    assert "reads from" in report and "memory (100% from memory)" in report
    if not in_memory(str(tmp_path)):
        assert rows["drop"]["cached_fraction"] <= 0.1 and "device (0% from memory)" in report


def test_the_label_comes_from_what_was_read_not_the_cache_at_t0(tmp_path):
    """Buffered random reads of a small file read each page many times: the first read of
    a page goes to the device, the rest to memory, though nothing was cached at T0 (issue
    17, item 2: 114k IOPS labelled "device (0% cached)"). `from_memory` is the share of the
    bytes read that no device read served (the slot's read_bytes, the kernel's own count of
    what it fetched from storage, against the bytes read); the flag reads it. O_DIRECT reads
    all come from the device."""
    from manybench.kernels.figures import FROM_MEMORY
    if in_memory(str(tmp_path)):
        pytest.skip("scratch on tmpfs: every read is memory's")
    ctx = ctx_for(tmp_path)
    # 64 MiB read: ~16 per page, drawn with replacement (with the map, the default, each
    # later pass is dropped first, as fio's: test_randio_map)
    params = {"size": 4 * MiB, "ops": 16384, "file": "r.dat", "randommap": False}
    buffered = run_kernel("io.randread", ctx, params)
    direct = run_kernel("io.randread", ctx, {**params, "ops": 2048, "direct": True})
    assert buffered.status == "ok" == direct.status, (buffered.error, direct.error)
    assert buffered.metrics["cached_fraction"] <= 0.1        # the premise: dropped at T0
    assert buffered.metrics["from_memory"] >= 0.8
    assert FROM_MEMORY.cell(buffered.metrics["from_memory"]).startswith("memory")
    assert direct.metrics["from_memory"] <= 0.1
    assert FROM_MEMORY.cell(direct.metrics["from_memory"]).startswith("device")
    seq = run_kernel("io.read", ctx, {"size": 4 * MiB, "block": MiB, "file": "s.dat"})
    assert seq.metrics["from_memory"] <= 0.1              # read once, cache dropped
    kept = run_kernel("io.read", ctx, {"size": 4 * MiB, "block": MiB, "file": "s.dat",
                                       "cache": "keep"})
    assert kept.metrics["from_memory"] >= 0.9
