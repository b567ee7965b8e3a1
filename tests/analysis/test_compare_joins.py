"""`manybench compare` says what it could not pair (issue 29, item 7): it dropped points
silently ("not compared: 3 points of A that B does not have"), naming neither the points nor
the parameter that differs."""
from __future__ import annotations

from click.testing import CliRunner

from manybench.cli import main
from joined_runs import MiB, S, T, io_run

RATES = [800 * MiB, 810 * MiB, 790 * MiB]


def _compare(monkeypatch, *args: str):
    monkeypatch.setenv("COLUMNS", "200")
    return CliRunner().invoke(main, ["compare", *args])


def test_the_points_it_could_not_pair_are_named_with_the_parameter(tmp_path, monkeypatch):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    io_run(a, "ra", [(1, {}, RATES), (2, {}, RATES)])
    io_run(b, "rb", [(1, {}, RATES), (2, {"fsync": "never"}, RATES)], started_ns=T + 3600 * S)
    out = _compare(monkeypatch, a, b)
    assert out.exit_code == 0, out.output + out.stderr
    text = " ".join(out.output.split())
    # each side's point left out, named, and what differs between them
    assert "write workers=2 fsync=end" in text, out.output
    assert "write workers=2 fsync=never" in text, out.output
    assert "only fsync differs (end in A, never in B)" in text, out.output
    assert "--ignore fsync" in text, out.output
    # the pairing offered: with fsync left out, both points are compared
    paired = _compare(monkeypatch, a, b, "--ignore", "fsync")
    assert paired.exit_code == 0, paired.output + paired.stderr
    rows = [ln for ln in paired.output.splitlines() if "3+3 welch" in ln]
    assert len(rows) == 2, paired.output
    assert "not compared" not in paired.output


def test_runs_with_no_point_in_common_name_the_parameter(tmp_path, monkeypatch):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    io_run(a, "ra", [(1, {}, RATES), (2, {}, RATES)])
    io_run(b, "rb", [(1, {"fsync": "never"}, RATES), (2, {"fsync": "never"}, RATES)],
           started_ns=T + 3600 * S)
    out = _compare(monkeypatch, a, b)
    assert out.exit_code == 2, out.output
    assert "no point in common" in out.stderr and "Traceback" not in out.stderr
    assert "fsync (end in A, never in B)" in out.stderr and "--ignore fsync" in out.stderr, \
        out.stderr
    assert _compare(monkeypatch, a, b, "--ignore", "fsync").exit_code == 0
