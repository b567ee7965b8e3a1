"""cpu.dgemm: products checked against a naive one, the BLAS search, threads, the CLI."""
from __future__ import annotations

import array
import os
import random

import pytest

pytest.importorskip("manybench._native",
                    reason="C kernels not built (python setup.py build_ext --inplace)")
from conftest import export_json, run_cli  # noqa: E402
from manybench import _native  # noqa: E402
from manybench.kernels import KERNELS, Result, SlotContext  # noqa: E402
from manybench.kernels import dgemm  # noqa: E402
from manybench.kernels.base import KernelError  # noqa: E402

K = KERNELS["cpu.dgemm"]
CTX = SlotContext(run="r", node="n", slot=0, rank=0, workers=1, cpu=-1, scratch="", shared="")


def _blas_or_skip() -> dict:
    try:
        return dgemm.load(_native, None, 1)
    except KernelError as e:
        pytest.skip(f"no CBLAS on this machine: {e}")


@pytest.fixture(scope="module")
def blas() -> dict:
    return _blas_or_skip()


def _matrices(state) -> list[array.array]:
    out = []
    for which in range(3):
        m = array.array("d")
        m.frombytes(_native.dgemm_matrix(state.handle, which))
        out.append(m)
    return out


def _run(state) -> Result:
    r = K.run(state, _native.now_ns() + 1_000_000, 0)
    assert r.status == "ok", r.error
    return r


def _check_product(params: dict, samples: int = 40) -> Result:
    """C after `repeat` calls == alpha*A*B*(1 + beta + ... + beta^(repeat-1)) + beta^repeat*C0,
    checked on sampled entries against a product computed here."""
    state = K.prepare(CTX, params)
    try:
        n, repeat, alpha, beta = state.n, state.repeat, state.alpha, state.beta
        a, b, c0 = _matrices(state)
        r = _run(state)
        c = _matrices(state)[2]
    finally:
        K.cleanup(state)
    geo = sum(beta ** k for k in range(repeat))
    rng = random.Random(7)
    cells = [(0, 0), (n - 1, n - 1), (0, n - 1), (n - 1, 0)] + \
        [(rng.randrange(n), rng.randrange(n)) for _ in range(samples)]
    for i, j in cells:
        ab = sum(a[i * n + k] * b[k * n + j] for k in range(n))
        want = alpha * ab * geo + beta ** repeat * c0[i * n + j]
        assert c[i * n + j] == pytest.approx(want, rel=1e-9, abs=1e-9), (i, j)
    assert r.ops == repeat
    return r


def test_product_is_right_and_metrics_are_consistent(blas):
    r = _check_product({"n": 37, "repeat": 3, "alpha": 1.5, "beta": 0.5, "seed": 3})
    assert r.bytes == 0
    assert r.metrics["gflops"] > 0
    assert r.metrics["gflops"] == pytest.approx(2 * 37 ** 3 * 3 / r.elapsed_ns)
    assert sum(r.hist.values()) == 3                      # one latency per call
    assert 0 < r.metrics["lat_p50_us"] <= r.metrics["lat_max_us"]
    assert os.path.exists(r.extra["blas"]) and r.extra["blas_symbol"]


def test_default_beta_zero_overwrites_c(blas):
    r = _check_product({"n": 20, "repeat": 2})
    assert r.status == "ok"


def test_repeat_zero_calibrates_to_seconds(blas):
    state = K.prepare(CTX, {"n": 16, "seconds": 0.02})
    try:
        assert state.repeat >= 1
        r = _run(state)
    finally:
        K.cleanup(state)
    assert r.ops == state.repeat and r.metrics["gflops"] > 0


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cpus")
def test_two_threads(blas):
    r = _check_product({"n": 96, "repeat": 1, "threads": 2, "beta": 1.0}, samples=10)
    assert r.metrics["gflops"] > 0


def test_more_threads_than_cpus_is_a_clear_error(blas):
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(saved)})
    try:
        with pytest.raises(KernelError) as ei:
            K.prepare(CTX, {"n": 16, "threads": 2})
    finally:
        os.sched_setaffinity(0, saved)
    msg = str(ei.value)
    assert "threads = 2" in msg and 'pin = "numa"' in msg and "\n" not in msg


