"""What the scale benchmarks share: the source tree before a change, checked out beside this
one (`--before REF`), and a namespace cluster running either tree's code."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from netns import Lab, netns_available  # noqa: E402,F401

ROOT = os.path.dirname(harness.SRC)
SCHED_PORT = 8786


def before_tree(ref: str) -> str:
    """A worktree of `ref` in a temporary directory, its C extension this tree's own build
    when the C sources are the same (else built there)."""
    d = tempfile.mkdtemp(prefix="mb-before-")
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "-f", "--detach", d, ref],
                   check=True, capture_output=True)
    same = subprocess.run(["git", "-C", ROOT, "diff", "--quiet", ref, "--",
                           "src/manybench/kernels/native", "setup.py"]).returncode == 0
    so = [f for f in os.listdir(os.path.join(harness.SRC, "manybench")) if f.startswith("_native")]
    if same and so:
        shutil.copy(os.path.join(harness.SRC, "manybench", so[0]),
                    os.path.join(d, "src", "manybench"))
    else:
        subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=d,
                       check=True, capture_output=True)
    return d


def trees_with_before(ref: str) -> tuple[dict[str, str], str | None]:
    """{"this tree": ROOT, "before": a worktree of ref} (no "before" when ref is ""), and
    that worktree's path to drop_tree when done."""
    made = before_tree(ref) if ref else None
    return {"this tree": ROOT, **({"before": made} if made else {})}, made


def load_text() -> str:
    """The machine's load average (1, 5, 15 minutes), for the figures' heading."""
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def drop_tree(d: str) -> None:
    subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", d], capture_output=True)
    shutil.rmtree(d, ignore_errors=True)


def secured(tree: str) -> bool:
    """Whether the tree's clusters are secured by default (issue 28): its nodes and runs then
    need the cluster's credentials."""
    return os.path.exists(os.path.join(tree, "src", "manybench", "security", "credentials.py"))


def env_of(tree: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.path.join(tree, "src")}
    if secured(tree):
        from cluster_lab import ensure_credentials
        env["MANYBENCH_CREDENTIALS"] = ensure_credentials()
    return env


class NodeLab:
    """A scheduler in namespace 0 and one `manybench worker --slots N` per node namespace,
    running `tree`'s code."""

    def __init__(self, nodes: int, tree: str, slots: int = 1) -> None:
        self.lab = Lab(nodes + 1)
        try:
            ip0, env = self.lab.ip(0), env_of(tree)
            # each tree's cluster as it starts by default: a tree secured by default (issue
            # 28) with the cluster's credentials, an older one plain
            sched = (["-m", "manybench", "scheduler", "--host", ip0, "--port", str(SCHED_PORT)]
                     if secured(tree) else
                     ["-m", "distributed.cli.dask_scheduler", "--host", ip0, "--port",
                      str(SCHED_PORT), "--dashboard-address", ":0", "--no-show"])
            self.sched = self.lab.popen(0, [sys.executable, *sched], env=env,
                                        stderr=subprocess.DEVNULL)
            self.lab.wait_port(0, SCHED_PORT, 60, proc=self.sched)
            self.scheduler = f"{'tls' if secured(tree) else 'tcp'}://{ip0}:{SCHED_PORT}"
            self.workers = [self.lab.popen(i, [sys.executable, "-m", "manybench", "worker",
                                               self.scheduler, "--name", f"n{i:02d}",
                                               "--slots", str(slots), "--host", self.lab.ip(i)],
                                           env=env, stderr=subprocess.DEVNULL)
                            for i in range(1, nodes + 1)]
            from distributed import Client
            sec = None
            if secured(tree):
                from manybench.security.credentials import load
                sec = load(env["MANYBENCH_CREDENTIALS"]).security()
            with Client(self.scheduler, timeout="60s", security=sec) as c:
                c.wait_for_workers(nodes, timeout=600)
            time.sleep(0.5)
        except BaseException:
            self.lab.close()
            raise

    def close(self) -> None:
        self.lab.close()


def machine() -> str:
    """The processor and cpus this machine has (lscpu), for the figures' heading."""
    model = "unknown processor"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = next((ln.split(":", 1)[1].strip() for ln in out.splitlines()
                      if ln.startswith("Model name")), model)
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cpus (lscpu)"
