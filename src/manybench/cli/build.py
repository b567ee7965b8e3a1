"""`mpi-build` and `bundle`: the programs and wheels manybench builds for a cluster."""
from __future__ import annotations

import click

from ..printable import echo
from .errors import fail
from .params import Registry


@click.command("mpi-build")
@click.option("--family", type=Registry(".kernels.mpi_program", "COMPILERS"), default="auto",
              show_default=True, help="Whose compiler wrapper: mpicc.openmpi, mpicc.mpich, "
                                      "or the mpicc on PATH.")
@click.option("--mpicc", help="The compiler wrapper to use instead (a name on PATH or a path).")
@click.option("--force", is_flag=True, help="Build again even when a cached build exists.")
@click.option("--program", type=Registry(".kernels.mpi_program", "PROGRAMS"), default="mbmpi",
              show_default=True, help="mbmpi (ping-pong, bandwidth, collectives) or mbhimeno "
                                      "(Himeno with MPI ranks and OpenMP threads).")
@click.option("--image", type=click.Path(file_okay=False),
              help="Also make this directory a container image (ch-run, Apptainer sandbox) "
                   "holding the program and a copy of this machine's MPI; print the "
                   "program's path inside it.")
@click.option("--add", "add", multiple=True, metavar="PROGRAM",
              type=click.Path(exists=True, dir_okay=False),
              help="Put this program in the image too (/usr/local/bin), with every library "
                   "it loads (a C++ program's libstdc++ ...); may be given again.")
def mpi_build(family: str, mpicc: str | None, force: bool, program: str,
              image: str | None, add: tuple[str, ...]) -> None:
    """Build mbmpi, the project's MPI test program (ping-pong, bandwidth, collectives over
    message sizes; `parse = "osu"` reads its output), or mbhimeno, and print its path
    (docs/mpi.md)."""
    from ..kernels.mpi_image import ImageError, build_image
    from ..kernels.mpi_program import MpiBuildError, build
    if add and not image:
        raise click.UsageError("--add puts programs in an image: give --image DIR with it")
    try:
        exe = build(family, mpicc, force, program)
        echo(build_image(image, exe, family, add) if image else exe)
    except (MpiBuildError, ImageError) as e:
        raise fail(str(e))
    except OSError as e:
        raise fail(f"--image {image}: {e.strerror or e}")


@click.command()
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--source", type=click.Path(file_okay=False), help="manybench's source tree "
              "(default: the one this manybench runs from).")
@click.option("--python-version", metavar="X.Y", help="Target Python (default: this one).")
@click.option("--platform", metavar="TAG", help="Target platform tag, e.g. manylinux2014_x86_64.")
@click.option("--extra", "extras", multiple=True, help="Also bundle an extra (e.g. parquet, test).")
@click.option("--native", is_flag=True, help="Build the C kernels for this processor "
              "(-march=native), not portable (the default).")
def bundle(directory: str, source: str | None, python_version: str | None,
           platform: str | None, extras: tuple[str, ...], native: bool) -> None:
    """Write wheels of manybench and every dependency into DIRECTORY, for
    `pip install --no-index --find-links DIRECTORY manybench` with no network."""
    from ..bundle import BundleError, build_note, bundle as write_bundle
    try:
        files = write_bundle(directory, source, python_version, platform, extras, native)
    except BundleError as e:
        raise fail(str(e)) from None
    except OSError as e:      # DIRECTORY cannot be made or written (a read-only mount)
        raise fail(f"{directory}: cannot write: {e.strerror or e}") from None
    echo(build_note(native))
    req = f"'manybench[{','.join(extras)}]'" if extras else "manybench"
    echo(f"{len(files)} files in {directory}; install with:\n"
         f"  pip install --no-index --find-links {directory} {req}")


COMMANDS = (mpi_build, bundle)
