"""docs/definitions.md's list of every figure, written from the declarations (kernels/figures.py
and each kernel's `figures`), so the page cannot say what the code does not:

    python -m manybench.report.definitions --write docs/definitions.md    # regenerate
    python -m manybench.report.definitions --check docs/definitions.md    # exit 1 if stale

The section sits between BEGIN and END; tests/report/test_definitions.py fails when it is not what
this writes (the page is generated and checked in, so it reads on GitHub as it is).
"""
from __future__ import annotations

import sys

from .. import docpage
from ..analysis import sketch as S
from ..analysis.metric_units import shown_unit
from ..kernels import KERNELS, SHARED
from ..kernels import figures as F

BEGIN = ("<!-- every figure: written by `python -m manybench.report.definitions --write "
         "docs/definitions.md` from kernels/figures.py; edit the declarations, not this -->")
END = "<!-- end of every figure -->"
_ROLE = {F.FIGURE: "", F.FLAG: "flag", F.COUNT: "count", F.TEXT: "text", F.CONTEXT: "context"}


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def _unit(kernel_name: str, f: F.Figure) -> str:
    """The unit as views show it: a fixed one, or the scale a column picks from its range."""
    unit, _, fixed = shown_unit(kernel_name, f.name) if not f.computed else (
        {"ns": "s"}.get(f.unit, f.unit), 1.0, False)
    if fixed or unit not in ("B/s", "s", "ops/s"):
        return unit or "count" if f.role != F.TEXT else "text"
    return {"B/s": "B/s .. TiB/s", "s": "ns .. s", "ops/s": "ops/s, k/M/G"}[unit]


def _scopes(f: F.Figure) -> str:
    if not f.sums:
        return F.SCOPE_LABEL[f.scope]
    jobs = f.scope == F.JOB
    shares = [F.SCOPE_LABEL[s] + (" (several jobs)" if s == F.JOB and not jobs else "")
              for s, _ in F.SHARES if s != F.SLOT or not jobs]
    return (f"{F.SCOPE_LABEL[F.PHASE]} (a sum over the phase's {'jobs' if jobs else 'slots'}); "
            + ", ".join(shares))


def _formula(f: F.Figure) -> str:
    text = f.formula or f.note or f"the kernel's own figure, metric `{f.name}`"
    prefix = f"{f.title.replace(chr(10), ' ')} = "
    return text[len(prefix):] if text.startswith(prefix) else text


def _row(f: F.Figure, kernel_name: str, shown_by: str = "") -> str:
    kind = _ROLE.get(f.role, "")
    shape = "percentiles" if f.shape == F.DIST else "median (min-max)"
    if f.role in (F.TEXT, F.COUNT, F.CONTEXT, F.FLAG):
        shape = kind
    peak = f" Set against the node's `{f.peak[0]}` (docs/peaks.md)." if f.peak else ""
    better = {F.HIGHER: "higher", F.LOWER: "lower"}.get(f.direction, "")
    return (f"| {_cell(f.title)} (`{f.name}`) | {_cell(_scopes(f))} | "
            f"{_unit(kernel_name, f)} | {shape} | {better} | "
            f"{_cell(_formula(f) + '.' + peak + shown_by)} |")


HEAD = ("| figure | scope | unit | shown as | better | formula |\n"
        "|---|---|---|---|---|---|")


def _at_any_size() -> str:
    """How a figure over records is kept at any size (analysis/sketch.py)."""
    return ("Over records, at any size: each phase stores, with its records, a summary of "
            "every figure taken over records (a slot's own value, per-slot time, lateness, "
            "each metric; analysis/aggregates.py), and every view reads those, not the "
            "records. A point's summary of a figure holds its n, sum, min and max exactly, "
            f"and its values themselves while there are at most {S.EXACT_MAX:,} of them: "
            "every median, percentile and range over records is then exact. Beyond, the "
            f"values go into log buckets of relative width {S.RELATIVE:g} (a bucket k holds "
            "(g^(k-1), g^k], g = (1 + a) / (1 - a)), and a percentile is the bucket's "
            f"2 g^k / (g + 1): within {S.RELATIVE:.1%} of the nearest-rank value (min and "
            "max stay exact; the mean's interval is computed from n, the sum and the "
            "merged sum of squared deviations). Figures over phases (aggregate bandwidth, "
            "skew, sync overhead, cycle, each metric's median and sum per phase) are stored "
            "per phase and always exact.")


def markdown() -> str:
    """The generated section (without its markers)."""
    out = ["## Every figure, as declared", "",
           "Generated from the declarations (kernels/figures.py, each kernel's `figures`); "
           "every view (tables, HTML figures, `report --json`) shows these figures under "
           "these names, scopes and units. Scopes: " + "; ".join(
               f"{label}: {what}" for label, what in (
                   (F.SCOPE_LABEL[F.PHASE], "the whole phase's figure, median over phases"),
                   (F.SCOPE_LABEL[F.SLOT], "a slot's own value over the point's records, "
                                           "or a sum's share"),
                   (F.SCOPE_LABEL[F.JOB], "what a parallel task's job printed (on its first "
                                          "rank's record), or a sum's share"))) +
           ". The shares of a summed figure: " + "; ".join(
               f"{F.SCOPE_LABEL[s]} = {what}" for s, what in F.SHARES) +
           ". A unit shown as a range is scaled per column from the values it shows (one "
           "unit per column, the same in every view); a name that says its unit is shown "
           "in it.", "", _at_any_size(), "", "### Computed from any kernel's records", "",
           HEAD]
    for f in F.COMPUTED:
        by = sorted(k.name for k in KERNELS.values() if any(g.name == f.name for g in k.figures))
        out.append(_row(f, "", shown_by=f" Shown by {', '.join(by)}." if by else ""))
    out += ["", "### Metrics any record may carry", "", HEAD]
    out += [_row(f, "") for f in SHARED.values() if f.role != F.HIDDEN]
    out += ["", "### Each kernel's own", "", HEAD]
    for name in sorted(KERNELS):
        k = KERNELS[name]
        out += [_row(f, name).replace("| ", f"| {name}: ", 1)
                for f in k.figures
                if not f.computed and f.role != F.HIDDEN and SHARED.get(f.name) is not f]
    out += ["", "### A command's metrics", "", HEAD]
    for name in sorted(KERNELS):
        k = KERNELS[name]
        if k.from_command:
            f = F.Figure("NAME", "", "NAME", "", scope=k.output_scope, formula=(
                "the value its `metrics` regex (or its `parse`r) took from the output; a rate "
                "named so (`_mb_s`, `_gflops`, `_ops_s` ...) is summed over the phase's "
                + ("jobs" if k.output_scope == F.JOB else "slots")
                + ", another figure is a median over the records that carry it"))
            out.append(_row(f, name).replace("| ", f"| {name}: ", 1)
                       .replace("| count |", "| the unit its name says (MB/s, us), or as "
                                              "captured |", 1))
    return "\n".join(out) + "\n"


def with_section(text: str) -> str:
    """The page with its generated section replaced (appended when it has none)."""
    return docpage.with_section(text, BEGIN, END, markdown())


def main(argv: list[str]) -> int:
    return docpage.main(argv, with_section, __doc__, "its list of figures is not what the "
                        "declarations say: run python -m manybench.report.definitions")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
