"""IOR's semantics in io.*: the stonewall with wear-out (-D, stoneWallingWearOut) and reads
of another rank's file (-C), end to end through the CLI."""
from __future__ import annotations


import pytest

pytest.importorskip("manybench._native",
                    reason="C kernels not built (python setup.py build_ext --inplace)")
from conftest import run_cli  # noqa: E402
from manybench.results.store import Store  # noqa: E402

pytestmark = pytest.mark.e2e

BLOCK = 64 * 1024


def _records(plan_file, tmp_path, text: str):
    out = str(tmp_path / "res")
    res = run_cli("run", plan_file(text), "-o", out, "-q")
    assert res.returncode == 0, res.stderr
    with Store(out, readonly=True) as st:
        return st.records()


def test_wear_out_every_slot_writes_what_the_fastest_had_at_the_stonewall(plan_file,
                                                                          tmp_path):
    recs = _records(plan_file, tmp_path, f"""
        scratch = "{{tmp}}"
        repeat = 3
        [placement]
        workers = 2
        [[task]]
        name = "w"
        kernel = "io.write"
        size = "8GiB"
        block = "{BLOCK}"
        duration = "0.2s"
        wear_out = true
    """)
    assert len(recs) == 6 and all(r.status == "ok" for r in recs), [r.error for r in recs]
    for phase in {r.phase for r in recs}:
        pair = [r for r in recs if r.phase == phase]
        m = [r.metrics for r in pair]
        target = m[0]["wear_out_blocks"]
        assert m[1]["wear_out_blocks"] == target
        assert target == max(x["stonewall_blocks"] for x in m)     # the fastest's count
        assert [r.bytes for r in pair] == [target * BLOCK] * 2       # each wrote as many
        for r, x in zip(pair, m):
            assert x["stonewall_bytes"] == x["stonewall_blocks"] * BLOCK <= r.bytes
            # the stonewall is one instant for all, T0 + duration: a slot that started late
            # (load) had that much less of it
            late_s = max(0, r.start_ns - r.t0_ns) / 1e9
            assert 0.2 - late_s - 1e-6 <= x["stonewall_s"] <= (r.end_ns - r.start_ns) / 1e9


def test_wear_out_needs_a_stonewall(plan_file, tmp_path):
    res = run_cli("run", plan_file("""
        [[task]]
        name = "w"
        kernel = "io.write"
        size = "1MiB"
        wear_out = true
    """), "-o", str(tmp_path / "res"))
    assert res.returncode == 2 and "task.w.wear_out: needs a stonewall" in res.stderr


def test_reorder_reads_the_next_ranks_file(plan_file, tmp_path):
    recs = _records(plan_file, tmp_path, """
        scratch = "{tmp}"
        [placement]
        workers = 3
        [[task]]
        name = "w"
        kernel = "io.write"
        size = "1MiB"
        [[task]]
        name = "r"
        kernel = "io.read"
        size = "1MiB"
        reorder = [false, true]
    """)
    writers = {r.extra["rank"]: r.extra["file"] for r in recs if r.task == "w"}
    plain = {r.extra["rank"]: r for r in recs if r.task == "r" and not r.params["reorder"]}
    moved = {r.extra["rank"]: r for r in recs if r.task == "r" and r.params["reorder"]}
    assert len(writers) == len(plain) == len(moved) == 3
    for rank in range(3):
        assert plain[rank].extra["file"] == writers[rank]
        # one node here: the next rank's file, as IOR -C reads it on one node
        assert moved[rank].extra["file"] == writers[(rank + 1) % 3]
        assert moved[rank].metrics["reorder_shift"] == 1 and moved[rank].bytes == 1 << 20
