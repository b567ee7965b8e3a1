"""Live progress: phases done/total, ETA, the last phase's aggregate rate (issue 10)."""
from __future__ import annotations

from manybench.run.progress import RunProgress, rate_text
from builders import S, T, io_data, rec


def test_rate_text_is_the_phases_aggregate_rate():
    records, _ = io_data()
    assert rate_text([r for r in records if r.phase == 1]) == "8.0 MiB/s"    # 8 MiB over 1 s
    ops = [rec(0, s, T, T, T + S, kernel="meta.mkdir", ops=500) for s in range(2)]
    assert rate_text(ops) == "1,000 ops/s"
    assert rate_text([rec(0, 0, T, T, T + S)]) == "" and rate_text([]) == ""


def test_the_line_shows_done_total_eta_and_rate(capsys):
    records, _ = io_data()
    with RunProgress(3, enabled=True) as bar:
        bar.point("w workers=2")
        bar.advance([r for r in records if r.phase == 1])
    err = capsys.readouterr().err
    assert "1/3" in err and "ETA" in err and "8.0 MiB/s" in err and "w workers=2" in err
