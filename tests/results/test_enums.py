"""Statuses and warning kinds are enums, declared once (issue 33, item 4): a record's Status
(status.py), a run's and a phase's (results/contract.py), the warning kinds with their meaning
and label; Warnings.add refuses a kind that is none of them; "stall" and "stalls", stored by
older versions, read back as the kinds that replaced them."""
from __future__ import annotations

import ast
import json
import sqlite3
from pathlib import Path

import pytest

from suite_paths import ROOT

import manybench
from manybench.model import Plan
from manybench.record import Record
from manybench.results.contract import (RENAMED_KINDS, PhaseStatus, RunStatus, WarningKind,
                                        warning_text)
from manybench.results.store import DB_NAME, Store
from manybench.run.warnings import Warnings
from manybench.status import OK_TEXT, Status

SRC = Path(manybench.__file__).parent
ENUMS = {"Status": Status, "RunStatus": RunStatus, "PhaseStatus": PhaseStatus,
         "WarningKind": WarningKind}
STATUS_TEXTS = {s.value for e in (Status, RunStatus, PhaseStatus) for s in e}
KIND_TEXTS = {k.value for k in WarningKind} | set(RENAMED_KINDS)   # old names too
# bare texts in src/ that are not ours: each with why
NOT_OURS = {
    ("cli/errors.py", "ok"): "SQLite's PRAGMA quick_check answers 'ok'",
    ("results/schema.py", "ok"): "SQLite's PRAGMA integrity_check answers 'ok'",
    ("kernels/mpi_record.py", "timeout"): "how a rank ended (ENDINGS), made a Status below",
}


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        yield path.relative_to(SRC).as_posix(), ast.parse(path.read_text(), str(path))


def _texts(node: ast.AST) -> list[str]:
    """The str constants a comparison's operand holds (itself, or a tuple/list/set of them)."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]


def _is_message(node: ast.AST) -> bool:
    """A warning's message as src/ makes one: an f-string, a sum of texts, or a variable."""
    return isinstance(node, (ast.JoinedStr, ast.BinOp, ast.Name, ast.Attribute))


def bare(path: str, tree: ast.AST) -> list[str]:
    """Where a status or a warning kind is written as bare text in one module."""
    out = []
    for node in ast.walk(tree):
        found: list[str] = []
        if isinstance(node, ast.Compare):
            found = [t for op in (node.left, *node.comparators) for t in _texts(op)
                     if t in STATUS_TEXTS]
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            first = _texts(node.args[0]) if node.args else []
            if name in ("count", "repeat"):
                found = [t for t in first if t in STATUS_TEXTS]
            elif name in ("PhaseWarning", "add", "add_warning", "Warning"):
                found = [t for t in first if t in KIND_TEXTS]
            found += [t for k in node.keywords if k.arg in ("status", "kind")
                      for t in _texts(k.value) if t in STATUS_TEXTS | KIND_TEXTS]
        elif isinstance(node, (ast.Tuple, ast.List)) and 2 <= len(node.elts) <= 4:
            # ("pin", node, message), ["busy-cpu", message]: a warning as data
            head = _texts(node.elts[0]) if isinstance(node.elts[0], ast.Constant) else []
            if head and head[0] in KIND_TEXTS and _is_message(node.elts[-1]):
                found = head
        out += [f"{path}:{node.lineno}: {t!r}" for t in found if (path, t) not in NOT_OURS]
    return out


def test_no_status_or_warning_kind_is_bare_text_in_src():
    found = [hit for path, tree in _modules() for hit in bare(path, tree)]
    assert not found, "use the enums (status.py, results/contract.py):\n" + "\n".join(found)


def test_the_scan_finds_bare_text_where_it_is():
    """The scan above is not vacuous: each shape src/ used to have is found."""
    code = '''
if r.status == "ok" or st in ("error", "timeout"): pass
n = arr.status.count("ok")
PhaseWarning("stall", text)
self.warnings.add("clock-step", text)
self.add_warning("relay", node, f"node {node}")
out.append(("stalls", n.name, text))
told.append(["busy-cpu", f"slot {s}"])
Result(status="lost")
'''
    assert sorted(bare("x.py", ast.parse(code))) == [
        "x.py:2: 'error'", "x.py:2: 'ok'", "x.py:2: 'timeout'", "x.py:3: 'ok'",
        "x.py:4: 'stall'", "x.py:5: 'clock-step'", "x.py:6: 'relay'", "x.py:7: 'stalls'",
        "x.py:8: 'busy-cpu'", "x.py:9: 'lost'"]


