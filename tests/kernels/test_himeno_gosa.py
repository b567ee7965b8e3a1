"""cpu.himeno's gosa is the Gosa himenoBMTxp prints for the same iterations: himenoBMTxp keeps
its 3 rehearsal iterations' changes to p, so its Gosa is after 3 + nn iterations from initmt
(benchmarks/peers/himeno_ref.c has its flow). Counts and residuals only, no timing."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sysconfig

import pytest

pytest.importorskip("manybench._native",
                    reason="C kernels not built (python setup.py build_ext --inplace)")
from manybench import _native  # noqa: E402
from manybench.build_isa import running_cflags  # noqa: E402
from manybench.kernels.himeno import GRIDS  # noqa: E402
from builders import ctx_for, run_kernel  # noqa: E402
from suite_paths import ROOT

PEER = os.path.join(ROOT, "benchmarks",
                    "peers", "himeno_ref.c")


def fresh_gosa(dims: tuple[int, int, int], nn: int) -> float:
    """The residual after nn iterations from initmt, nothing before them."""
    h = _native.himeno_new(*dims, 1)
    try:
        return _native.himeno_rehearse(h, nn)[1]
    finally:
        _native.himeno_release(h)


@pytest.mark.parametrize("iterations", [1, 4])
def test_gosa_counts_the_rehearsal_as_himenoBMTxp_does(tmp_path, iterations):
    r = run_kernel("cpu.himeno", ctx_for(tmp_path), {"grid": "XS", "iterations": iterations})
    assert r.status == "ok", r.error
    assert r.metrics["iterations"] == iterations == r.ops          # timed: its own count
    assert r.metrics["gosa"] == fresh_gosa(GRIDS["XS"], iterations + 3)
    assert r.metrics["gosa_first"] == fresh_gosa(GRIDS["XS"], 4)   # the first timed one
    assert r.metrics["gosa"] != fresh_gosa(GRIDS["XS"], iterations)


def test_calibrated_runs_keep_only_himenoBMTxps_rehearsal(tmp_path):
    # a calibration rehearses longer on a small grid and undoes that; the 3 stay
    r = run_kernel("cpu.himeno", ctx_for(tmp_path), {"grid": "XS", "iterations": 0, "seconds": 0.05})
    assert r.status == "ok", r.error
    assert r.metrics["gosa_first"] == fresh_gosa(GRIDS["XS"], 4)


def test_gosa_is_the_one_himenoBMTxp_prints(tmp_path):
    info = _native.build_info()
    cc = shlex.split(info["compiler"])
    if not cc or shutil.which(cc[0]) is None:
        pytest.skip("the extension's compiler is not here")
    exe = str(tmp_path / "himeno_ref")
    flags = [f for v in ("CFLAGS", "CCSHARED") for f in
             shlex.split(sysconfig.get_config_var(v) or "")]
    subprocess.run([*cc, *flags, *running_cflags(info), "-DXSMALL", "-o", exe, PEER, "-lm"],
                   check=True, capture_output=True)
    out = subprocess.run([exe, "0.01", "5"], check=True, capture_output=True, text=True).stdout
    printed = re.search(r"Gosa : (\S+)", out).group(1)
    r = run_kernel("cpu.himeno", ctx_for(tmp_path), {"grid": "XS", "iterations": 5})
    assert f"{r.metrics['gosa']:e}" == printed
