"""Size-indexed tables a parser reads (OSU's and IMB's "size -> value" columns): one Series
per column, stored as rows of results.db's `series` table (results/schema.py), one row per
point, and plotted against message size in the HTML report.

A parser module that reads tables exports `tables(stdout, stderr) -> list[Series]` beside
parse(); parsers.parse_output() calls both.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Series:
    name: str                  # "osu_latency", "osu_allreduce.max", "Allreduce.t_avg"
    unit: str                  # of y: "us", "MB/s", "count", "1/s"
    x_unit: str = "bytes"      # of x: the message size
    points: list[tuple[float, float]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "unit": self.unit, "x_unit": self.x_unit,
                "points": [[float(x), float(y)] for x, y in self.points]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Series:
        return cls(name=str(d["name"]), unit=str(d.get("unit", "")),
                   x_unit=str(d.get("x_unit", "bytes")),
                   points=[(float(x), float(y)) for x, y in d.get("points", ())])