def test_every_member_src_names_exists_and_every_member_is_named():
    named: dict[str, set[str]] = {e: set() for e in ENUMS}
    for _, tree in _modules():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in ENUMS and node.attr.isupper()):
                named[node.value.id].add(node.attr)
    for name, enum in ENUMS.items():
        members = set(enum.__members__)
        assert named[name] <= members, f"{name}: no {sorted(named[name] - members)}"
        # a member nothing in src/ uses is a kind or status no run can have
        assert members <= named[name], f"{name}: {sorted(members - named[name])} unused"


def test_members_are_their_text_stored_and_shown_as_it():
    assert Status.OK == "ok" and "ok" == Status.OK and Status("lost") is Status.LOST
    assert f"{Status.TIMEOUT}" == str(Status.TIMEOUT) == "timeout"
    assert json.dumps({"s": RunStatus.KILLED, Status.OK: 1}) == '{"s": "killed", "ok": 1}'
    assert PhaseStatus.OK == Status.OK == OK_TEXT
    assert Record(run="r", phase=0, task="t", kernel="null", variant="", rep=0, workers=1,
                  node="n", slot=0, cpu=0, t0_ns=0).status == Status.OK
    # the hot columns' text is a plain, interned str: list.count finds it by identity
    assert type(OK_TEXT) is str and OK_TEXT is Status.OK.value
    assert WarningKind.CLOCK.meaning and WarningKind.CLOCK.label == "CLOCK WARNING"
    assert warning_text(WarningKind.PIN, "m") == "warning: m"


def _store(tmp_path: Path) -> Store:
    st = Store(str(tmp_path))
    st.begin_run("r", Plan(name="p", tasks=[], raw={}), [], {})
    return st


def test_warnings_add_refuses_an_unknown_kind(tmp_path):
    told: list[str] = []
    with _store(tmp_path) as st:
        w = Warnings(st, "r", echo=told.append)
        for kind in ("no-such-kind", "stalls", ""):    # an old name is not a kind to add
            with pytest.raises(ValueError, match="unknown warning kind"):
                w.add(kind, "m")
        w.add(WarningKind.PIN, "as a member")
        w.add("short", "as its text")
        assert [x.kind for x in st.warnings("r")] == [WarningKind.PIN, WarningKind.SHORT]
    assert told == ["warning: as a member", "warning: as its text"]


def test_an_old_runs_stall_and_stalls_read_back_under_their_new_names(tmp_path):
    _store(tmp_path).close()
    with sqlite3.connect(tmp_path / DB_NAME) as db:     # as versions before int33 stored them
        db.executemany("INSERT INTO warnings (run, seq, kind, message, node, task, phase, "
                       "time_ns) VALUES ('r', ?, ?, ?, 'n1', '', NULL, 0)",
                       [(0, "stall", "slot 3 stalled"), (1, "stalls", "cpus taken"),
                        (2, "from-the-future", "a newer version's kind")])
    with Store(str(tmp_path), readonly=True) as st:
        got = st.warnings("r")
    assert [w.kind for w in got] == [WarningKind.STRAGGLER, WarningKind.NOISE_FLOOR,
                                     "from-the-future"]
    assert [warning_text(w.kind, w.message) for w in got] == [
        "STRAGGLER: slot 3 stalled", "warning: cpus taken",
        "warning: a newer version's kind"]


DOCS = ROOT / "docs"


def _doc_row(text: str, starts: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(starts))


def test_the_docs_list_every_kind_and_status_as_declared():
    results = (DOCS / "results.md").read_text()
    renamed = {new: old for old, new in RENAMED_KINDS.items()}
    rows = [line for line in results.splitlines() if line.startswith("| `")
            and line.split("`")[1] in KIND_TEXTS]
    assert rows == [f"| `{k}` | {k.label} | {k.meaning}"
                    + (f" (stored as `{renamed[k]}` before)" if k in renamed else "") + " |"
                    for k in WarningKind], "docs/results.md's warning kinds: as contract.py"
    said = {"| `runs` |": RunStatus, "| `phases` |": PhaseStatus, "`status` is `ok`": Status}
    for starts, enum in said.items():
        row = _doc_row(results, starts)
        assert all(f"`{s}`" in row for s in enum), (starts, enum)
    definitions = (DOCS / "definitions.md").read_text()
    assert all(f"`{s}`" in _doc_row(definitions, "| status (") for s in Status)
