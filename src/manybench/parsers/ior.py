"""IOR's summary -> metrics: the text report ("Summary of all tests:" table, IOR 2.x's table
after each test, and the "Max Write:" / "Max Read:" lines) or the JSON one (`-O
summaryFormat=JSON`).

For each operation (write, read) of the first test in the summary:
  {op}_max_mib_s, {op}_min_mib_s, {op}_mean_mib_s, {op}_stddev_mib_s   bandwidth, MiB/s
  {op}_ops_max, {op}_ops_min, {op}_ops_mean, {op}_ops_stddev           transfers/s (IOR's OPs)
  {op}_mean_s                                                          mean time of a repetition
  {op}_stonewall_s, {op}_stonewall_mib_s                               when stonewalling ran
  {op}_max_mb_s                                                        from "Max Write: ... MB/sec"
  {op}_stonewall_pairs_min, _max, {op}_stonewall_min_gib, _mean_gib, {op}_stonewall_time_s
      from "stonewalling pairs accessed min: .. max: .. -- min data: .. GiB mean data: ..
      GiB time: ..s" (-D): the transfers the slowest and fastest task had made at the
      stonewall, as IO500 reports them (the spread wear-out then evens out)
  tasks, reps, block_size_bytes, transfer_size_bytes, agg_size_mib
A summary with several tests (-f script): tests = their count, and the tests after the
first also as test{Test#}_{name}. Columns an IOR version does not print are left out.
"""
from __future__ import annotations

import json
import math
import re

from . import ParseError

NAME = "ior"
VERSIONS = ("2.10.3", "3.3.0", "4.0.0", "4.1.0+dev")    # fixtures: real outputs
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_MAX_LINE = re.compile(rf"^Max (Write|Read):\s+({_NUM}) MiB/sec \(({_NUM}) MB/sec\)",
                       re.MULTILINE)
_PAIRS = re.compile(rf"^stonewalling pairs accessed min: (\d+) max: (\d+) -- min data: ({_NUM}) "
                    rf"GiB mean data: ({_NUM}) GiB time: ({_NUM})s\s*$(?:.*\n)*?^(write|read)\s",
                    re.MULTILINE)
# text summary header column -> metric suffix; StdDev is bandwidth's after Mean(MiB), OPs' later
_COLUMNS = {"Max(MiB)": "max_mib_s", "Min(MiB)": "min_mib_s", "Mean(MiB)": "mean_mib_s",
            "Max(OPs)": "ops_max", "Min(OPs)": "ops_min", "Mean(OPs)": "ops_mean",
            "Mean(s)": "mean_s", "Stonewall(s)": "stonewall_s",
            "Stonewall(MiB)": "stonewall_mib_s"}
_COMMON = {"#Tasks": "tasks", "reps": "reps", "blksiz": "block_size_bytes",
           "xsize": "transfer_size_bytes", "aggs(MiB)": "agg_size_mib"}
_JSON_KEYS = {"bwMaxMIB": "max_mib_s", "bwMinMIB": "min_mib_s", "bwMeanMIB": "mean_mib_s",
              "bwStdMIB": "stddev_mib_s", "OPsMax": "ops_max", "OPsMin": "ops_min",
              "OPsMean": "ops_mean", "OPsSD": "ops_stddev", "OPsStdDev": "ops_stddev",
              "MeanTime": "mean_s", "StoneWallTime": "stonewall_s",
              "StoneWallbwMeanMIB": "stonewall_mib_s"}
_JSON_COMMON = {"numTasks": "tasks", "repetitions": "reps", "blockSize": "block_size_bytes",
                "transferSize": "transfer_size_bytes", "xsizeMiB": "agg_size_mib"}


def _float(s) -> float | None:
    try:
        v = float(s)
    except (TypeError, ValueError):
        return None                       # "NA", text
    return v if math.isfinite(v) else None


_V2_HEADER = re.compile(r"^Operation\s+Max \(MiB\).*$", re.MULTILINE)


def _v2_rows(text: str) -> list[tuple[int, str, dict[str, float]]]:
    """IOR 2.x: a summary table after each test, headers with spaces ("Max (MiB)",
    "Std Dev") and an "EXCEL" marker ending each row; the n-th table is test n."""
    rows = []
    for test_id, m in enumerate(_V2_HEADER.finditer(text)):
        header = re.sub(r" \(", "(", m.group(0)).replace("Std Dev", "StdDev").split()
        for line in text[m.end():].splitlines()[2:]:
            cells = line.split()
            if not cells or cells[0] not in ("write", "read"):
                break
            values: dict[str, float] = {}
            seen_mean_ops = False
            for name, raw in zip(header[1:], cells[1:]):
                seen_mean_ops |= name == "Mean(OPs)"
                key = (("ops_stddev" if seen_mean_ops else "stddev_mib_s")
                       if name == "StdDev" else _COLUMNS.get(name))
                v = _float(raw)
                if key and v is not None:
                    values[key] = v
            rows.append((test_id, cells[0], values))
    return rows


