"""`manybench bundle DIR`: wheels of manybench and of every dependency, for installing on a
machine with no network (clusters behind a closed network install from mirrors):

    pip install --no-index --find-links DIR manybench

manybench's own wheel is built from its source tree (it compiles the C kernels, so it is a
wheel for this interpreter and platform; a different target gets the sdist as well, built
there by pip with setuptools and wheel, which are bundled too). Dependencies come as wheels:
for this interpreter `pip wheel` (which also builds any dependency published only as an
sdist); for another target `pip download --only-binary=:all:` with its Python version and
platform tags, since nothing can be built for it here.

manybench's wheel is built portable, setup.py's default (x86-64-v2, the hot loops cloned for
v3 and v4 and picked at load time), as the bundle installs on nodes that may be older than
the bundling machine; `native=True` (`--native`) builds it for this processor
(MANYBENCH_MARCH=native), for nodes of the same kind (another is refused when it loads it). An sdist for another target is built there, for
that machine.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path


STAGE = ".bundle-"     # the directory a bundle is written into before it replaces the files


class BundleError(Exception):
    """The bundle cannot be written (a message for the user)."""


def _is_source(root: Path) -> bool:
    py = root / "pyproject.toml"
    return py.is_file() and 'name = "manybench"' in py.read_text()


def source_tree(given: str | None = None) -> Path:
    """The manybench source tree: the one given, else the one this module was imported
    from (src/manybench -> the directory holding pyproject.toml), else the current directory
    (an installed package is no source tree: the repository it was installed from is)."""
    if given:
        root = Path(given).resolve()
    else:
        root = Path(__file__).resolve().parent.parent.parent
        if not _is_source(root):
            root = Path.cwd().resolve()
    if not _is_source(root):
        raise BundleError(f"{root} is not a manybench source tree (no pyproject.toml naming "
                          "manybench); pass --source with the repository's directory")
    return root


def _pip(*args: str, env: dict[str, str] | None = None) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    # The user's pip config may point --find-links elsewhere; the bundle must be whole.
    env = {**{k: v for k, v in os.environ.items() if k not in ("PIP_FIND_LINKS", "PIP_NO_INDEX",
                                                               "MANYBENCH_MARCH")},
           **(env or {})}
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        tail = "\n".join((res.stderr or res.stdout).strip().splitlines()[-12:])
        raise BundleError(f"pip {args[0]} failed:\n{tail}")


def this_target() -> tuple[str, str]:
    """(python version 'X.Y', platform tag) of this interpreter."""
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{sys.version_info[0]}.{sys.version_info[1]}", plat


def build_note(native: bool) -> str:
    """What the bundle says of how manybench's C kernels were compiled."""
    if native:
        return ("manybench's C kernels built -march=native: for nodes with this processor's "
                "instruction sets (a node without them refuses to load them)")
    return ("manybench's C kernels built portable (-march=x86-64-v2, the hot loops also for "
            "x86-64-v3 and v4, picked on each node): they run on any x86-64-v2 node; --native "
            "builds them for this processor")


def bundle(directory: str, source: str | None = None, python_version: str | None = None,
           platform: str | None = None, extras: tuple[str, ...] = (), native: bool = False
           ) -> list[str]:
    """Write the wheels into `directory`; return the file names there. native: build
    manybench's C kernels for this processor (-march=native), not portable."""
    root = source_tree(source)
    out = Path(directory).resolve()
    out.mkdir(parents=True, exist_ok=True)
    # written into a directory of its own inside `out`, then each file renamed into place:
    # a full disk or a failing pip leaves an older bundle's files as they were
    stage = Path(tempfile.mkdtemp(prefix=STAGE, dir=out))
    try:
        _write(root, stage, python_version, platform, extras, native)
        for p in stage.iterdir():
            os.replace(p, out / p.name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return sorted(p.name for p in out.iterdir() if not p.name.startswith(STAGE))


def _write(root: Path, out: Path, python_version: str | None, platform: str | None,
           extras: tuple[str, ...], native: bool) -> None:
    """The bundle's files into `out`."""
    here_py, here_plat = this_target()
    foreign = (python_version not in (None, here_py)) or (platform not in (None, here_plat))
    req = "manybench" + (f"[{','.join(extras)}]" if extras else "")
    # manybench itself, built from a clean copy of the tree (an in-tree build would leave
    # build/ behind, and a stale build/ or in-place .so would be packed as it is)
    with tempfile.TemporaryDirectory(prefix="manybench-bundle-") as tmp:
        copy = Path(tmp) / "src"
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns(
            ".git", "build", "dist", "*.egg-info", "*.so", "__pycache__", ".pytest_cache"))
        _pip("wheel", "--no-deps", "-w", str(out), str(copy),
             env={"MANYBENCH_MARCH": "native"} if native else {})
    if not foreign:
        # every dependency as a wheel, manybench resolved from the wheel just written
        _pip("wheel", "-w", str(out), "--find-links", str(out), req)
        _pip("download", "-d", str(out), "setuptools>=64", "wheel")
    else:
        # the target builds manybench from its sdist (with the bundled setuptools and wheel)
        _sdist(root, out)
        tags = ["--only-binary=:all:", "--implementation", "cp"]
        if python_version:
            tags += ["--python-version", python_version]
        if platform:
            tags += ["--platform", platform]
        deps = _requirements(out, extras)
        _pip("download", "-d", str(out), *tags, *deps, "setuptools>=64", "wheel")


def _sdist(root: Path, out: Path) -> None:
    """manybench's source archive, for a target this interpreter cannot build a wheel for."""
    base = out / f"manybench-{_version(root)}"
    shutil.make_archive(str(base), "gztar", root_dir=root.parent, base_dir=root.name)


def _version(root: Path) -> str:
    for line in (root / "pyproject.toml").read_text().splitlines():
        if line.startswith("version"):
            return line.split("=", 1)[1].strip().strip('"')
    return "0"


def _requirements(out: Path, extras: tuple[str, ...]) -> list[str]:
    """manybench's requirements, read from the metadata of the wheel in `out`."""
    import zipfile
    wheels = sorted(out.glob("manybench-*.whl"))
    if not wheels:
        raise BundleError(f"no manybench wheel in {out}")
    with zipfile.ZipFile(wheels[-1]) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        lines = z.read(meta).decode().splitlines()
    reqs = []
    for line in lines:
        if not line.startswith("Requires-Dist:"):
            continue
        spec = line.split(":", 1)[1].strip()
        if "extra ==" in spec:
            extra = spec.split("extra ==")[1].strip().strip("'\"")
            if extra not in extras:
                continue
            spec = spec.split(";")[0].strip()
        reqs.append(spec)
    return reqs
