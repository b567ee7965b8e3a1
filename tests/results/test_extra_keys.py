"""A record's `extra` keys are declared once (issue 33, item 4): extra_keys.py, with their
meaning, or a kernel's facts (kernels/facts.py); src/ names a key by its constant, never as
bare text, wherever it writes or reads one."""
from __future__ import annotations

import ast
from pathlib import Path

from suite_paths import ROOT

import manybench
from manybench import extra_keys
from manybench.extra_keys import EXTRA_KEYS
from manybench.kernels import KERNELS
from manybench.kernels.facts import EXTRA

SRC = Path(manybench.__file__).parent
FACTS = {f.name for k in KERNELS.values() for f in k.facts if f.source == EXTRA}
# dicts src/ calls `extra` that are not a record's: each with why
NOT_A_RECORDS = {("launchers/slurm.py", "SLURM_HOSTFILE"): "the launcher's environment"}


def _is_extra(node: ast.AST) -> bool:
    """An expression naming a record's extra: `extra`, `r.extra`, `(r.extra or {})`, `x`."""
    if isinstance(node, ast.Name):
        return node.id in ("x", "xs") or node.id.endswith("extra")
    if isinstance(node, ast.Attribute):
        return node.attr == "extra"
    if isinstance(node, ast.BoolOp):
        return any(_is_extra(v) for v in node.values)
    return False


def _text(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def keys(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, key) of every key given as text where src/ writes or reads a record's extra."""
    out: list[tuple[int, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_extra(node.value):
            out.append((node.lineno, _text(node.slice)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and _is_extra(node.func.value)
              and node.func.attr in ("get", "setdefault", "pop", "update")):
            out.append((node.lineno, _text(node.args[0]) if node.args else None))
            out += [(node.lineno, k.arg) for k in node.keywords]
        elif (isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn))
              and _is_extra(node.comparators[0])):
            out.append((node.lineno, _text(node.left)))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "repeat":
            # map(contains, extras, repeat("warnings")): a key looked up in every record
            out.append((node.lineno, _text(node.args[0]) if node.args else None))
        made = None
        if isinstance(node, ast.Assign) and any(map(_is_extra, node.targets)):
            made = node.value
        elif isinstance(node, ast.keyword) and node.arg == "extra":
            made = node.value
        if isinstance(made, ast.Dict):
            out += [(made.lineno, _text(k)) for k in made.keys if k is not None]
    return [(line, k) for line, k in out if k is not None]


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        if path.name != "extra_keys.py":
            yield path.relative_to(SRC).as_posix(), ast.parse(path.read_text(), str(path))


def undeclared_or_bare(src_keys: dict[str, list[tuple[int, str]]]) -> list[str]:
    out = []
    for path, found in src_keys.items():
        for line, k in found:
            if (path, k) in NOT_A_RECORDS or k in FACTS:
                continue    # a fact's name is declared with its kernel, beside its writer
            why = "use extra_keys' constant" if k in EXTRA_KEYS else "declare it in extra_keys.py"
            out.append(f"{path}:{line}: {k!r}: {why}")
    return out


def test_every_extra_key_src_names_is_declared_and_named_by_its_constant():
    found = {path: keys(tree) for path, tree in _modules()}
    assert not undeclared_or_bare(found), "\n".join(undeclared_or_bare(found))


def test_the_scan_finds_keys_given_as_text():
    code = '''
extra = {"stdout": out, "argv": a}
r.extra["rank"]
(r.extra or {}).get("missing_metrics")
extra.update(stderr=err)
said = map(contains, extras, repeat("warnings"))
if "series" in x: pass
Result(extra={"blas_trials": t, "made_up": 1})
first.extra["mpi_transport"] = text
'''
    got = undeclared_or_bare({"x.py": keys(ast.parse(code))})
    assert sorted(g.split(": ")[1] for g in got) == sorted([
        "'stdout'", "'argv'", "'rank'", "'missing_metrics'", "'stderr'", "'warnings'",
        "'series'", "'blas_trials'", "'made_up'"])      # mpi_transport: a fact
    assert [g for g in got if "declare it in extra_keys.py" in g] == [
        "x.py:8: 'made_up': declare it in extra_keys.py"]


def test_each_declared_key_has_a_meaning_and_a_use_and_none_is_also_a_fact():
    assert EXTRA_KEYS and all(len(m) > 20 for m in EXTRA_KEYS.values())
    constants = {n for n, v in vars(extra_keys).items()
                 if n.isupper() and isinstance(v, str) and v in EXTRA_KEYS}
    assert {getattr(extra_keys, n) for n in constants} == set(EXTRA_KEYS)
    used = set()
    for _, tree in _modules():
        aliases = set()    # `from .. import extra_keys as X`: X.JOB
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("extra_keys"):
                used |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                aliases |= {a.asname or a.name for a in node.names if a.name == "extra_keys"}
        used |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                 and isinstance(node.value, ast.Name) and node.value.id in aliases}
    assert constants <= used, sorted(constants - used)
    assert not FACTS & set(EXTRA_KEYS)


def test_the_docs_name_every_key():
    results = (ROOT / "docs" / "results.md").read_text()
    assert [k for k in sorted({*EXTRA_KEYS, *FACTS}) if f"`{k}`" not in results] == []