def test_missing_blas_path_is_a_clear_error():
    with pytest.raises(KernelError) as ei:
        K.prepare(CTX, {"n": 16, "blas": "/nonexistent/libnoblas.so"})
    msg = str(ei.value)
    assert msg.startswith("cpu.dgemm: cannot use blas = '/nonexistent/libnoblas.so'")
    assert "No such file" in msg and "\n" not in msg


def test_library_without_dgemm_is_a_clear_error():
    with pytest.raises(KernelError, match="has no cblas_dgemm.*not a CBLAS library"):
        K.prepare(CTX, {"n": 16, "blas": "libc.so.6"})


@pytest.mark.skipif(not dgemm.numpy_blas(), reason="numpy with a bundled OpenBLAS not installed")
def test_numpy_bundled_openblas_ilp64():
    path = dgemm.numpy_blas()[0]
    info = dgemm.load(_native, path, 1)
    assert info["symbol"] in ("scipy_cblas_dgemm64_", "cblas_dgemm64_", "scipy_cblas_dgemm",
                              "cblas_dgemm")
    r = _check_product({"n": 33, "repeat": 2, "alpha": -0.5, "beta": 2.0, "blas": path},
                       samples=10)
    assert r.extra["blas"] == os.path.realpath(path)


@pytest.mark.e2e
def test_cli_run_export_and_kernel_doc(blas, plan_file, tmp_path):
    plan = plan_file("""
        name = "dg"
        [placement]
        workers = [1, 2]
        [[task]]
        name = "mm"
        kernel = "cpu.dgemm"
        n = [16, 24]
        repeat = 3
    """)
    out_dir = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out_dir, "-q")
    assert res.returncode == 0, res.stderr + res.stdout
    rows = export_json(out_dir)
    assert len(rows) == 2 * (1 + 2)
    for row in rows:
        assert row["kernel"] == "cpu.dgemm" and row["status"] == "ok", row["error"]
        assert row["ops"] == 3 and row["metrics"]["gflops"] > 0
        assert row["params"]["n"] in (16, 24) and row["params"]["threads"] == 1
    doc = run_cli("kernels", "cpu.dgemm")
    assert doc.returncode == 0
    for name in ("n", "repeat", "seconds", "threads", "blas", "alpha", "beta", "gflops"):
        assert name in doc.stdout


@pytest.mark.e2e
def test_plan_with_too_small_n_is_refused(plan_file, tmp_path):
    plan = plan_file("""
        [[task]]
        name = "mm"
        kernel = "cpu.dgemm"
        n = 8
    """)
    res = run_cli("run", plan, "-o", str(tmp_path / "res"))
    assert res.returncode == 2
    assert "task.mm.n" in res.stderr + res.stdout


def _system_openblas_or_skip() -> dict:
    try:
        return _native.blas_load("libopenblas.so.0")
    except OSError as e:
        pytest.skip(f"needs the system OpenBLAS (Debian: libopenblas0): {e.strerror or e}")


def test_the_record_names_the_library_its_version_core_and_threads(blas):
    state = K.prepare(CTX, {"n": 64, "repeat": 2})
    try:
        r = _run(state)
    finally:
        K.cleanup(state)
    x = r.extra
    assert os.path.exists(x["blas"]) and x["blas_config"]
    if "OpenBLAS" in x["blas_config"]:     # OpenBLAS says its version, core and threads
        assert x["blas_version"] and x["blas_version"] in x["blas_config"]
        assert x["blas_core"] and x["blas_core"].lower() in x["blas_config"].lower()
        assert x["blas_threads_used"] == 1


ZEN4 = ("vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n"
        "flags\t\t: fpu sse sse2 avx fma avx2 avx512f\n")
OLD = "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 15\nflags\t\t: fpu sse sse2 sse3\n"


