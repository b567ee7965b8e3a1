"""Scratch directories: {base}/<run>/ marked as the run's own, one subdirectory per slot.

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

    def run_dir(self, base: str) -> str:
        """{base}/<run>, made and marked on first use."""
        path = os.path.join(os.path.abspath(base), self.run)
        if path not in self.created and not os.path.isdir(path):
            os.makedirs(os.path.join(path, "shared"), exist_ok=True)
            with open(os.path.join(path, MARKER), "w") as f:
                f.write(self.run + "\n")
            self.created.add(path)
        return path

    def slot_dir(self, base: str, slot: int) -> str:
        # node in the name: on a shared file system every node's slot 0 must differ
        return os.path.join(self.run_dir(base), f"{self.node}.{slot}")

    def shared_dir(self, base: str) -> str:
        return os.path.join(self.run_dir(base), "shared")

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
