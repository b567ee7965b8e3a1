"""SMTEF's figure has one meaning in every document (issue 29, item 10): the sentence that
says which of manybench's figures to set beside SMTEF's null-task figure, and why, is written
once in docs/definitions.md and the same, word for word, in the README and every example that
speaks of it; and no other sentence anywhere (docs, examples, the kernels' and figures'
texts) calls sync overhead SMTEF's figure.

SMTEF's paper calls its figure "sync overhead" (the first null task's start to the last one's
end, 50 ms at 56 workers), stamped where Pwrake logged its tasks, on its master: the
like-for-like figure of manybench is the phase cycle (go sent to last end), and manybench's
own sync overhead (the slots' span) is not it. Before this, the README and the smtef-002
example said sync overhead was "SMTEF's first figure" while definitions.md said the phase
cycle was: 34.6 us against 2.32 ms at 4 workers."""
from __future__ import annotations

import re
from pathlib import Path

from suite_paths import ROOT

from manybench.kernels import KERNELS
from manybench.kernels import figures as F

DEFINITIONS = ROOT / "docs" / "definitions.md"
# the sentence, found by its opening words, runs to its first full stop
SENTENCE = re.compile(r"SMTEF's figure,[^.]*\.")


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _the_sentence(required: bool = True) -> str:
    """The sentence of docs/definitions.md; without one (required=False): a text none holds."""
    found = SENTENCE.findall(_flat(DEFINITIONS.read_text()))
    assert len(found) <= 1, found
    assert found or not required, "docs/definitions.md has no sentence opening \"SMTEF's figure,\""
    return found[0] if found else "\0"


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
            *sorted((ROOT / "examples").glob("*/README.md")),
            *sorted((ROOT / "examples").glob("*/*.toml"))]


def _fragments(text: str) -> list[str]:
    """A document cut where one statement ends: paragraphs, list items, headings, table
    cells, TOML comments, sentences and clauses after a semicolon."""
    pieces = re.split(r"\n\s*\n|\n\s*(?=[-*#] )|\|", text)
    out = []
    for p in pieces:
        p = _flat(p.replace("#", " "))
        out += [f for f in re.split(r"(?<=[.!?])\s+(?=[A-Z`*(\[])|;\s", p) if f]
    return out


def _pairs_smtef_with_sync_overhead(fragment: str) -> bool:
    return "SMTEF" in fragment and "sync overhead" in fragment.lower()   # not smtef-002


def test_the_sentence_names_the_phase_cycle_and_why():
    s = _the_sentence()
    assert "phase cycle" in s and "Pwrake" in s and "50 ms at 56 workers" in s, s


def test_every_document_that_speaks_of_smtefs_null_tasks_has_the_same_sentence():
    s = _the_sentence()
    speaks = []
    for doc in _documents():
        if doc.suffix == ".toml":
            continue       # a plan's comment points to its README (the next test reads it)
        text = doc.read_text()
        if any("SMTEF" in f and re.search(r"null|sync overhead|phase cycle|50 ms", f, re.I)
               for f in _fragments(text)):
            speaks.append(doc.relative_to(ROOT))
            assert s in _flat(text), f"{doc.relative_to(ROOT)} speaks of SMTEF without: {s}"
    assert {Path("README.md"), Path("docs/definitions.md"),
            Path("examples/smtef-002/README.md")} <= set(speaks), speaks


def test_no_other_sentence_calls_sync_overhead_smtefs_figure():
    s = _the_sentence(required=False)
    wrong = [(str(doc.relative_to(ROOT)), f) for doc in _documents()
             for f in _fragments(doc.read_text())
             if _pairs_smtef_with_sync_overhead(f.replace(s, ""))]
    assert not wrong, wrong


def test_the_kernels_and_figures_say_the_same():
    """What `manybench kernels` and the report's notes print: no text calls sync overhead
    SMTEF's figure; one that names SMTEF's figure names the phase cycle."""
    texts = [k.doc for k in KERNELS.values()]
    texts += [f.note for f in vars(F).values() if isinstance(f, F.Figure) and f.note]
    texts += [f.note for k in KERNELS.values() for f in k.figures if f.note]
    for text in texts:
        for f in _fragments(text):
            assert not _pairs_smtef_with_sync_overhead(f), f
            if re.search(r"SMTEF's\b.*\bfigure|figure.*\bSMTEF", f):
                assert "phase cycle" in f, f
