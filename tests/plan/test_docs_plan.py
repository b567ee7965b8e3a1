"""docs/plan.md documents every field the plan validator accepts: a field added to
plan/schema.py without a word in the reference fails here, naming it."""
from __future__ import annotations

import re

from suite_paths import ROOT

from manybench.plan.schema import _SCHEMA

DOC = ROOT / "docs" / "plan.md"


def _fields(schema: dict, path: str = "") -> list[str]:
    """Dotted paths of every named field in the schema (into tables and arrays of tables)."""
    out = []
    for branch in [schema, *schema.get("anyOf", []), schema.get("items") or {}]:
        if not isinstance(branch, dict):
            continue
        for name, sub in branch.get("properties", {}).items():
            p = f"{path}.{name}" if path else name
            out.append(p)
            out.extend(_fields(sub, p))
        if branch is not schema and branch.get("items"):
            out.extend(_fields(branch["items"], path))
    return sorted(set(out))


def test_the_walk_finds_nested_fields():
    names = _fields(_SCHEMA)
    assert {"repeat", "placement.workers", "task.command", "variant.wrap",
            "cluster.tls.ca_file", "concurrent.tasks"} <= set(names)


def test_every_accepted_field_is_in_docs_plan_md():
    text = DOC.read_text()
    # a field counts as documented when it is written as code: `name`, `name = ...`,
    # or inside a code span such as `{ cpus = "0-3", mems = "0" }`
    # or as a key in one of the TOML examples (fenced blocks)
    parts = re.split(r"^```.*$", text, flags=re.M)
    blocks = parts[1::2]
    spans = blocks + [s for prose in parts[::2] for s in re.findall(r"`([^`]+)`", prose)]
    documented = {w for s in spans for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", s)}
    missing = [f for f in _fields(_SCHEMA) if f.rsplit(".", 1)[-1] not in documented]
    assert not missing, f"fields the validator accepts but docs/plan.md never names: {missing}"
