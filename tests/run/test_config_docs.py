"""The docs read their timings from the configuration: docs/configuration.md's table is
written from config/manybench.yaml and schema.yaml, and every value a page quotes with its key
("every 2 s (`lease.renew`)") is the default's."""
from __future__ import annotations

from pathlib import Path

from manybench.config import defaults
from manybench.config.doc import BEGIN, QUOTED, main, quoted_seconds

# the tree this test is in, wherever in tests/ it sits
ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]


def disagreements(text: str, known: dict[str, float]) -> list[str]:
    """Each quoted value whose key is unknown or whose default is another."""
    out = []
    for m in QUOTED.finditer(text):
        number, unit, key = m.groups()
        if key not in known:
            out.append(f"{m.group(0)}: no such key")
        elif abs(quoted_seconds(number, unit) - known[key]) > 1e-9 * known[key]:
            out.append(f"{m.group(0)}: the default is {known[key]:g} s")
    return out


def test_the_pages_table_of_timings_is_the_packages():
    page = ROOT / "docs" / "configuration.md"
    assert BEGIN in page.read_text(encoding="utf-8")
    assert main(["--check", str(page)]) == 0, "python -m manybench.config.doc --write " \
                                              "docs/configuration.md"


def test_no_page_quotes_a_timing_the_defaults_disagree_with():
    known = defaults()
    found = {}
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        found[page.name] = disagreements(text, known)
    assert not {p: d for p, d in found.items() if d}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert {m.group(3) for m in QUOTED.finditer(readme)} >= {"lease.length", "lease.renew"}


def test_a_quote_that_disagrees_is_found():
    known = defaults()
    assert disagreements("renewed every 2 s (`lease.renew`)", known) == []
    assert disagreements("runs out after 15 s (`lease.length`)", known) == [
        "15 s (`lease.length`): the default is 10 s"]
    assert disagreements("within 5 minutes (`mpi.startup_timeout`)", known) == []
    assert disagreements("within 3 s (`lease.lenght`)", known) == [
        "3 s (`lease.lenght`): no such key"]


def test_a_changed_default_makes_the_page_stale(tmp_path, monkeypatch):
    from manybench import config
    page = tmp_path / "configuration.md"
    page.write_text((ROOT / "docs" / "configuration.md").read_text(encoding="utf-8"))
    assert main(["--check", str(page)]) == 0
    changed = tmp_path / "manybench.yaml"
    changed.write_text(Path(config.DEFAULTS).read_text().replace("length: 10s", "length: 12s"))
    monkeypatch.setattr("manybench.config.doc.DEFAULTS", str(changed))
    assert main(["--check", str(page)]) == 1
    assert main(["--write", str(page)]) == 0 and main(["--check", str(page)]) == 0
    assert "| `lease.length` | 12s |" in page.read_text()


def test_the_pages_example_of_a_bad_value_is_what_the_command_says(tmp_path):
    import pytest
    from manybench.config import ConfigError, read
    with pytest.raises(ConfigError) as e:
        read({"XDG_CONFIG_HOME": str(tmp_path), "MANYBENCH_LEASE__RENEW": "12s"})
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert f"manybench: configuration: {e.value}\n" in page
