"""A container image for MPI programs, made from this machine without a network: a directory
image (what Charliecloud's ch-run and Apptainer's sandboxes run) holding the programs, every
shared library they load, and the MPI's own plugins, help texts and configuration, copied
from the host at their own paths (as Charliecloud's `ch-fromhost` injects a host's MPI).

    from manybench.kernels.mpi_image import build_image
    inside = build_image("/tmp/img", "/path/to/mbmpi", "openmpi")   # -> "/usr/local/bin/mbmpi"

Its MPI is a copy of the host's, so a container run and a host run differ only by the
container. An image with an MPI of its own build comes from a registry or a Dockerfile
(ch-image build), which needs a network.
"""
from __future__ import annotations

import os
import shutil
import subprocess

# what ch-run binds over (and Apptainer expects), made empty
MOUNT_POINTS = ("dev", "proc", "sys", "tmp", "home", "mnt", "run", "var/tmp", "usr/local/bin")
ETC_FILES = ("hosts", "resolv.conf", "passwd", "group")
# per family: directories beside its libraries that it loads plugins from (dlopen: ldd does
# not see them), and data it reads at run time (help texts, default parameters)
PLUGIN_DIRS = {"openmpi": ("openmpi", "pmix", "pmix2", "ucx"), "mpich": ("ucx", "mpich")}
DATA_DIRS = {"openmpi": ("/usr/share/openmpi", "/usr/share/pmix", "/etc/openmpi"),
             "mpich": ("/etc/mpich",)}
MARKER = ".manybench-mpi-image"


class ImageError(RuntimeError):
    """The image cannot be made (the message says why)."""


def _needed(paths: list[str]) -> set[str]:
    """The shared libraries (and the loader) the ELF files in `paths` load, by `ldd`."""
    out: set[str] = set()
    for p in paths:
        try:
            done = subprocess.run(["ldd", p], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ImageError(f"ldd {p}: {e}") from None
        for line in done.stdout.splitlines():
            words = line.split()
            if "=>" in words and len(words) > words.index("=>") + 1:
                lib = words[words.index("=>") + 1]
            elif words and words[0].startswith("/"):
                lib = words[0]
            else:
                continue
            if lib.startswith("/"):
                out.add(lib)
    return out


def _put(root: str, path: str) -> None:
    """`path` at its own place under root: every link on the way (libmpi.so.40 ->
    libmpi.so.40.30.4, Debian's /etc/alternatives) and the file it ends at."""
    for _ in range(40):     # the kernel's own bound on a chain of links
        here = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        dst = root + here
        if os.path.islink(here):
            if not os.path.lexists(dst):
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                os.symlink(os.readlink(here), dst)
        elif not _same(here, dst):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(here, dst)
        if not os.path.islink(here):
            return
        path = os.path.join(os.path.dirname(here), os.readlink(here))


def _same(src: str, dst: str) -> bool:
    """dst is already a copy of src (same size and time: copy2 keeps it)."""
    try:
        a, b = os.stat(src), os.lstat(dst)
    except FileNotFoundError:
        return False
    return (a.st_size, int(a.st_mtime)) == (b.st_size, int(b.st_mtime))


def _tree(root: str, path: str) -> list[str]:
    """A directory copied to its own place under root; the shared objects in it."""
    real = os.path.realpath(path)
    libs = []
    for d, _, files in os.walk(real):
        os.makedirs(root + d, exist_ok=True)
        for f in files:
            src, dst = os.path.join(d, f), root + os.path.join(d, f)
            if os.path.islink(src):
                if os.path.lexists(dst) and os.readlink(dst) != os.readlink(src):
                    os.unlink(dst)
                if not os.path.lexists(dst):
                    os.symlink(os.readlink(src), dst)
                continue
            if not _same(src, dst):
                shutil.copy2(src, dst)
            if ".so" in f:
                libs.append(src)
    return libs


def build_image(root: str, program: str, family: str, others: tuple[str, ...] = ()) -> str:
    """Make `root` a directory image holding `program` (and `others`) in /usr/local/bin with
    everything they and `family`'s MPI load; returns the program's path inside. An image
    made here before (its marker says so) is brought up to date, keeping the programs put in
    it; any other existing directory is refused (nothing of it is touched)."""
    if family not in PLUGIN_DIRS and family != "auto":
        raise ImageError(f"unknown MPI family {family!r} (known: {', '.join(PLUGIN_DIRS)})")
    # "auto" (the wrapper on PATH, whichever it is): what either family loads
    names = [family] if family != "auto" else list(PLUGIN_DIRS)
    plugin_dirs = tuple(dict.fromkeys(d for n in names for d in PLUGIN_DIRS[n]))
    data_dirs = tuple(dict.fromkeys(d for n in names for d in DATA_DIRS[n]))
    root = os.path.abspath(root)
    if os.path.exists(root) and not os.path.exists(os.path.join(root, MARKER)):
        raise ImageError(f"{root} exists and is not an image made by manybench: "
                         "give a new directory")
    programs = [program, *others]
    for d in MOUNT_POINTS + ("etc",):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for f in ETC_FILES:
        open(os.path.join(root, "etc", f), "a").close()
    # the loader's cache names the libraries outside its default directories (Debian's
    # /usr/lib/libpsm1, say) at the paths they are copied to; copied, as ldconfig -r would
    # need privileges
    for f in ("ld.so.cache", "ld.so.conf"):
        if os.path.isfile("/etc/" + f):
            shutil.copy2("/etc/" + f, os.path.join(root, "etc", f))
    if os.path.isdir("/etc/ld.so.conf.d"):
        _tree(root, "/etc/ld.so.conf.d")
    for top in ("bin", "sbin", "lib", "lib32", "lib64"):     # merged /usr, as on the host
        if os.path.islink("/" + top) and not os.path.lexists(os.path.join(root, top)):
            os.symlink(os.readlink("/" + top), os.path.join(root, top))
    libs = _needed(programs)
    mpi_dirs = {os.path.dirname(os.path.realpath(p)) for p in libs}
    plugins: list[str] = []
    for d in sorted(mpi_dirs):
        for name in plugin_dirs:
            if os.path.isdir(os.path.join(d, name)):
                plugins += _tree(root, os.path.join(d, name))
    for lib in sorted(libs | _needed(plugins)):
        _put(root, lib)
    for d in data_dirs:
        if os.path.isdir(d):
            _tree(root, d)
    for p in programs:
        shutil.copy2(p, os.path.join(root, "usr/local/bin", os.path.basename(p)))
    open(os.path.join(root, MARKER), "w").close()
    return "/usr/local/bin/" + os.path.basename(program)
