"""A clock measured where cpufreq gives none (and the peaks computed from it) is a measurement:
two runs on one machine measure it apart under load, and `diff` must not call that a change
of the machine; a clock read from the machine still is one."""
from __future__ import annotations

from manybench.inventory import peaks
from manybench.inventory.cpu_peak import MEASURED_CLOCK
from manybench.results.diff import compare


def _inventory(ghz: float, source: str) -> dict:
    cpu = {"base_mhz": ghz * 1e3, "base_source": source, "max_mhz": ghz * 1e3,
           "max_source": source}
    detected = {"cores": 2, "base_ghz": ghz, "max_ghz": ghz, "dp_flops_per_cycle": 16}
    p = peaks.derive(detected, measured=peaks.measured_inputs(cpu))
    return {"hostname": "n1", "cpu": cpu, "peaks": p.as_dict()}


def test_a_measured_clock_and_its_peaks_say_so():
    inv = _inventory(3.7, MEASURED_CLOCK)
    assert inv["peaks"]["basis"]["base_ghz"] == peaks.MEASURED
    assert "3.7 GHz (measured)" in inv["peaks"]["basis"]["dp_gflops"]
    # a stored run's peaks, derived again for its report, keep saying it
    again = peaks.for_run(inv)
    assert again.basis["max_ghz"] == peaks.MEASURED and "(measured)" in again.basis["dp_gflops_max"]
    # a clock that was read is "detected", and a plan's [peaks] wins over a measured one
    assert _inventory(3.7, "cpufreq base_frequency")["peaks"]["basis"]["base_ghz"] == "detected"
    given = peaks.for_run(inv, {"base_ghz": 3.0})
    assert given.basis["base_ghz"] == "[peaks]" and "(measured)" not in given.basis["dp_gflops"]


def test_diff_leaves_out_a_measured_clock_that_moved():
    sec, noise = compare("node n1", _inventory(3.7, MEASURED_CLOCK),
                         _inventory(3.6, MEASURED_CLOCK), show_all=False)
    assert not sec.changed and not sec.only_a and not sec.only_b
    assert noise >= 8        # base/max mhz, peaks' values, detected and the flops' basis
    # --all shows them
    sec, _ = compare("node n1", _inventory(3.7, MEASURED_CLOCK),
                     _inventory(3.6, MEASURED_CLOCK), show_all=True)
    assert ("cpu.base_mhz", 3700.0, 3600.0) in sec.changed


def test_diff_shows_a_read_clock_that_changed():
    sec, _ = compare("node n1", _inventory(3.7, "cpufreq base_frequency"),
                     _inventory(3.6, "cpufreq base_frequency"), show_all=False)
    keys = {k for k, _, _ in sec.changed}
    assert {"cpu.base_mhz", "peaks.values.base_ghz", "peaks.values.dp_gflops"} <= keys
