"""docs/architecture.md names every module of the package (issue 33, item 7): a module added,
moved or renamed without its row fails here, naming it."""
from __future__ import annotations

import re

from suite_paths import ROOT
PACKAGE = ROOT / "src" / "manybench"
DOC = ROOT / "docs" / "architecture.md"


def modules() -> list[str]:
    """Every Python module of the source tree, as the doc writes it: its path inside the
    package (`engines/base.py`; the top level's bare: `entry.py`)."""
    return sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
                  if "__pycache__" not in p.parts)


def named() -> set[str]:
    """What the doc names in backticks."""
    return set(re.findall(r"`([^`\s]+\.py)`", DOC.read_text(encoding="utf-8")))


def test_every_module_under_src_is_named_in_the_architecture_doc():
    found = modules()
    assert len(found) > 100                       # the tree was found, not an empty glob
    missing = [m for m in found if m not in named()]
    assert not missing, f"docs/architecture.md does not name: {', '.join(missing)}"


def test_the_architecture_docs_module_tables_name_no_module_that_is_gone():
    text = DOC.read_text(encoding="utf-8")
    tables = text.split("\n## Every module\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`\s]+\.py)` \|", tables, re.M)
    assert len(rows) > 100
    gone = [m for m in rows if not (PACKAGE / m).is_file()]
    assert not gone, f"docs/architecture.md's tables name modules not in src/: {gone}"
