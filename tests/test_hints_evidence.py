"""Hints judge a command's metric on the records that ran it (issue 29, item 5): a metric
every ok record matched is not "empty" because failed records lack it; the ok records that
missed it are named."""
from __future__ import annotations

from builders import T, rec
from manybench.analysis import hints as H
from manybench.analysis.points import summarize
from manybench.report.findings import run_hints
from manybench.results.contract import RunInfo, RunNotes
from manybench.results.store import Store


def _dd(ok_rate: list[bool], failed: int) -> list:
    """dd records: ok ones carrying `rate` where told (else saying it missed), then failed
    ones whose output had no rate."""
    out = []
    for i, has in enumerate(ok_rate):
        out.append(rec(i, 0, T, T, T + 10**9, task="dd", kernel="command", workers=1,
                       metrics={"exit_status": 0, **({"rate": 512.0} if has else {})},
                       extra={} if has else {"missing_metrics": ["rate"]}))
    for i in range(failed):
        out.append(rec(100 + i, 0, T, T, T + 10**9, task="dd", kernel="command", workers=1,
                       status="error", error="exit status 1: No space left on device",
                       metrics={"exit_status": 1}, extra={"missing_metrics": ["rate"]}))
    return out


def _run() -> RunInfo:
    raw = {"task": [{"name": "dd", "command": ["dd"], "metrics": {"rate": "x"}}]}
    return RunInfo("r", "p", "", raw, [], 0, None, "failed", {}, RunNotes())


def test_a_metric_every_ok_record_matched_is_not_empty(tmp_path):
    records = _dd([True] * 6, failed=6)
    store = Store(tmp_path)
    hints = [h for h in run_hints(store, _run(), summarize(records), records, [], {})
             if h.kind == "metric"]
    store.close()
    assert not any("empty" in h.text or "matched nothing" in h.text for h in hints)
    (h,) = hints
    assert "matched in every ok record of dd (6)" in h.text
    assert "missed only in the 6 failed records" in h.text
    assert "n/slot 0, phase 100" in h.evidence and "and 2 more" in h.evidence


def test_ok_records_that_missed_a_metric_are_named():
    records = _dd([True, False, True, True, False, True], failed=2)
    (h,) = H.missing_metrics({"dd": ["rate"]}, records)
    assert "'rate' of dd matched in 4 of its 6 ok records" in h.text
    assert "ok records that missed it: n/slot 0, phase 1; n/slot 0, phase 4" in h.evidence
    assert "; 2 failed records missed it too" in h.evidence
    (empty,) = H.missing_metrics({"dd": ["rate"]}, _dd([False] * 3, failed=1))
    assert "'rate' of dd matched nothing in any ok record: its column is empty" in empty.text
    assert empty.evidence == "none of its 3 ok records carries rate; 1 failed record missed it too"
