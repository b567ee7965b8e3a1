"""Scratch directories: {base}/<run>/ marked as the run's own, one subdirectory per slot;
a command's `{scratch}` is a fresh subdirectory of it per phase (phase-<index>), removed when
the next phase starts unless the plan keeps scratch, so no state leaks from phase to phase
(a tool that appends to its output file, as hpcc does).

A run deletes only what it created: a directory it made and marked with its run id.
"""
from __future__ import annotations

import os
import shutil

MARKER = ".manybench-run"


class Scratch:
    """The scratch directories one node's agent made for one run."""

    def __init__(self, run: str, node: str) -> None:
        self.run = run
        self.node = node
        self.created: set[str] = set()     # run directories this process made and marked
        self.phase_dirs: list[str] = []    # the phase under way's fresh directories

    def run_dir(self, base: str) -> str:
        """{base}/<run>, made and marked on first use."""
        path = os.path.join(os.path.abspath(base), self.run)
        if path not in self.created and os.path.isdir(path) and self._ours(path):
            self.created.add(path)    # left by this run id's killed coordinator (--resume)
        if path not in self.created and not os.path.isdir(path):
            os.makedirs(os.path.join(path, "shared"), exist_ok=True)
            with open(os.path.join(path, MARKER), "w") as f:
                f.write(self.run + "\n")
            self.created.add(path)
        return path

    def slot_dir(self, base: str, slot: int) -> str:
        # node in the name: on a shared file system every node's slot 0 must differ
        return os.path.join(self.run_dir(base), f"{self.node}.{slot}")

    def phase_dir(self, base: str, slot: int, phase: int) -> str:
        """The slot's fresh, empty directory for one phase (one left by a killed run of the
        same id, which --resume continues, is emptied first)."""
        path = os.path.join(self.slot_dir(base, slot), f"phase-{phase}")
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
        self.phase_dirs.append(path)
        return path

    def drop_phase_dirs(self) -> None:
        """Remove the last phase's directories (all inside the run's marked directory)."""
        for path in self.phase_dirs:
            shutil.rmtree(path, ignore_errors=True)
        self.phase_dirs = []

    def shared_dir(self, base: str) -> str:
        return os.path.join(self.run_dir(base), "shared")

    def _ours(self, path: str) -> bool:
        try:
            with open(os.path.join(path, MARKER)) as f:
                return f.read().strip() == self.run
        except OSError:
            return False

    def cleanup(self) -> list[str]:
        """Remove the run directories this process created; returns what it removed."""
        removed = []
        for path in sorted(self.created):
            try:
                with open(os.path.join(path, MARKER)) as f:
                    if f.read().strip() != self.run:
                        continue
            except OSError:
                continue
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        self.created.clear()
        return removed
