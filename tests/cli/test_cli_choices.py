"""The command line's choices are the registries' names, read from the registries: a format,
table, cluster kind or MPI family added to its table is offered at once (issue 16, item 8)."""
from __future__ import annotations

import click
from click.testing import CliRunner

from manybench.cli import main
from manybench.engines.clusters import CLUSTERS
from manybench.kernels.mpi_program import COMPILERS, PROGRAMS
from manybench.results import export
from manybench.results.frames import TABLES


def _choice_options() -> dict[tuple[str, str], click.Choice]:
    """(command, option name) -> its Choice, for every Choice option of every command."""
    return {(name, p.name): p.type for name, cmd in main.commands.items()
            for p in cmd.params if isinstance(p.type, click.Choice)}


def test_every_choice_of_the_command_line_equals_its_registry():
    registries = {("export", "fmt"): tuple(export.EXPORTERS), ("export", "table"): TABLES,
                  ("run", "cluster"): tuple(CLUSTERS), ("mpi-build", "family"): tuple(COMPILERS),
                  ("mpi-build", "program"): tuple(PROGRAMS)}
    choices = _choice_options()
    assert set(choices) == set(registries)     # no Choice the test does not know of
    for key, names in registries.items():
        assert tuple(choices[key].choices) == names, key


def test_a_format_added_to_the_exporters_is_offered_by_export(monkeypatch, tmp_path):
    written = []
    monkeypatch.setitem(export.EXPORTERS, "lines",
                        lambda rows, columns, out: written.append(list(rows)))
    res = CliRunner().invoke(main, ["export", str(tmp_path), "--format", "lines"])
    # accepted as a choice: the command goes on and finds no results there
    assert "Invalid value for '--format'" not in res.output, res.output
    assert "no results.db" in res.output, res.output
    assert "lines" in CliRunner().invoke(main, ["export", "--help"]).output
