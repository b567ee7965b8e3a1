"""`manybench history` joins runs point by point (issue 29, item 6): it averaged the best point
of each run whatever its parameters (fsync=end with fsync=never: "mean 4522.3 MiB/s max 11.04
GiB/s", the max the page cache's) and wrote MiB/s and GiB/s in one column."""
from __future__ import annotations

import json
import re

from click.testing import CliRunner

from manybench.cli import main
from joined_runs import GiB, MiB, S, T, io_run

END, NEVER = 800 * MiB, 11 * GiB          # the device's rate, the page cache's


def _history(monkeypatch, *args: str) -> str:
    monkeypatch.setenv("COLUMNS", "200")
    out = CliRunner().invoke(main, ["history", *args])
    assert out.exit_code == 0, out.output
    return out.output


def _rows(text: str, first: str) -> list[list[str]]:
    """The rows of the tables whose first cell is `first`."""
    rows = [[c.strip() for c in ln.strip().strip("│").split("│")]
            for ln in text.splitlines() if ln.startswith("│")]
    return [r for r in rows if r[0] == first]


def test_runs_with_different_parameters_are_not_averaged(tmp_path, monkeypatch):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    io_run(a, "end", [(2, {"fsync": "end"}, [END] * 3)])
    io_run(b, "never", [(2, {"fsync": "never"}, [NEVER] * 3)], started_ns=T + 3600 * S)
    text = _history(monkeypatch, a, b)
    rows = _rows(text, "2")               # the rows of workers 2
    assert len(rows) == 2, text           # one a point: fsync=end and fsync=never
    assert {r[1] for r in rows} == {"end", "never"}, text
    data = json.loads(_history(monkeypatch, a, b, "--json"))
    points = {p["params"]["fsync"]: p for p in data["points"]}
    assert set(points) == {"end", "never"}
    for fsync, rate in (("end", END), ("never", NEVER)):
        p = points[fsync]
        assert [r["value"]["median"] for r in p["runs"]] == [rate]
        assert p["figure"] == "bandwidth" and p["scope"] == "aggregate" and p["unit"] == "B/s"
        assert p["mean"] == p["max"] == rate
    # what it joined is said: the same point is the same task, parameters, workers, ...
    assert "joined" in text and "every parameter" in text and "hosts" in text


def test_the_same_point_over_runs_is_joined_and_a_column_has_one_unit(tmp_path, monkeypatch):
    d = str(tmp_path / "d")
    # the same point at 800 MiB/s, then 11 GiB/s: its mean is 5.9 GiB/s, its min 800 MiB/s
    io_run(d, "r1", [(1, {}, [END] * 3), (2, {}, [2 * END] * 3)])
    io_run(d, "r2", [(1, {}, [NEVER] * 3), (2, {}, [2 * END] * 3)], started_ns=T + 3600 * S)
    text = _history(monkeypatch, d)
    assert not re.search(r"\d (MiB|GiB|KiB)/s", text), text    # units in headers only
    header = next(ln for ln in text.splitlines() if "latest" in ln and "mean" in ln)
    units = set(re.findall(r"[KMGT]iB/s", text[text.index(header):]))
    assert len(units) == 1, text          # one unit for the figure's columns
    data = json.loads(_history(monkeypatch, d, "--json"))
    assert sorted((p["workers"], len(p["runs"])) for p in data["points"]) == [(1, 2), (2, 2)]
    div = {"KiB/s": 2**10, "MiB/s": 2**20, "GiB/s": 2**30, "TiB/s": 2**40}[units.pop()]
    by_workers = {p["workers"]: p for p in data["points"]}
    for row in _rows(text, "1") + _rows(text, "2"):
        p = by_workers[int(row[0])]
        cells = [float(c) for c in row[-4:]]          # latest, mean, min, max
        want = [p["latest"], p["mean"], p["min"], p["max"]]
        assert all(abs(c * div - w) <= 0.01 * w for c, w in zip(cells, want)), (row, want)


def test_the_same_point_on_other_hosts_is_a_point_of_its_own(tmp_path, monkeypatch):
    d = str(tmp_path / "d")
    io_run(d, "r1", [(1, {}, [END] * 3)], host="node-a")
    io_run(d, "r2", [(1, {}, [NEVER] * 3)], started_ns=T + 3600 * S, host="node-b")
    data = json.loads(_history(monkeypatch, d, "--json"))
    assert sorted((p["hosts"], len(p["runs"])) for p in data["points"]) == \
        [(["node-a"], 1), (["node-b"], 1)]
    rows = _rows(_history(monkeypatch, d), "1")
    assert sorted(r[1] for r in rows) == ["node-a", "node-b"]      # the hosts column
