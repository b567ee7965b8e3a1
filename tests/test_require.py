"""MANYBENCH_REQUIRE turns a skip (something a test needs is missing) into a failure."""
from __future__ import annotations

import os

CONFTEST = os.path.join(os.path.dirname(__file__), "conftest.py")
SKIPPING = """
import pytest

def test_needs_slurm():
    pytest.skip("slurmctld not installed")

def test_needs_nothing():
    pass

@pytest.mark.xfail(reason="known")
def test_known_failure():
    assert False
"""


def _run(pytester, monkeypatch, require: str | None):
    pytester.makeconftest(open(CONFTEST).read())
    pytester.makepyfile(test_child=SKIPPING)
    if require is None:
        monkeypatch.delenv("MANYBENCH_REQUIRE", raising=False)
    else:
        monkeypatch.setenv("MANYBENCH_REQUIRE", require)
    return pytester.runpytest_subprocess("-rs", "-p", "no:cacheprovider")


def test_without_the_variable_a_skip_stays_a_skip(pytester, monkeypatch):
    res = _run(pytester, monkeypatch, None)
    res.assert_outcomes(passed=1, skipped=1, xfailed=1)


def test_require_all_fails_every_skip(pytester, monkeypatch):
    res = _run(pytester, monkeypatch, "all")
    res.assert_outcomes(passed=1, failed=1, xfailed=1)    # an expected failure stays one
    res.stdout.fnmatch_lines(["*MANYBENCH_REQUIRE=all: required but skipped: *slurmctld*"])


def test_require_a_list_fails_only_the_components_named(pytester, monkeypatch):
    _run(pytester, monkeypatch, "netns,faketime").assert_outcomes(passed=1, skipped=1,
                                                                   xfailed=1)
    _run(pytester, monkeypatch, "faketime, SLURM").assert_outcomes(passed=1, failed=1,
                                                                    xfailed=1)
