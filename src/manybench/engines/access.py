"""How the coordinator reaches a cluster: secured by default, or plainly when told so.

A cluster manybench joins or starts is mutual TLS with credentials made for it
(security/credentials.py): the scheduler, every worker and this coordinator present a
certificate of the cluster's own authority, so nobody without them (another user of a
node, another host of the network) can talk to any of them. Where they come from, first
found first:
  --credentials DIR                   given for this run
  [cluster] credentials = "DIR"       the plan's
  [cluster] tls = { ca_file, cert, key }   files of the user's own authority
  $MANYBENCH_CREDENTIALS, else ~/.config/manybench/cluster   the user's default
An SSH cluster (--hosts) gets its own, made for its life and shipped over the SSH login
(engines/ssh.py), unless one of the first three is given. A batch cluster (--cluster) makes
the default ones when there are none: the jobs read them from the shared home directory.
--insecure opts out (no TLS, no authentication): every run it serves says so.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import Plan
from ..security import credentials as creds
from .base import EngineError

INSECURE_TEXT = ("the cluster is not secured (--insecure): no TLS and no authentication, so "
                 "anyone who can reach its scheduler or workers can run code as the workers' "
                 "user, stop its runs or read what they carry")


@dataclass(frozen=True)
class Access:
    """How this run reaches its cluster."""
    credentials: creds.Credentials | None    # None: --insecure
    source: str = ""                         # where they came from, for messages
    # [cluster] tls with require_encryption = false: TLS offered, not required
    optional: bool = False

    @classmethod
    def of_client(cls, client: Any) -> "Access":
        """What a Dask client made elsewhere says of itself (its Security's files)."""
        sec = getattr(client, "security", None)
        tls = sec.get_tls_config_for_role("client") if sec is not None else {}
        files = [tls.get("ca_file"), tls.get("cert"), tls.get("key") or tls.get("cert")]
        if not all(files):
            return cls(None, "the Dask client's settings")
        return cls(creds.Credentials(*files), "the Dask client's settings",
                   optional=not getattr(sec, "require_encryption", False))

    @property
    def insecure(self) -> bool:
        return self.credentials is None or self.optional

    def security(self) -> Any:
        """Dask's Security, or None (insecure)."""
        if self.credentials is None:
            return None
        sec = self.credentials.security()
        sec.require_encryption = not self.optional
        return sec

    @property
    def scheme(self) -> str:
        return "tcp" if self.credentials is None else "tls"

    def describe(self) -> str:
        """What the report's header says of it."""
        if self.insecure:
            return "insecure (--insecure: no TLS, no authentication)" if not self.optional else \
                "TLS not required ([cluster] tls require_encryption = false)"
        return f"mutual TLS with the cluster's own certificates ({self.source}); messages " \
               "signed with the run's secret"


def resolve(plan: Plan, given: str | None, insecure: bool, make_default: bool = False,
            own: bool = False) -> Access:
    """The run's access. given: --credentials; make_default: make the user's default ones
    when there are none (a batch cluster); own: the caller makes its own when nothing is
    given explicitly (an SSH cluster): Access(None, "own") then means "make them"."""
    if insecure:
        if given:
            raise EngineError("give --credentials or --insecure, not both")
        return Access(None, "--insecure")
    cluster = plan.cluster
    if given:
        return Access(_load(given), f"--credentials {given}")
    if cluster.get("credentials"):
        return Access(_load(cluster["credentials"]), "[cluster] credentials")
    tls = cluster.get("tls")
    if tls:
        files = [tls.get("ca_file"), tls.get("cert"), tls.get("key") or tls.get("cert")]
        if not all(files):
            raise EngineError("[cluster] tls: give ca_file, cert and key")
        return Access(creds.Credentials(*files), "[cluster] tls",
                      optional=not tls.get("require_encryption", True))
    if own:
        return Access(None, "own")
    where = creds.default_dir()
    if not creds.exists(where):
        if not make_default:
            raise EngineError(
                f"no cluster credentials (looked in {where}): a cluster is reached with TLS "
                "and credentials made for it. Make them with `manybench cluster-credentials`, "
                "start the scheduler and workers with them (docs/howto-clusters.md), and run "
                "again; or pass --insecure to reach it without any protection")
        try:
            creds.make(where)
        except creds.CredentialsError as e:
            raise EngineError(f"making the cluster's credentials: {e}") from None
    return Access(_load(where), where)


def _load(directory: str) -> creds.Credentials:
    try:
        return creds.load(directory)
    except creds.CredentialsError as e:
        raise EngineError(f"cluster credentials: {e}") from None


def scheduler_address(address: str, access: Access) -> str:
    """The address to join, in the scheme the access speaks: a bare host:port gets it; a
    scheme that contradicts it is an error naming both ways out."""
    if "://" not in address:
        return f"{access.scheme}://{address}"
    scheme = address.split("://", 1)[0]
    if scheme == "tcp" and not access.insecure:
        raise EngineError(f"--scheduler {address}: a secured cluster's scheduler is reached at "
                          f"tls://{address.split('://', 1)[1]} (start it with the cluster's "
                          "credentials, docs/howto-clusters.md), or pass --insecure to join a "
                          "cluster that has none")
    if scheme == "tls" and access.credentials is None:
        raise EngineError(f"--scheduler {address}: a TLS scheduler needs the cluster's "
                          "credentials (--credentials DIR), not --insecure")
    return address
