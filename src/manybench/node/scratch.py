"""Scratch directories: {base}/<run>/ marked as the run's own, one subdirectory per slot;
a command's `{scratch}` is a fresh subdirectory of it per phase (phase-<index>), removed when
the next phase starts unless the plan keeps scratch, so no state leaks from phase to phase
(a tool that appends to its output file, as hpcc does).

Scratch is hostile ground. The run's root is made fresh and owner-only (0700): it is built
under a temporary name with its marker inside and renamed into place, so an existing
{base}/<run> is used only when it is a real directory (not a link) marked with this run's
id and writable by its owner alone (another node of the run on a shared file system, or a
killed coordinator's for --resume). Below the root every directory is reached by
descriptor (kernels/scratchfs.py), so a link planted there is refused, never followed.

A run deletes only what it created: a directory it made and marked with its run id. On a
shared file system every node of the run works under the same root, each node's slot
directories named by the node, and each node present says so by a file of its own there
(.manybench-node.<node>): a node that ends removes its own directories and that file, and
the root (shared/ with it) goes with the last node out, never from under another.
"""
from __future__ import annotations

import os
import shutil
import stat
import tempfile

from ..kernels.base import KernelError
from ..kernels.scratchfs import open_below, remove_below

MARKER = ".manybench-run"
PRESENT = ".manybench-node."    # + node name: this node works under the root
TREES = "mdtest_tree."           # meta.*'s trees (kernels/meta.py), shared by the nodes


class ScratchError(Exception):
    """A scratch directory that is not safely the run's own (a message for the records)."""


class Scratch:
    """The scratch directories one node's agent made for one run."""

    def __init__(self, run: str, node: str) -> None:
        self.run = run
        self.node = node
        self.created: set[str] = set()     # run directories this process made or checked
        self.phase_dirs: list[tuple[str, str]] = []   # the phase under way's (root, rel)

    def run_dir(self, base: str) -> str:
        """{base}/<run>, made fresh and marked on first use (ScratchError: something else is
        there)."""
        path = os.path.join(os.path.abspath(base), self.run)
        if path not in self.created:
            self._make_root(path)
            self._say_present(path)
            self.created.add(path)
        return path

    def _say_present(self, path: str) -> None:
        try:
            fd = open_below(path, os.path.join(path, PRESENT + self.node),
                            os.O_WRONLY | os.O_CREAT, "scratch")
        except KernelError as e:
            raise ScratchError(str(e)) from None
        os.close(fd)

    def _make_root(self, path: str) -> None:
        tmp = None
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            # a random name made exclusively, 0700 ({path}.{node}.{pid}.tmp could be made
            # first by anyone who guessed the pid, failing the node's every phase); short,
            # as a run id may take 234 of a name's 255 bytes (its marker says whose it is)
            tmp = tempfile.mkdtemp(prefix=".manybench-root.", suffix=".tmp",
                                   dir=os.path.dirname(path))
            fd = os.open(os.path.join(tmp, MARKER),
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(self.run + "\n")
            os.mkdir(os.path.join(tmp, "shared"), 0o700)
        except OSError as e:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            raise ScratchError(f"scratch {path}: cannot be made: {e.strerror or e}") from None
        try:
            os.rename(tmp, path)     # atomic: the root appears with its marker inside
            return
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)   # one is there already: is it ours?
        try:
            st = os.lstat(path)
        except OSError as e:
            raise ScratchError(f"scratch {path}: {e.strerror or e}") from None
        if not stat.S_ISDIR(st.st_mode):
            what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a directory"
            raise ScratchError(f"scratch {path} is {what}: a run's scratch is never used "
                               "through one")
        if st.st_uid != os.geteuid():    # its marker says the run, anyone could write that
            raise ScratchError(f"scratch {path} belongs to uid {st.st_uid}, not to this run's "
                               f"user ({os.geteuid()}): it is left alone")
        if not self._ours(path):
            raise ScratchError(f"scratch {path} exists and was not made by run {self.run}: "
                               "it is left alone")
        if st.st_mode & 0o022:
            raise ScratchError(f"scratch {path} is writable by others (mode "
                               f"{stat.S_IMODE(st.st_mode):o}): a run's scratch is its "
                               "owner's alone")

    def slot_dir(self, base: str, slot: int) -> str:
        # node in the name: on a shared file system every node's slot 0 must differ
        return os.path.join(self.run_dir(base), f"{self.node}.{slot}")

    def phase_dir(self, base: str, slot: int, phase: int) -> str:
        """The slot's fresh, empty directory for one phase (one left by a killed run of the
        same id, which --resume continues, is emptied first), made by descriptor."""
        root = self.run_dir(base)
        rel = f"{self.node}.{slot}"
        try:
            fd = open_below(root, os.path.join(root, rel), os.O_DIRECTORY | os.O_CREAT,
                            "scratch")
        except KernelError as e:
            raise ScratchError(str(e)) from None
        try:
            remove_below(fd, f"phase-{phase}")
            os.mkdir(f"phase-{phase}", 0o700, dir_fd=fd)
        except OSError as e:
            raise ScratchError(f"scratch {root}/{rel}/phase-{phase}: {e.strerror or e}") \
                from None
        finally:
            os.close(fd)
        self.phase_dirs.append((root, f"{rel}/phase-{phase}"))
        return os.path.join(root, rel, f"phase-{phase}")

    def drop_phase_dirs(self) -> None:
        """Remove the last phase's directories (all inside the run's marked directory), by
        descriptor: a link planted in their place is removed, not followed."""
        for root, rel in self.phase_dirs:
            parent, name = os.path.split(rel)
            try:
                fd = open_below(root, os.path.join(root, parent), os.O_DIRECTORY, "scratch")
            except KernelError:
                continue
            try:
                remove_below(fd, name)
            except OSError:
                pass
            finally:
                os.close(fd)
        self.phase_dirs = []

    def shared_dir(self, base: str) -> str:
        return os.path.join(self.run_dir(base), "shared")

    def _ours(self, path: str) -> bool:
        try:
            fd = os.open(os.path.join(path, MARKER), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd) as f:
                return f.read(4096).strip() == self.run
        except (OSError, UnicodeDecodeError):
            return False

    def cleanup(self) -> list[str]:
        """Remove this node's directories from the run directories it used, and each run
        directory itself when no other node is present there; returns those removed."""
        removed = []
        for path in sorted(self.created):
            if os.path.islink(path) or not self._ours(path):
                continue
            try:
                fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            except OSError:
                continue
            try:
                if self._leave(fd):
                    os.rmdir(path)
                    removed.append(path)
            except OSError:
                pass      # another node came back in meanwhile: the root stays for it
            finally:
                os.close(fd)
        self.created.clear()
        return removed

    def _leave(self, fd: int) -> bool:
        """Remove this node's entries below the open root; True when it was the last node
        there (then the marker, shared/ and the meta.* trees are gone too and the root is
        empty)."""
        for name in os.listdir(fd):
            if name.startswith(f"{self.node}.") or name == PRESENT + self.node:
                remove_below(fd, name)
        names = os.listdir(fd)
        if any(n.startswith(PRESENT) for n in names):
            return False
        for name in names:    # meta.*'s trees lie in the root, as mdtest's in its test-dir
            if name.startswith(TREES):
                remove_below(fd, name)
        remove_below(fd, "shared")
        os.unlink(MARKER, dir_fd=fd)
        return True
