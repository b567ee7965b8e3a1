"""mem.stream and cpu.himeno: behaviour through the kernel contract and the command line.

Sizes are tiny (the machine running the tests may have 2 cores); no timing is asserted as
an absolute number.
"""
from __future__ import annotations

import math
import os

import pytest

pytest.importorskip("manybench._native",
                    reason="C kernels not built (python setup.py build_ext --inplace)")
from conftest import export_json, run_cli  # noqa: E402
from manybench import _native  # noqa: E402
from manybench.kernels import KERNELS, Result, SlotContext  # noqa: E402
from manybench.kernels import himeno, stream  # noqa: E402
from manybench.kernels.base import KernelError  # noqa: E402

NAMES = ("copy", "scale", "add", "triad")
CPUS = sorted(os.sched_getaffinity(0))


def ctx_for(tmp_path) -> SlotContext:
    return SlotContext(run="r1", node="n1", slot=0, rank=0, workers=1, cpu=-1,
                       scratch=str(tmp_path / "r1" / "0"), shared=str(tmp_path / "r1" / "shared"))


def run_kernel(name: str, tmp_path, params: dict) -> Result:
    k = KERNELS[name]
    state = k.prepare(ctx_for(tmp_path), params)
    try:
        t0 = _native.now_ns() + 2_000_000
        r = k.run(state, t0, 0)
        assert r.start_ns >= t0 and r.end_ns >= r.start_ns and r.elapsed_ns > 0
        return r
    finally:
        k.cleanup(state)