def _text_rows(text: str) -> list[tuple[int, str, dict[str, float]]]:
    """(test id, operation, {metric suffix: value}) per summary row."""
    idx = text.find("Summary of all tests:")
    if idx < 0:
        return _v2_rows(text)
    lines = text[idx:].splitlines()
    header: list[str] | None = None
    rows = []
    for line in lines:
        tokens = line.replace("Summary of all tests:", "").split()
        if not tokens:
            continue
        if tokens[0] == "Operation":
            header = tokens
            continue
        if header is None or tokens[0] not in ("write", "read"):
            if header is not None and rows:
                break                     # the table has ended
            continue
        values: dict[str, float] = {}
        seen_mean_ops = False
        test_id = 0                       # headers without a Test# column: one test
        for name, raw in zip(header[1:], tokens[1:]):
            if name == "Mean(OPs)":
                seen_mean_ops = True
            if name == "StdDev":
                key = "ops_stddev" if seen_mean_ops else "stddev_mib_s"
            else:
                key = _COLUMNS.get(name) or _COMMON.get(name)
            if name == "Test#":
                v = _float(raw)
                test_id = int(v) if v is not None else test_id
                continue
            v = _float(raw)
            if key and v is not None:
                values[key] = v
        rows.append((test_id, tokens[0], values))
    return rows


def _json_doc(text: str) -> dict | None:
    decoder = json.JSONDecoder()
    for m in re.finditer(r"^\{", text, re.MULTILINE):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(obj, dict) and "summary" in obj:
            return obj
    return None


def _json_rows(text: str) -> tuple[list[tuple[int, str, dict[str, float]]], list[dict]]:
    """Summary rows and each test's "max" section, from IOR's JSON. IOR has printed JSON
    that a strict reader refuses (a missing comma, an unescaped quote in the command
    line), so the summary's flat objects are also read key by key."""
    doc = _json_doc(text)
    if doc is not None:
        summary = [s for s in doc.get("summary") or [] if isinstance(s, dict)]
        maxes = [t.get("max") for t in doc.get("tests") or []
                 if isinstance(t, dict) and isinstance(t.get("max"), dict)]
    else:
        idx = text.find('"summary"')
        if idx < 0:
            return [], []
        summary = [dict(re.findall(r'"([^"]+)"\s*:\s*"?([^",\n}]*)"?', block))
                   for block in re.findall(r"\{[^{}]*\}", text[idx:])]
        maxes = [dict(re.findall(r'"([^"]+)"\s*:\s*"?([^",\n}]*)"?', block))
                 for block in re.findall(r'"max"\s*:\s*(\{[^{}]*\})', text[:idx])]
    rows = []
    for i, s in enumerate(summary):
        op = str(s.get("operation", "")).strip()
        if op not in ("write", "read"):
            continue
        values = {}
        for key, name in {**_JSON_KEYS, **_JSON_COMMON}.items():
            v = _float(s.get(key))
            if v is not None:
                values[name] = v
        test_id = _float(s.get("TestID"))
        rows.append((int(test_id) if test_id is not None else i, op, values))
    return rows, maxes


def parse(stdout: str, stderr: str) -> dict[str, float]:
    text = stdout if ("Summary of all tests:" in stdout or '"summary"' in stdout
                      or _MAX_LINE.search(stdout)) else stdout + "\n" + stderr
    rows = _text_rows(text)
    maxes: list[dict] = []
    if not rows:
        rows, maxes = _json_rows(text)
    max_lines = _MAX_LINE.findall(text)
    if not rows and not max_lines and not maxes:
        raise ParseError("no IOR summary (\"Summary of all tests:\", \"Max Write:\" or a "
                         "JSON \"summary\") found")
    metrics: dict[str, float] = {}
    tests = sorted({t for t, _, _ in rows})
    first = tests[0] if tests else None
    for test_id, op, values in rows:
        prefix = "" if test_id == first else f"test{test_id}_"
        for key, v in values.items():
            if key in _COMMON.values():
                name = f"{prefix}{key}"
                metrics.setdefault(name, v)
            else:
                metrics[f"{prefix}{op}_{key}"] = v
    # "Max Write:" lines come once per test, in order: the first belongs to the first test
    for op, mib, mb in max_lines:
        op = op.lower()
        metrics.setdefault(f"{op}_max_mib_s", float(mib))
        metrics.setdefault(f"{op}_max_mb_s", float(mb))
    if maxes:
        for op in ("write", "read"):
            mib, mb = _float(maxes[0].get(f"{op}MiB")), _float(maxes[0].get(f"{op}MB"))
            if mib is not None:
                metrics.setdefault(f"{op}_max_mib_s", mib)
            if mb is not None:
                metrics.setdefault(f"{op}_max_mb_s", mb)
    for lo, hi, min_gib, mean_gib, secs, op in _PAIRS.findall(text):
        for key, v in (("pairs_min", lo), ("pairs_max", hi), ("min_gib", min_gib),
                       ("mean_gib", mean_gib), ("time_s", secs)):
            metrics.setdefault(f"{op}_stonewall_{key}", float(v))
    if len(tests) > 1:
        metrics["tests"] = float(len(tests))
    if not any(k.startswith(("write_", "read_")) for k in metrics):
        raise ParseError("IOR summary has no write or read results")
    return metrics
