"""A cluster started over SSH (--hosts): the scheduler on the hostfile's first host, one
`manybench worker` on each host, each a process of the login the coordinator opens with
asyncssh (Dask's SSHCluster's way, with manybench's own commands on the far side).

Secured by default: before it starts anything on a host, the coordinator copies the
cluster's credentials (made for this cluster, security/credentials.py) over that login into
a fresh owner-only directory there (`mktemp -d`), starts the process with them, and removes
the directory once the process has ended. The far side does both ends itself (`remote_command`):
the process ends with its SSH session and the directory goes with the process, whatever
became of the coordinator (one killed with SIGKILL closes no cluster). Nothing secret is on
any command line. Each process listens on its host's own address (the one the hostfile
names), not on every interface. With --insecure, the same without credentials.
"""
from __future__ import annotations

import asyncio
import shlex
from typing import Any

from distributed.deploy.spec import ProcessInterface

from ..config import timing
from ..security.credentials import FILES, Credentials

# The far side of one process, an sh script: manybench in the background, ended (SIGTERM) when
# the session's stdin closes (the coordinator closed the session, or died: a SIGKILLed one's
# sessions close with its connections) or when the session delivers a signal (asyncssh's
# terminate, to this shell); once it has ended, the credentials' directory is removed. A
# session's end delivers no signal without a terminal: a coordinator killed with SIGKILL left
# its scheduler and workers running on the hosts, the member key beside them.
WRAPPER = """exec 3<&0 </dev/null
{command} 3<&- &
pid=$!
trap 'kill -TERM $pid 2>/dev/null' HUP INT TERM
{{ cat <&3; kill -TERM $pid; }} >/dev/null 2>&1 &
watch=$!
exec 3<&-
wait $pid; rc=$?
while kill -0 $pid 2>/dev/null; do wait $pid; rc=$?; done
{remove}kill $watch 2>/dev/null
exit $rc
"""


def remote_command(command: str, credentials_dir: str) -> str:
    """The login's command that runs `command` (a manybench process, sh words) on the far side
    as WRAPPER says, removing credentials_dir ("" none) after it."""
    remove = f"rm -rf {shlex.quote(credentials_dir)}\n" if credentials_dir else ""
    return "sh -c " + shlex.quote(WRAPPER.format(command=command, remove=remove))


class Remote(ProcessInterface):
    """One manybench process on one host, over SSH."""

    ready = ""            # what its stderr says once it listens (Dask's own log line)

    def __init__(self, host: str, connect_options: dict, python: str,
                 credentials: Credentials | None, listen: str, **_: Any) -> None:
        super().__init__()
        self.host, self.connect_options, self.python = host, connect_options, python
        self.credentials, self.listen = credentials, listen
        self.connection: Any = None
        self.proc: Any = None
        self.dir = ""           # where the credentials went on the host

    def args(self) -> list[str]:
        raise NotImplementedError

    async def start(self) -> None:
        import asyncssh   # noqa: PLC0415 (only for --hosts)
        self.connection = await asyncssh.connect(self.host, **self.connect_options)
        access = ["--insecure"]
        if self.credentials is not None:
            made = await self.connection.run("umask 077 && mktemp -d", check=True)
            self.dir = made.stdout.strip()
            for name, path in zip(FILES, self.credentials.files):
                with open(path) as f:
                    await self.connection.run(f"umask 077 && cat > {shlex.quote(f'{self.dir}/{name}')}",
                                              input=f.read(), check=True)
            access = ["--credentials", self.dir]
        # python may be a command of its own ("env PYTHONPATH=... /opt/py/bin/python")
        cmd = f"{self.python} -m manybench " + " ".join(
            shlex.quote(a) for a in [*self.args(), "--host", self.listen, *access])
        self.proc = await self.connection.create_process(remote_command(cmd, self.dir))
        await asyncio.wait_for(self._wait_ready(), timing("engines.ssh_ready"))
        await super().start()

    async def _wait_ready(self) -> None:
        said = []
        while True:
            line = await self.proc.stderr.readline()
            if not line:
                raise RuntimeError(f"{self.host}: `manybench {self.args()[0]}` did not start: "
                                   + " | ".join(said[-5:]))
            said.append(line.strip())
            if self.ready in line:
                self.found(line)
                return

    def found(self, line: str) -> None:
        pass

    async def close(self) -> None:
        if self.proc is not None:
            try:       # the scheduler's end ends the workers, and closing the cluster it
                await asyncio.wait_for(self.proc.wait(), 15)
            except (asyncio.TimeoutError, OSError):
                self.proc.terminate()
        if self.connection is not None:
            if self.dir:      # gone with the process if it ended; else now (it soon ends)
                try:
                    await asyncio.wait_for(self.connection.run(
                        f"rm -rf {shlex.quote(self.dir)}"), 15)
                except (asyncio.TimeoutError, OSError):
                    pass
            self.connection.close()
        await super().close()


class RemoteScheduler(Remote):
    ready = "Scheduler at:"

    def __init__(self, port: int = 0, **kw: Any) -> None:
        super().__init__(**kw)
        self.port = port

    def args(self) -> list[str]:
        return ["scheduler", "--port", str(self.port)]

    def found(self, line: str) -> None:
        self.address = line.split("Scheduler at:", 1)[1].strip()


class RemoteWorker(Remote):
    ready = "Start worker at:"

    def __init__(self, scheduler: str, name: Any = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.scheduler, self.name = scheduler, name

    def args(self) -> list[str]:
        # the Dask name is the cluster's key for it (a number): the node's name is then the
        # host's, which the engine maps to the hostfile's (host_names)
        return ["worker", self.scheduler, "--name", str(self.name)]


def ssh_cluster(hosts: list[str], listen: dict[str, str], connect_options: dict, python: str,
                credentials: Credentials | None, scheduler_port: int, security: Any) -> Any:
    """The SpecCluster of the scheduler on hosts[0] and a worker on each host."""
    from distributed.deploy.spec import SpecCluster   # noqa: PLC0415
    common = {"connect_options": connect_options, "python": python, "credentials": credentials}
    scheduler = {"cls": RemoteScheduler, "options": {
        "host": hosts[0], "listen": listen[hosts[0]], "port": scheduler_port, **common}}
    workers = {i: {"cls": RemoteWorker, "options": {"host": h, "listen": listen[h], **common}}
               for i, h in enumerate(hosts)}
    return SpecCluster(workers, scheduler, name="manybench-ssh", security=security)
