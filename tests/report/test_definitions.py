"""docs/definitions.md lists every figure with its scope, unit and formula, written from the
declarations (report/definitions.py): the page's section must be what they say now."""
from __future__ import annotations


from suite_paths import ROOT

from manybench.kernels import KERNELS, SHARED
from manybench.kernels import figures as F
from manybench.report.definitions import BEGIN, END, main, markdown, with_section

PAGE = ROOT / "docs" / "definitions.md"


def test_the_pages_list_of_figures_is_what_the_declarations_say():
    text = PAGE.read_text(encoding="utf-8")
    assert BEGIN in text and END in text
    assert with_section(text) == text, (
        "docs/definitions.md is stale: python -m manybench.report.definitions --write "
        "docs/definitions.md")


def test_every_declared_figure_is_listed_with_its_scope_and_unit():
    listed = markdown()
    figs = list(F.COMPUTED) + [f for f in SHARED.values()] + [
        f for k in KERNELS.values() for f in k.figures]
    for f in figs:
        if f.role != F.HIDDEN:
            assert f"(`{f.name}`) | " in listed, f.name
    row = next(ln for ln in listed.splitlines() if ln.startswith("| bandwidth (`bandwidth`)"))
    assert "aggregate" in row and "per slot" in row and "B/s" in row and "sum(bytes)" in row


def test_a_changed_declaration_makes_the_page_stale(tmp_path, monkeypatch):
    page = tmp_path / "definitions.md"
    page.write_text(PAGE.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["--check", str(page)]) == 0
    monkeypatch.setattr(F, "COMPUTED", F.COMPUTED[:-1])
    assert main(["--check", str(page)]) == 1
    assert main(["--write", str(page)]) == 0 and main(["--check", str(page)]) == 0
