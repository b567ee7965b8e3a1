"""GNU time's verbose report (`/usr/bin/time -v CMD`, printed on stderr) -> metrics.

  elapsed_s (from "Elapsed (wall clock) time (h:mm:ss or m:ss)"), user_s, system_s,
  cpu_percent, max_rss_kb, major_faults, minor_faults, voluntary_cs, involuntary_cs,
  swaps, fs_inputs, fs_outputs, exit_status (the timed command's)
The timed command may print on stderr too: the last report in the output is the one read.
"""
from __future__ import annotations

from . import ParseError

NAME = "gnutime"
VERSIONS = ("1.9",)    # fixtures: real outputs
_START = "Command being timed:"
_FIELDS = {
    "User time (seconds)": "user_s",
    "System time (seconds)": "system_s",
    "Percent of CPU this job got": "cpu_percent",
    "Maximum resident set size (kbytes)": "max_rss_kb",
    "Major (requiring I/O) page faults": "major_faults",
    "Minor (reclaiming a frame) page faults": "minor_faults",
    "Voluntary context switches": "voluntary_cs",
    "Involuntary context switches": "involuntary_cs",
    "Swaps": "swaps",
    "File system inputs": "fs_inputs",
    "File system outputs": "fs_outputs",
    "Exit status": "exit_status",
}
_ELAPSED = "Elapsed (wall clock) time (h:mm:ss or m:ss)"


def _clock(raw: str) -> float:
    """'1:02:03.5' (h:mm:ss) or '0:00.03' (m:ss.cc) -> seconds."""
    seconds = 0.0
    for part in raw.split(":"):
        seconds = seconds * 60 + float(part)
    return seconds


def parse(stdout: str, stderr: str) -> dict[str, float]:
    text = stderr if _START in stderr else stdout
    idx = text.rfind(_START)
    if idx < 0:
        raise ParseError("no GNU time report (\"Command being timed:\"; "
                         "run the command under /usr/bin/time -v)")
    metrics: dict[str, float] = {}
    for line in text[idx:].splitlines()[1:]:
        key, sep, raw = line.strip().rpartition(": ")
        if not sep:
            continue
        raw = raw.strip()
        try:
            if key == _ELAPSED:
                metrics["elapsed_s"] = _clock(raw)
            elif key in _FIELDS:
                if raw.endswith("%"):
                    raw = raw[:-1]
                if raw == "?":               # GNU time prints ?% when elapsed is 0
                    continue
                metrics[_FIELDS[key]] = float(raw)
        except ValueError:
            continue
        if key == "Exit status":
            break
    if "elapsed_s" not in metrics:
        raise ParseError("GNU time report has no elapsed (wall clock) time")
    return metrics
