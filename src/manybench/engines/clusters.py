"""Ways to reach a cluster, all through Dask: a scheduler address, SSH hosts, a batch system
through dask-jobqueue, or the Slurm allocation we are running in. Each returns a DaskEngine.

Every way is secured unless the run says --insecure (access.py: whose credentials, made
where). Workers started by manybench itself (SSH, srun) are `manybench worker`; dask-jobqueue's
are plain Dask workers given the agent plugin through `--preload manybench.node.dask_plugin`
and a private working directory made by their job.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from typing import Any, Callable

from .hostfile import load_hostfile
from ..model import Plan
from ..security import credentials as creds
from .access import Access, resolve, scheduler_address
from . import Where
from .base import EngineConfig, EngineError  # noqa: F401  (EngineError: re-exported)
from .dask import DaskEngine
from .reach import check_reachable

PRELOAD = "manybench.node.dask_plugin"
# what starting a cluster raises when it cannot start: Dask's "Cluster failed to start"
# (RuntimeError, whatever the cause), an address or a batch system out of reach, a value of
# [cluster] the cluster's software refuses. Anything else is a bug of ours.
CLUSTER_ERRORS = (RuntimeError, OSError, TimeoutError, ValueError)


def _client(address: Any, access: Access) -> Any:
    from distributed import Client
    # how long to try: Dask's distributed.comm.timeouts.connect (30 s unless configured, e.g.
    # DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=5s)
    sec = access.security()
    try:
        return Client(address, security=sec) if sec else Client(address)
    except (OSError, TimeoutError) as e:
        raise EngineError(f"cannot reach the Dask scheduler at {address}: {e}") from None


def make(plan: Plan, where: Where, config: EngineConfig) -> DaskEngine:
    """The engine registry's maker (engines/__init__.py): --scheduler, --hosts or --cluster."""
    access = (where.slots, where.credentials, where.insecure)
    if where.scheduler:
        return from_scheduler(plan, where.scheduler, *access, config=config)
    if where.hosts:
        return from_hosts(plan, where.hosts, *access, config=config)
    return from_cluster(plan, where.cluster, *access, config=config)


def from_scheduler(plan: Plan, address: str, slots: int | None,
                   credentials: str | None = None, insecure: bool = False,
                   config: EngineConfig = EngineConfig()) -> DaskEngine:
    access = resolve(plan, credentials, insecure)
    address = scheduler_address(address, access)
    check_reachable(address, access.security())    # refused: at once, not after Dask's 30 s
    client = _client(address, access)
    return DaskEngine(client, default_slots=slots, on_close=client.close, access=access,
                      config=config)


def from_hosts(plan: Plan, path: str, slots: int | None, credentials: str | None = None,
               insecure: bool = False, config: EngineConfig = EngineConfig()) -> DaskEngine:
    """The scheduler on the hostfile's first host, a worker on each, started over SSH
    (engines/ssh.py), with credentials made for this cluster unless some are given."""
    from .ssh import ssh_cluster
    hosts = load_hostfile(path)
    ssh = plan.cluster.get("ssh", {})
    connect = {k: v for k, v in ssh.items() if k in ("username", "port", "known_hosts",
                                                         "client_keys")}
    names = [h for h, _ in hosts]
    access = resolve(plan, credentials, insecure, own=True)
    made = ""
    if access.source == "own":        # this cluster's own, for its life
        cred, made = creds.make_temporary()
        access = Access(cred, "made for this SSH cluster")
    try:
        cluster = ssh_cluster(names, {h: _resolve(h) for h in names}, connect,
                              plan.cluster.get("python", sys.executable), access.credentials,
                              plan.cluster.get("scheduler_port", 0), access.security())
    except CLUSTER_ERRORS as e:
        if made:
            creds.remove(made)
        raise EngineError(f"starting Dask over SSH on {', '.join(names)}: {e}") from None
    client = _client(cluster, access)
    by_ip = {_resolve(h): h for h in names}
    counts = {h: s for h, s in hosts if s}
    return DaskEngine(client, slots=counts, default_slots=slots, expected=len(hosts),
                      host_names=by_ip, access=access, config=config,
                      on_close=_closer(client, cluster, (lambda: creds.remove(made))
                                       if made else None))


def _resolve(host: str) -> str:
    try:
        return socket.gethostbyname(host)
    except OSError:
        return host


def _closer(client: Any, cluster: Any, after: Callable[[], None] | None = None) -> Callable[[], None]:
    def close() -> None:
        client.close()
        cluster.close()
        if after:
            after()
    return close


JOBQUEUE = {"slurm": "SLURMCluster", "sge": "SGECluster", "pbs": "PBSCluster"}


# a job's worker works in a private directory of the job's own, removed when the job ends:
# Dask's default ($TMPDIR/dask-scratch-space) is shared and predictable, and another user can
# plant links where the worker writes its lock files
WORKDIR = ['export MANYBENCH_WORKDIR="$(mktemp -d)"', 'trap \'rm -rf "$MANYBENCH_WORKDIR"\' EXIT',
           # the worker's HTTP server answers a health check, not the cluster's state
           "export DASK_DISTRIBUTED__WORKER__HTTP__ROUTES='[\"distributed.http.health\"]'"]