def test_a_core_narrower_than_the_processors_pipes_is_a_mismatch():
    from manybench.inventory.cpu_peak import parse_cpuinfo
    from manybench.kernels.blas import core_mismatch
    zen4, old = parse_cpuinfo(ZEN4), parse_cpuinfo(OLD)
    text = core_mismatch("Prescott", "OpenBLAS 0.3.21 DYNAMIC_ARCH Prescott", zen4)
    assert text.startswith("cpu.dgemm: OpenBLAS 0.3.21 runs its Prescott kernels (128-bit")
    assert "Zen 4" in text and "blas = \"best\"" in text
    assert core_mismatch("Sandybridge", "", zen4) is not None      # no FMA on an FMA cpu
    for fits in ("Haswell", "Zen", "SkylakeX", "Cooperlake"):       # 256-bit pipes are fed
        assert core_mismatch(fits, "", zen4) is None
    assert core_mismatch("Prescott", "", old) is None               # nothing wider to use
    assert core_mismatch("NEOVERSEN1", "", zen4) is None            # not judged here


@pytest.mark.e2e
def test_a_forced_old_core_gives_the_library_warning(plan_file, tmp_path):
    """OPENBLAS_CORETYPE=Prescott makes the system OpenBLAS run its SSE3 kernels: the
    constructed mismatch of a library that does not know the processor."""
    from manybench.inventory.cpu_peak import core_flops, parse_cpuinfo
    _system_openblas_or_skip()
    with open("/proc/cpuinfo") as f:
        cpu = parse_cpuinfo(f.read())
    if cpu["arch"] != "x86" or core_flops(cpu).width_bits <= 128:
        pytest.skip("this cpu is no wider than Prescott's kernels: nothing to mismatch")
    out = str(tmp_path / "res")
    res = run_cli("run", plan_file("""
        noise = 0
        [[task]]
        name = "mm"
        kernel = "cpu.dgemm"
        n = 64
        repeat = 2
        blas = "libopenblas.so.0"
    """), "-o", out, env={**os.environ, "OPENBLAS_CORETYPE": "Prescott"})
    assert res.returncode == 0, res.stderr
    from manybench.results.store import Store
    with Store(out, readonly=True) as st:
        run = st.runs()[-1]
        [rec] = st.records(run.run_id)
        ws = [w for w in st.warnings(run.run_id) if w.kind == "library"]
    assert rec.extra["blas_core"] == "Prescott"
    assert len(ws) == 1 and "Prescott kernels" in ws[0].message and ws[0].task == "mm"
    assert "Prescott kernels" in res.stdout      # the report shows it


def test_blas_best_times_every_candidate_and_keeps_the_fastest(blas):
    state = K.prepare(CTX, {"n": 96, "repeat": 2, "blas": "best"})
    try:
        r = _run(state)
    finally:
        K.cleanup(state)
    trials = r.extra["blas_trials"]
    ok = [t for t in trials if "gflops" in t]
    assert ok and all(t["gflops"] > 0 for t in ok)
    rate = {(t["blas"], t["env"]): t.get("cpu_gflops", t["gflops"]) for t in
            sorted(ok, key=lambda t: t.get("cpu_gflops", t["gflops"]))}     # each one's best
    ran = (r.extra["blas"], r.extra["blas_env"] or "auto")
    [core] = {t["core"] for t in ok if (t["blas"], t["env"]) == ran}
    # the fastest, with its trial's core, unless this test process loaded it before under
    # another core (tests share a process in the sanitized pass): then the warning says so
    # and names the core the library runs here, which the record keeps
    stale = [w for k, w in r.extra.get("warnings", []) if "cannot run in this slot" in w]
    assert r.extra["blas_core"] == core or \
        any(f"({r.extra['blas_core']} kernels" in w for w in stale), (core, stale)
    assert rate[ran] == max(rate.values()) or stale
    # every library that loads was tried as it loads on its own: the system's and numpy's
    files = {_native.blas_load(p)["file"] for p in dgemm.candidates(None)
             if _loads(p)}
    assert {t["blas"] for t in trials if t["env"] == "auto"} == files


def _loads(path: str) -> bool:
    try:
        _native.blas_load(path)
        return True
    except OSError:
        return False
