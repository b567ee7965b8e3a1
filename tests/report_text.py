"""What a report's tables say, apart from its notes and hints (which name every flag a cell
may show): a test that a cell says a thing reads it here. A test module imports this."""
from __future__ import annotations


def table_text(report: str) -> str:
    """The text of every table row of `manybench report` (box-drawn), rows joined and spaces
    squeezed: a cell that wraps onto the row's next line reads as one phrase."""
    rows = [line for line in report.splitlines() if line.startswith("│")]
    return " ".join(" ".join(row.replace("│", " ").split()) for row in rows)
