"""MANYBENCH_REQUIRE turns a skip (something a test needs is missing) into a failure."""
from __future__ import annotations

import pytest

from suite_paths import TESTS

CONFTEST = str(TESTS / "conftest.py")
FASTPASS = str(TESTS / "fastpass.py")    # conftest.py imports it
SKIPPING = """
import pytest

def test_needs_slurm():
    pytest.skip("slurmctld not installed")

@pytest.mark.skipif(True, reason="no ip netns here")
def test_needs_netns():
    pass

def test_needs_nothing():
    pass

@pytest.mark.xfail(reason="known")
def test_known_failure():
    assert False
"""
# a whole module skipped while it is collected, as the native-kernel modules do
UNBUILT = """
import pytest
pytest.importorskip("manybench_no_such_module", reason="C kernels not built")

def test_never_collected():
    pass
"""


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
         require: str | None) -> pytest.RunResult:
    with open(CONFTEST) as f:
        pytester.makeconftest(f.read())
    with open(FASTPASS) as f:
        pytester.makepyfile(fastpass=f.read())
    pytester.makepyfile(test_child=SKIPPING, test_unbuilt=UNBUILT)
    if require is None:
        monkeypatch.delenv("MANYBENCH_REQUIRE", raising=False)
    else:
        monkeypatch.setenv("MANYBENCH_REQUIRE", require)
    # a child process: the hook reads the variable when conftest.py is imported
    return pytester.runpytest_subprocess("-rs", "-p", "no:cacheprovider")


def test_without_the_variable_a_skip_stays_a_skip(pytester, monkeypatch):
    res = _run(pytester, monkeypatch, None)
    res.assert_outcomes(passed=1, skipped=3, xfailed=1)
    assert res.ret == 0


def test_require_all_fails_every_skip(pytester, monkeypatch):
    res = _run(pytester, monkeypatch, "all")
    # an expected failure stays one; the skipped module fails in one item, and the run
    # goes on past it
    res.assert_outcomes(passed=1, failed=3, xfailed=1)
    assert res.ret == 1
    res.stdout.fnmatch_lines_random([
        "*MANYBENCH_REQUIRE=all: required but skipped: slurmctld not installed*",
        "*MANYBENCH_REQUIRE=all: required but skipped: no ip netns here*",
        "*MANYBENCH_REQUIRE=all: required but skipped: C kernels not built*",
    ])


def test_require_a_list_fails_only_the_components_named(pytester, monkeypatch):
    res = _run(pytester, monkeypatch, "faketime, SLURM")        # case and spaces do not matter
    res.assert_outcomes(passed=1, failed=1, skipped=2, xfailed=1)
    res.stdout.fnmatch_lines(["*required but skipped: slurmctld not installed*"])
    res = _run(pytester, monkeypatch, "netns,c kernels")
    res.assert_outcomes(passed=1, failed=2, skipped=1, xfailed=1)
    _run(pytester, monkeypatch, "fio").assert_outcomes(passed=1, skipped=3, xfailed=1)
