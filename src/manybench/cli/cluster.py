"""The commands that start or secure a cluster by hand: `cluster-credentials`, `scheduler`,
`worker` (engines/access.py says how a run reaches one)."""
from __future__ import annotations

import click

from .errors import fail as _fail
from ..printable import echo


def _node_access(credentials: str | None, insecure: bool, tls: tuple) -> tuple:
    """(ca, cert, key) files for a scheduler or worker, or None for --insecure; exit 2
    naming the way out when there are none."""
    from ..security import credentials as creds
    if insecure:
        if credentials or any(tls):
            raise _fail("give the cluster's credentials or --insecure, not both")
        return None
    if any(tls):
        if not all(tls):
            raise _fail("give --tls-ca-file, --tls-cert and --tls-key together")
        return tls
    where = credentials or creds.default_dir()
    if not credentials and not creds.exists(where):
        raise _fail(f"no cluster credentials (looked in {where}): make them with `manybench "
                    "cluster-credentials` (on a shared home directory, once for every node), "
                    "give --credentials DIR, or pass --insecure to serve without any "
                    "protection (anyone who reaches this node could then run code as its user)")
    try:
        return creds.load(where).files
    except creds.CredentialsError as e:
        raise _fail(f"cluster credentials: {e}") from None


_CREDENTIALS = click.option(
    "--credentials", type=click.Path(file_okay=False), metavar="DIR",
    help="The cluster's credentials (`manybench cluster-credentials`; default "
         "$MANYBENCH_CREDENTIALS, else ~/.config/manybench/cluster).")
_INSECURE = click.option("--insecure", is_flag=True, help="No TLS and no authentication: "
                         "anyone who can reach this node can drive it. Named in every run.")


@click.command("cluster-credentials")
@click.argument("directory", required=False)
@click.option("--group", help="Make them readable by this group too (a cluster shared by "
              "a team); by default only you can read them.")
@click.option("--days", type=click.IntRange(min=1, max=36500), default=365, show_default=True,
              help="How long the certificates are valid.")
def cluster_credentials(directory: str | None, group: str | None, days: int) -> None:
    """Make a cluster's credentials in DIRECTORY (default ~/.config/manybench/cluster): its
    own certificate authority and the certificate every member presents."""
    from ..security import credentials as creds
    where = directory or creds.default_dir()
    try:
        made = creds.make(where, group, days)
    except creds.CredentialsError as e:
        raise _fail(str(e)) from None
    echo(f"cluster credentials in {where}: {', '.join(made.files)}\n"
               f"every node needs them at a path it can give (a shared home directory serves "
               f"all); then `manybench scheduler`, `manybench worker tls://HEAD:8786` and "
               f"`manybench run PLAN --scheduler tls://HEAD:8786` use them"
               + ("" if directory is None else f" with --credentials {where}"))


_OWN_TLS = [click.option("--tls-ca-file", type=click.Path(exists=True, dir_okay=False),
                         help="Certificates of your own authority instead of --credentials."),
            click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False)),
            click.option("--tls-key", type=click.Path(exists=True, dir_okay=False))]


def _own_tls(f):
    for option in reversed(_OWN_TLS):
        f = option(f)
    return f


@click.command()
@click.option("--host", help="Address to listen on (default: this host's address).")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=8786, show_default=True)
@_CREDENTIALS
@_INSECURE
@_own_tls
def scheduler(host: str | None, port: int, credentials: str | None, insecure: bool,
              tls_ca_file: str | None, tls_cert: str | None, tls_key: str | None) -> None:
    """Start a Dask scheduler for manybench's workers, secured with the cluster's
    credentials (mutual TLS)."""
    from ..node.worker import run_scheduler
    run_scheduler(host, port, _node_access(credentials, insecure,
                                           (tls_ca_file, tls_cert, tls_key)))


@click.command()
@click.argument("scheduler")
@click.option("--name", help="This node's name in records (default: the host name).")
@click.option("--slots", type=click.IntRange(min=1), help="Slots on this node (default: its cpus).")
@click.option("--host", help="Address to listen on (default: the one routing to the scheduler).")
@_CREDENTIALS
@_INSECURE
@_own_tls
def worker(scheduler: str, name: str | None, slots: int | None, host: str | None,
           credentials: str | None, insecure: bool, tls_ca_file: str | None,
           tls_cert: str | None, tls_key: str | None) -> None:
    """Start this node's agent in a Dask worker joined to SCHEDULER."""
    from ..node.worker import WorkerError, run_worker
    files = _node_access(credentials, insecure, (tls_ca_file, tls_cert, tls_key))
    try:
        run_worker(scheduler, name, slots, host, files)
    except WorkerError as e:
        raise _fail(str(e)) from None


COMMANDS = (cluster_credentials, scheduler, worker)
