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


def _line(bar: RunProgress, width: int = 80) -> str:
    """The progress line as a terminal of `width` columns draws it."""
    import io
    from rich.console import Console
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None).print(bar.progress.get_renderable())
    return buf.getvalue().rstrip("\n")


def test_at_80_columns_the_counter_stays_whole_and_the_label_gives_way():
    """Issue 17, item 8: a long point label squeezed the counter to `4/…`."""
    records, _ = io_data()
    with RunProgress(1234, enabled=True) as bar:
        bar.point("mdtest-like mkdir in a long directory name workers=16 variant=container")
        for _ in range(400):
            bar.advance([r for r in records if r.phase == 1])
        line = _line(bar)
    assert "400/1234" in line, line
    assert "8.0 MiB/s" in line and "ETA" in line, line
    assert "mdtest-like" in line and "…" in line, line      # the label is what is cut


def test_the_rate_shown_is_the_current_points_never_a_stale_one():
    """A mkdir point showed the MiB/s of the io point before it: a rate is shown only
    beside the point whose phase measured it, and a phase with no rate clears it."""
    records, _ = io_data()
    mkdir = [rec(2, s, T, T, T + S, kernel="meta.mkdir", ops=500) for s in range(2)]
    with RunProgress(10, enabled=True) as bar:
        bar.point("w workers=2")
        bar.advance([r for r in records if r.phase == 1])
        assert "8.0 MiB/s" in _line(bar, 200)
        bar.point("mk workers=2")                       # the next point starts
        assert "MiB/s" not in _line(bar, 200)
        bar.advance(mkdir)
        assert "1,000 ops/s" in _line(bar, 200)
        bar.advance([rec(3, 0, T, T, T + S)])           # a null phase: no rate of its own
        assert "ops/s" not in _line(bar, 200)
