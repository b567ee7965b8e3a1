"""Comments, docstrings and docs that name a file (`run/lease.py`, `docs/plan.md`) name one
that exists in the repository: a moved or renamed module leaves no pointer to nowhere, and
nothing points outside the repository."""
from __future__ import annotations

import re
from pathlib import Path

from suite_paths import ROOT

REPO = ROOT
PKG = REPO / "src" / "manybench"
MENTION = re.compile(r"(?<![\w./-])[\w./-]*\w\.(?:py|md)\b")
SKIP = {".git", "build", "node_modules", "__pycache__"}


def _files() -> list[Path]:
    src = [p for p in PKG.rglob("*") if p.suffix in (".py", ".md", ".c", ".h")]
    return src + sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]


def _names() -> set[str]:
    return {p.name for p in REPO.rglob("*") if not SKIP & set(p.relative_to(REPO).parts)}


def _exists(mention: str, here: Path, names: set[str]) -> bool:
    path = mention.removeprefix("./")
    if "/" not in path:
        return path in names
    bases = [here, *here.parents, PKG]
    return any((b / path).exists() for b in bases if REPO in (b, *b.parents))


def dangling() -> list[str]:
    names = _names()
    out = []
    for f in _files():
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            for m in MENTION.finditer(line):
                if not _exists(m.group(0), f.parent, names):
                    out.append(f"{f.relative_to(REPO)}:{n}: {m.group(0)}")
    return out


def test_every_file_a_source_or_doc_names_exists():
    assert dangling() == []


def test_the_check_finds_a_file_that_does_not_exist(tmp_path):
    names = _names()
    assert not _exists("plan/placement_fields.py", PKG / "plan", names)
    assert not _exists("DESIGN.md", REPO / "docs", names)     # outside the repository
    assert _exists("run/coordinator.py", PKG / "plan", names)
    assert _exists("docs/plan.md", PKG / "units.py", names)
    assert _exists("native/API.md", PKG / "kernels", names)
