"""`report` and `export`: a results directory read, as tables, a page, figures, JSON or a
table's rows in a file."""
from __future__ import annotations

import json

import click

from ..printable import echo
from . import errors as errs
from .errors import fail
from .params import Registry


@click.command()
@click.argument("directory", type=click.Path())
@click.option("--html", "html_path", type=click.Path(dir_okay=False),
              help="Also write an HTML report: one self-contained file with figures.")
@click.option("--plots", "plots_dir", type=click.Path(file_okay=False),
              help="Also write every figure as PNG and SVG into this directory.")
@click.option("--run", "run_id", help="Which run of the directory (default: the latest).")
@click.option("--metrics", "metrics", metavar="A,B",
              help="Show these figures instead of each task's headline (bandwidth, ops_rate, "
                   "latency, skew, lateness, cycle, elapsed, sync_overhead, stonewall, or a "
                   "metric).")
@click.option("--all", "all_columns", is_flag=True, help="Show every figure of every task.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the report's numbers as JSON instead of tables: every figure of "
                   "every point with n, median, interval and unit, and the throughput series.")
def report(directory: str, html_path: str | None, plots_dir: str | None, run_id: str | None,
           metrics: str | None, all_columns: bool, as_json: bool) -> None:
    """Print the report of a results directory."""
    figures = [m.strip() for m in metrics.split(",") if m.strip()] if metrics else None
    if metrics is not None and not figures:
        raise fail("--metrics: give figure names separated by commas, e.g. bandwidth,latency")
    with errs.reading_results(directory, run_id), errs.open_results(directory) as store:
        errs.check_run(store, run_id)
        if not store.runs():
            raise errs.UserError(f"{store.path}: no runs recorded")
        if html_path:      # unwritable: exit 2 before any output
            errs.output_file(html_path, option="--html")
        from ..report.build import chosen_runs, read_run, views_of
        from ..report.terminal import render_views
        try:    # each run read and summarised once: tables, JSON, page and figures from it
            data = [read_run(store, r) for r in chosen_runs(store, run_id, False)]
            views = views_of(store, data, figures, all_columns, keep=bool(html_path or plots_dir)) \
                if not as_json or html_path or plots_dir else []
        except (KeyError, ValueError) as e:
            raise fail(str(e).strip("'\""))
        if as_json:      # the numbers by machine on stdout, instead of the tables
            from ..report.summary import summary_of
            echo(json.dumps(summary_of(store, data), indent=1))
        else:
            render_views(views)
        if html_path:
            from ..outfile import replacing
            from ..report.html import page_of_views
            with errs.writing(html_path, "--html"), \
                    replacing(html_path, encoding="utf-8") as f:
                f.write(page_of_views(store, views))
            echo(f"wrote {html_path}", err=True)
        if plots_dir:
            from ..report.plots import write_plots
            with errs.writing(plots_dir, "--plots"):
                written = write_plots(store, plots_dir, run_id=views[-1].run_id,
                                      data=views[-1].data)
            echo(f"wrote {len(written)} files in {plots_dir}", err=True)


@click.command()
@click.argument("directory", type=click.Path())
@click.option("--format", "fmt", type=Registry(".results.export", "EXPORTERS"), default="csv",
              show_default=True, help="parquet needs pyarrow, which a plain install leaves "
                                      "out: the parquet extra (pip install '.[parquet]').")
@click.option("--table", type=Registry(".results.frames", "TABLES"), default="records",
              show_default=True)
@click.option("--nested", is_flag=True,
              help="Keep params, metrics and inventory as JSON objects, not flattened into "
                   "param.*, metric.*, inventory.* columns (csv, parquet).")
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False), help="File (default stdout).")
@click.option("--run", "run_id", help="Only this run (default: every run in the directory).")
@click.option("--partition", is_flag=True,
              help="Parquet records as a dataset: -o DIR, a new directory of one file per run "
                   "and phase (DIR/RUN/phase-N.parquet) that pandas, DuckDB and "
                   "dask.dataframe.read_parquet read as one table.")
def export(directory: str, fmt: str, table: str, nested: bool, out: str | None,
           run_id: str | None, partition: bool) -> None:
    """Export a table, one row each: records (the contract's columns first), phases, samples,
    telemetry, nodes or series (docs/results-api.md). Records are read and written a phase
    at a time: memory does not grow with them."""
    from ..results.export_cli import export_table
    with errs.reading_results(directory, run_id), errs.open_results(directory) as store:
        errs.check_run(store, run_id)
        if out and not partition:    # unopenable: exit 2 naming -o before anything is written
            errs.output_file(out)
        with errs.writing(out or "stdout"):
            msg = export_table(store, table, fmt, out, run_id, nested, partition)
    if msg:
        raise fail(msg)


COMMANDS = (report, export)
