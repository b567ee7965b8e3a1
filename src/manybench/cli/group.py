"""The `manybench` group every command joins: its help, its version, and an interrupt inside
any command as exit 130."""
from __future__ import annotations

import click

from ..printable import echo
from .errors import UserError


class _Main(click.Group):
    """Any interrupt inside a command that the command did not turn into its own exit (a
    big plan's expansion, start-up, a report) is exit 130, not click's "Aborted!" (1)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            from ..run.interrupts import signals_ignored
            with signals_ignored():
                echo("interrupted", err=True)
                raise click.exceptions.Exit(130) from None


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="manybench")
def main() -> None:
    """Synchronized many-task benchmarks: many slots start at the same instant, phase after
    phase; results land in results.db and come out as reports."""
    from ..config import ConfigError, check
    try:       # an override read before any command: a bad timing is exit 2 here, not mid-run
        check()
    except ConfigError as e:
        raise UserError(f"configuration: {e}") from None