def jobqueue_options(kind: str, plan: Plan, slots: int | None,
                     access: Access | None = None) -> dict[str, Any]:
    """dask-jobqueue keyword arguments from the plan's [cluster] table: one worker process
    per node job, with the agent preloaded and the node's slot count in its environment.
    access: the cluster's (its Security); None: insecure."""
    c = plan.cluster
    per_node = c.get("slots") or slots or plan.slots or os.cpu_count() or 1
    opts: dict[str, Any] = {
        "cores": c.get("cores", per_node), "memory": c.get("memory", "4GB"),
        "processes": 1, "walltime": c.get("walltime", "01:00:00"),
        "python": c.get("python", sys.executable),
        "job_script_prologue": [f"export MANYBENCH_SLOTS={per_node}", *WORKDIR,
                                *c.get("job_script_prologue", [])],
        "local_directory": '"$MANYBENCH_WORKDIR"',
        "job_extra_directives": c.get("job_extra_directives", []),
        "worker_extra_args": ["--preload", PRELOAD, "--nthreads", "1"],
        "scheduler_options": {"dashboard_address": None, "port": c.get("scheduler_port", 0)},
    }
    for key in ("queue", "interface", "local_directory", "log_directory"):
        if key in c:
            opts[key] = c[key]
    if "account" in c:   # SGE calls it a project
        opts["project" if kind == "sge" else "account"] = c["account"]
    sec = access.security() if access is not None else None
    if sec is not None:
        opts["security"] = sec
    return opts


def _jobqueue(kind: str) -> Callable[..., DaskEngine]:
    def start(plan: Plan, slots: int | None, credentials: str | None = None,
              insecure: bool = False, config: EngineConfig = EngineConfig()) -> DaskEngine:
        import dask_jobqueue
        access = resolve(plan, credentials, insecure, make_default=True)
        opts = jobqueue_options(kind, plan, slots, access)
        nodes = plan.cluster.get("nodes", 1)
        try:
            with _quiet_http():
                cluster = getattr(dask_jobqueue, JOBQUEUE[kind])(**opts)
            cluster.scale(jobs=nodes)
        except CLUSTER_ERRORS as e:
            raise EngineError(f"starting Dask workers through {kind}: {e}") from None
        client = _client(cluster, access)
        per_node = int(opts["job_script_prologue"][0].split("=")[1])
        return DaskEngine(client, default_slots=per_node, expected=nodes, access=access,
                          on_close=_closer(client, cluster), config=config)
    return start


def in_allocation(plan: Plan, slots: int | None, credentials: str | None = None,
                  insecure: bool = False, config: EngineConfig = EngineConfig()) -> DaskEngine:
    """Inside a Slurm allocation: a scheduler here, one `manybench worker` per allocated node
    started with srun, with the cluster's credentials (in the shared home directory, made
    there when there are none); nodes and slots are the allocation's."""
    from distributed import LocalCluster
    nodes = int(os.environ.get("SLURM_JOB_NUM_NODES") or os.environ.get("SLURM_NNODES") or 1)
    per_node = slots or _slurm_cpus() or os.cpu_count() or 1
    access = resolve(plan, credentials, insecure, make_default=True)
    sec = {"security": access.security()} if not access.insecure else {}
    try:
        with _quiet_http():
            cluster = LocalCluster(n_workers=0, host=_my_ip(), scheduler_port=0,
                                   dashboard_address=None, **sec)
    except CLUSTER_ERRORS as e:
        raise EngineError(f"starting a Dask scheduler in the allocation: {e}") from None
    # --overlap: the workers share the allocation's cpus with the step running us
    cmd = ["srun", "--overlap", f"--nodes={nodes}", "--ntasks-per-node=1", "--kill-on-bad-exit=0",
           sys.executable, "-m", "manybench", "worker", cluster.scheduler_address,
           "--slots", str(per_node), *_worker_access(access)]
    srun = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
    client = _client(cluster, access)

    def stop_srun() -> None:
        if srun.poll() is None:
            srun.terminate()      # our own srun: Slurm ends the worker steps with it
            try:
                srun.wait(timeout=30)
            except subprocess.TimeoutExpired:
                srun.kill()
    return DaskEngine(client, default_slots=per_node, expected=nodes, access=access,
                      on_close=_closer(client, cluster, stop_srun), config=config)


def _worker_access(access: Access) -> list[str]:
    """`manybench worker`'s options for this access (paths only: nothing secret in argv)."""
    if access.credentials is None:
        return ["--insecure"]
    c = access.credentials
    return ["--tls-ca-file", c.ca, "--tls-cert", c.cert, "--tls-key", c.key]


def _quiet_http() -> Any:
    """The scheduler started here answers a health check on HTTP, not the cluster's state
    (Dask's default routes serve it to anyone who asks, TLS or not)."""
    import dask
    from ..node.worker import HTTP_ROUTES
    return dask.config.set({"distributed.scheduler.http.routes": HTTP_ROUTES})


def _slurm_cpus() -> int | None:
    v = os.environ.get("SLURM_CPUS_ON_NODE") or os.environ.get("SLURM_JOB_CPUS_PER_NODE", "")
    v = v.split("(")[0].split(",")[0]
    return int(v) if v.isdigit() else None


def _my_ip() -> str:
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


CLUSTERS: dict[str, Callable[..., DaskEngine]] = {kind: _jobqueue(kind) for kind in JOBQUEUE}


def from_cluster(plan: Plan, kind: str, slots: int | None, credentials: str | None = None,
                 insecure: bool = False, config: EngineConfig = EngineConfig()) -> DaskEngine:
    """--cluster KIND; `slurm` inside an allocation (SLURM_JOB_ID set) uses the allocation."""
    if kind == "slurm" and os.environ.get("SLURM_JOB_ID"):
        return in_allocation(plan, slots, credentials, insecure, config)
    return CLUSTERS[kind](plan, slots, credentials, insecure, config)