@pytest.fixture
def one_cpu():
    """This process pinned to one cpu, as a slot with pin = "core"; restored afterwards."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {CPUS[0]})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


two_cpus = pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 cpus")


# ---- mem.stream ------------------------------------------------------------------------------

@pytest.mark.parametrize("threads", [1, pytest.param(2, marks=two_cpus)])
def test_stream_metrics_bytes_ops_and_validation(tmp_path, threads):
    n, ntimes = 20_000, 4
    r = run_kernel("mem.stream", tmp_path, {"elements": n, "ntimes": ntimes,
                                           "threads": threads})
    assert r.status == "ok", r.error
    assert r.ops == 4 * ntimes
    assert r.bytes == ntimes * (2 + 2 + 3 + 3) * 8 * n
    m = r.metrics
    for name in NAMES:
        assert m[f"{name}_mb_s"] > 0
        assert 0 < m[f"{name}_min_s"] <= m[f"{name}_avg_s"] <= m[f"{name}_max_s"]
    # the figures cover iterations 2..ntimes of the timed window only
    counted = sum(m[f"{name}_avg_s"] for name in NAMES) * (ntimes - 1)
    assert counted <= r.elapsed_ns / 1e9


def test_stream_defaults_fill_in(tmp_path):
    k = KERNELS["mem.stream"]
    assert k.params["elements"].default is None   # STREAM's rule (test_stream_sizing)
    assert k.params["threads"].default == 1 and k.params["ntimes"].default == 10
    st = k.prepare(ctx_for(tmp_path), {"elements": 1000})
    try:
        assert (st.threads, st.ntimes) == (1, 10)
    finally:
        k.cleanup(st)


def test_stream_figures_follow_stream():
    # 4 kernels x 3 iterations: the first iteration is left out, MB = 1e6 bytes
    times = [[9e9, 2e9, 1e9], [9e9, 1e9, 1e9], [9e9, 3e9, 3e9], [1, 4e9, 2e9]]
    f = stream.figures(times, 1_000_000)
    assert f["copy_mb_s"] == pytest.approx(16e6 / 1e6 / 1.0)
    assert f["copy_avg_s"] == pytest.approx(1.5) and f["copy_max_s"] == pytest.approx(2.0)
    assert f["add_mb_s"] == pytest.approx(24.0 / 3.0)
    assert f["triad_min_s"] == pytest.approx(2.0) and f["triad_mb_s"] == pytest.approx(12.0)


def test_stream_average_of_equal_times_is_that_time():
    # 3 x 2794 ns summed in seconds and divided came out below the minimum (a flaky check)
    f = stream.figures([[1, 2794, 2794, 2794]] * 4, 1000)
    assert f["copy_min_s"] == f["copy_avg_s"] == f["copy_max_s"] == 2794 / 1e9


def test_stream_second_run_on_the_same_arrays_still_validates():
    h = _native.stream_new(5000, 1)
    try:
        for _ in range(2):
            d = _native.stream_run(h, 3, _native.now_ns(), 0)
            assert d["errno"] == 0, d["error"]
            assert [len(t) for t in d["times_ns"]] == [3, 3, 3, 3]
    finally:
        _native.stream_release(h)
    with pytest.raises(ValueError):
        _native.stream_run(object(), 3, 0, 0)


@pytest.mark.parametrize("elements", [20_000_000 // 1000, 5001])
def test_stream_arrays_lie_as_stream_c_static_arrays_do(elements):
    """stream.c's a, b, c are static arrays back to back: each starts one array (rounded up to
    the 64 bytes the compiler aligns them to) after the other, so their offsets within a page
    follow from the element count (20,000,000: b half a page off a and c), where three
    separate allocations all start at one page offset: not the reference's layout."""
    h = _native.stream_new(elements, 1)
    try:
        a, b, c = _native.stream_layout(h)
    finally:
        _native.stream_release(h)
    stride = -(-elements * 8 // 64) * 64
    assert a % 64 == 0 and b - a == stride and c - b == stride


def test_stream_wrong_results_fail_validation():
    # past ~261 iterations STREAM's values overflow a double: its check must catch that
    h = _native.stream_new(2000, 1)
    try:
        d = _native.stream_run(h, 300, _native.now_ns(), 0)
    finally:
        _native.stream_release(h)
    assert d["errno"] != 0
    assert "failed validation on array" in d["error"]


def test_stream_threads_over_affinity_is_a_clear_error(tmp_path, one_cpu):
    with pytest.raises(KernelError) as e:
        KERNELS["mem.stream"].prepare(ctx_for(tmp_path), {"elements": 1000, "threads": 2})
    msg = str(e.value)
    assert "threads = 2" in msg and "1 cpu" in msg
    assert 'pin = "numa"' in msg and 'pin = "none"' in msg


def test_stream_too_many_ntimes_is_refused(tmp_path):
    assert KERNELS["mem.stream"].check({"ntimes": stream.MAX_NTIMES}) == []
    assert KERNELS["mem.stream"].check({"ntimes": 300})[0][0] == "ntimes"
    with pytest.raises(KernelError, match="ntimes"):
        KERNELS["mem.stream"].prepare(ctx_for(tmp_path), {"elements": 1000, "ntimes": 300})


def test_more_memory_than_the_node_has_is_refused_before_allocating(tmp_path):
    if stream.mem_available() is None:
        pytest.skip("no MemAvailable in /proc/meminfo")
    with pytest.raises(KernelError, match="available on this node; use fewer elements"):
        KERNELS["mem.stream"].prepare(ctx_for(tmp_path), {"elements": 2 ** 40})
    with pytest.raises(KernelError, match="available on this node; use a smaller grid"):
        KERNELS["cpu.himeno"].prepare(ctx_for(tmp_path), {"grid": "custom",
                                                          "dims": "3000x3000x3000"})


# ---- cpu.himeno ------------------------------------------------------------------------------

def test_himeno_metrics_and_mflops_formula(tmp_path):
    r = run_kernel("cpu.himeno", tmp_path, {"grid": "XS", "iterations": 3})
    assert r.status == "ok", r.error
    m = r.metrics
    assert m["iterations"] == 3 and r.ops == 3
    assert m["mflops"] > 0 and math.isfinite(m["gosa"]) and m["gosa"] > 0
    assert m["gosa"] < m["gosa_first"]
    # himenoBMTxp: fflop(imax, jmax, kmax) * nn / cpu * 1e-6 with imax = MIMAX - 1 ...
    flop = (64 - 2) * (32 - 2) * (32 - 2) * 34
    assert m["mflops"] == pytest.approx(flop * 3 / (r.elapsed_ns / 1e9) * 1e-6)


def test_himeno_gosa_decreases_with_more_iterations(tmp_path):
    gosa = []
    for n in (1, 2, 8):
        r = run_kernel("cpu.himeno", tmp_path, {"grid": "custom", "dims": "17x17x33",
                                               "iterations": n})
        assert r.status == "ok", r.error
        gosa.append(r.metrics["gosa"])
        assert r.metrics["gosa_first"] == pytest.approx(gosa[0])   # same start every time
    assert gosa[0] > gosa[1] > gosa[2] > 0


def test_himeno_rehearsal_is_undone_and_matches_a_fresh_run():
    h = _native.himeno_new(9, 9, 17, 1)
    try:
        _, g3 = _native.himeno_rehearse(h, 3)
        d = _native.himeno_run(h, 3, _native.now_ns(), 0)
        assert d["errno"] == 0 and d["gosa"] == pytest.approx(g3, rel=0, abs=0)
    finally:
        _native.himeno_release(h)
    with pytest.raises(ValueError, match="released"):
        _native.himeno_run(h, 1, 0, 0)


def test_himeno_calibrates_iterations_before_t0(tmp_path):
    r = run_kernel("cpu.himeno", tmp_path, {"grid": "XS", "iterations": 0, "seconds": 0.05})
    assert r.status == "ok", r.error
    assert r.metrics["iterations"] >= 1 and r.ops == r.metrics["iterations"]


def test_himeno_custom_dims_parsed_and_validated(tmp_path):
    assert himeno.parse_dims("12x10X20") == (12, 10, 20)
    assert himeno.grid_dims({"grid": "custom", "dims": " 9 x 9 x 9 "}) == (9, 9, 9)
    assert himeno.grid_dims({"grid": "M"}) == (129, 129, 257)
    r = run_kernel("cpu.himeno", tmp_path, {"grid": "custom", "dims": "12x10x20",
                                           "iterations": 2})
    assert r.status == "ok", r.error
    flop = (19 - 2) * (9 - 2) * (11 - 2) * 34
    assert r.metrics["mflops"] == pytest.approx(flop * 2 / (r.elapsed_ns / 1e9) * 1e-6)
    k = KERNELS["cpu.himeno"]
    for params, words in [({"grid": "custom", "dims": "10x10"}, "IxJxK"),
                          ({"grid": "custom", "dims": "3x10x10"}, "at least 4"),
                          ({"grid": "custom", "dims": "ax10x10"}, "IxJxK"),
                          ({"grid": "custom"}, "needs dims"),
                          ({"grid": "S", "dims": "9x9x9"}, "only for grid")]:
        with pytest.raises(KernelError, match=words):
            k.prepare(ctx_for(tmp_path), params)
        assert [f for f, _ in k.check({"iterations": 1, **params})] == ["dims"]


def test_himeno_threads_over_affinity_is_a_clear_error(tmp_path, one_cpu):
    with pytest.raises(KernelError, match='pin = "numa"'):
        KERNELS["cpu.himeno"].prepare(ctx_for(tmp_path), {"grid": "XS", "threads": 2,
                                                          "iterations": 1})


@two_cpus
def test_himeno_two_threads_compute_the_same(tmp_path):
    params = {"grid": "custom", "dims": "17x17x33", "iterations": 4}
    one = run_kernel("cpu.himeno", tmp_path, {**params, "threads": 1})
    two = run_kernel("cpu.himeno", tmp_path, {**params, "threads": 2})
    assert one.status == two.status == "ok", (one.error, two.error)
    # the same sums, only added in another order
    assert two.metrics["gosa"] == pytest.approx(one.metrics["gosa"], rel=1e-4)
    assert two.metrics["gosa_first"] == pytest.approx(one.metrics["gosa_first"], rel=1e-4)


# ---- through the command line ----------------------------------------------------------------

@pytest.mark.e2e
def test_both_kernels_end_to_end(plan_file, tmp_path):
    plan = plan_file("""
        name = "sh"
        [placement]
        workers = [1, 2]
        [[task]]
        name = "st"
        kernel = "mem.stream"
        elements = 5000
        ntimes = 3
        [[task]]
        name = "hi"
        kernel = "cpu.himeno"
        grid = "custom"
        dims = "9x9x17"
        iterations = [1, 4]
    """)
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "-q")
    assert res.returncode == 0, res.stderr + res.stdout
    rows = export_json(out)
    assert len(rows) == 3 + 3 * 2      # (1 + 2 workers) per point
    for r in rows:
        assert r["status"] == "ok", r["error"]
        assert r["start_ns"] >= r["t0_ns"]
        if r["task"] == "st":
            assert r["kernel"] == "mem.stream"
            assert r["params"]["elements"] == 5000 and r["params"]["threads"] == 1
            assert r["ops"] == 12 and r["bytes"] == 3 * 80 * 5000
            assert all(r["metrics"][f"{n}_mb_s"] > 0 for n in NAMES)
            assert r["extra"]["stream_sizing"] == ("5,000 elements = 0.0 MB per array: "
                                                   "elements given")
        else:
            assert r["kernel"] == "cpu.himeno"
            assert r["ops"] == r["metrics"]["iterations"] == r["params"]["iterations"]
            assert r["metrics"]["mflops"] > 0 and r["metrics"]["gosa"] > 0
    gosa = {r["params"]["iterations"]: r["metrics"]["gosa"] for r in rows if r["task"] == "hi"}
    assert gosa[4] < gosa[1]
    # the report says the arrays' size and why, under the task's table (a declared fact)
    report = run_cli("report", out)
    assert report.returncode == 0, report.stderr
    assert "5,000 elements = 0.0 MB per array: elements given" in report.stdout


@pytest.mark.e2e
def test_plan_validation_names_the_fields(plan_file):
    plan = plan_file("""
        [[task]]
        name = "hc"
        kernel = "cpu.himeno"
        grid = "custom"
        dims = "3x20x40"
        [[task]]
        name = "h2"
        kernel = "cpu.himeno"
        grid = "custom"
        [[task]]
        name = "s"
        kernel = "mem.stream"
        ntimes = 1
    """)
    res = run_cli("run", plan, "--dry-run")
    assert res.returncode == 2
    err = res.stderr + res.stdout
    assert "hc.dims" in err and "at least 4" in err
    assert "h2.dims" in err and "needs dims" in err
    assert "s.ntimes" in err
    assert "Traceback" not in err


@pytest.mark.e2e
@pytest.mark.parametrize("name,params", [("mem.stream", ("elements", "threads", "ntimes")),
                                         ("cpu.himeno", ("grid", "dims", "iterations",
                                                         "seconds", "threads"))])
def test_kernels_command_documents_params(name, params):
    res = run_cli("kernels", name)
    assert res.returncode == 0, res.stderr
    for p in params:
        assert f"  {p} " in res.stdout
    assert 'pin = "numa"' in res.stdout
