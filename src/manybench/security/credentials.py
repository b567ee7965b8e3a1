"""A cluster's credentials: its own certificate authority and one member certificate, made
for it (`manybench cluster-credentials DIR`, or by the coordinator for an SSH cluster), in a
directory only its owner (or its group, when asked) can read.

    DIR/ca.pem       the cluster's authority: a peer must present a certificate it signed
    DIR/member.pem   the certificate every member presents (scheduler, workers, coordinator)
    DIR/member.key   its private key

The authority's own key is never written: once DIR is made no further certificate can be
signed for the cluster, and making DIR again makes a new cluster that the old one's members
cannot join. Dask is told to use them through its own `Security` (mutual TLS: the scheduler,
every worker and the client each check the other end's certificate against ca.pem).
"""
from __future__ import annotations

import datetime
import grp
import os
import secrets
import stat
import tempfile
from dataclasses import dataclass
from typing import Any

ENV = "MANYBENCH_CREDENTIALS"     # where the default credentials are, when set
FILES = ("ca.pem", "member.pem", "member.key")
DAYS = 365                          # how long `cluster-credentials` makes them valid
SKEW = datetime.timedelta(hours=1)  # valid from a little before now: nodes' clocks differ


class CredentialsError(Exception):
    """Credentials that cannot be made or used; the message names the file and why."""


@dataclass(frozen=True)
class Credentials:
    ca: str
    cert: str
    key: str

    @property
    def files(self) -> tuple[str, str, str]:
        return self.ca, self.cert, self.key

    def security(self) -> Any:
        """Dask's Security for every role of the cluster, encryption required."""
        from distributed.security import Security   # noqa: PLC0415 (Dask loads slowly)
        return Security(tls_ca_file=self.ca, tls_client_cert=self.cert,
                        tls_client_key=self.key, tls_scheduler_cert=self.cert,
                        tls_scheduler_key=self.key, tls_worker_cert=self.cert,
                        tls_worker_key=self.key, require_encryption=True)


def default_dir() -> str:
    """$MANYBENCH_CREDENTIALS, else ~/.config/manybench/cluster (XDG_CONFIG_HOME honoured):
    a home directory is shared by a cluster's nodes, so its workers find them there too."""
    if os.environ.get(ENV):
        return os.path.expanduser(os.environ[ENV])
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "manybench", "cluster")


def exists(directory: str) -> bool:
    return all(os.path.exists(os.path.join(directory, f)) for f in FILES)


def load(directory: str) -> Credentials:
    """The credentials in `directory`, checked: every file there, none of them (nor the
    directory) writable by others, the key readable by nobody beyond its owner and group."""
    directory = os.path.abspath(os.path.expanduser(directory))
    try:
        st = os.stat(directory)
    except OSError as e:
        raise CredentialsError(f"{directory}: {e.strerror}; make them with `manybench "
                               f"cluster-credentials {directory}`") from None
    if not stat.S_ISDIR(st.st_mode):
        raise CredentialsError(f"{directory}: not a directory")
    if st.st_mode & 0o022:
        raise CredentialsError(f"{directory}: writable by others (mode {st.st_mode & 0o777:o}): "
                               "anyone who can write there can replace the cluster's certificates")
    paths = [os.path.join(directory, f) for f in FILES]
    for p in paths:
        try:
            fst = os.stat(p)
        except OSError as e:
            raise CredentialsError(f"{p}: {e.strerror}") from None
        if fst.st_mode & 0o022:
            raise CredentialsError(f"{p}: writable by others (mode {fst.st_mode & 0o777:o})")
        if p.endswith(".key") and fst.st_mode & 0o007:
            raise CredentialsError(f"{p}: readable by every user (mode {fst.st_mode & 0o777:o}): "
                                   "the cluster's key must be its owner's (or its group's) only")
        if not os.access(p, os.R_OK):
            raise CredentialsError(f"{p}: not readable by this user")
    return Credentials(*paths)


def make(directory: str, group: str | None = None, days: int = DAYS) -> Credentials:
    """New credentials in `directory` (which must not exist, or be empty): owner-only, or
    group-readable by `group`. Written whole into a fresh directory beside it, then renamed
    into place, so a failure leaves nothing half made."""
    directory = os.path.abspath(os.path.expanduser(directory))
    if os.path.exists(directory) and (not os.path.isdir(directory) or os.listdir(directory)):
        raise CredentialsError(f"{directory}: already exists; remove it to make new credentials "
                               "(every node then needs the new ones)")
    gid = None
    if group is not None:
        try:
            gid = grp.getgrnam(group).gr_gid
        except KeyError:
            raise CredentialsError(f"group {group!r}: no such group") from None
    parent = os.path.dirname(directory)
    os.makedirs(parent, mode=0o700, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".credentials-", dir=parent)    # 0700, ours
    try:
        _write(tmp, days, gid)
        os.rename(tmp, directory)        # replaces an empty directory, else fails
    except OSError as e:
        _remove(tmp)
        raise CredentialsError(f"{directory}: {e.strerror or e}") from None
    except BaseException:
        _remove(tmp)
        raise
    return load(directory)


def make_temporary(parent: str | None = None) -> tuple[Credentials, str]:
    """Credentials for one cluster's life (an SSH cluster the coordinator starts): a fresh
    owner-only directory; its path is returned for removal."""
    d = tempfile.mkdtemp(prefix="manybench-cluster-", dir=parent)    # 0700, ours
    try:
        _write(d, 30, None)
    except BaseException:
        _remove(d)
        raise
    return load(d), d


def _write(d: str, days: int, gid: int | None) -> None:
    """The three files into `d`, a fresh directory of ours, each created here (O_EXCL)."""
    for name, data in zip(FILES, _pems(days)):
        mode = 0o644 if name.endswith(".pem") else (0o640 if gid is not None else 0o600)
        path = os.path.join(d, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(path, mode)    # the umask may have taken bits away
        if gid is not None:
            os.chown(path, -1, gid)
    if gid is not None:
        os.chown(d, -1, gid)
        os.chmod(d, 0o750)


def _remove(d: str) -> None:
    for name in FILES:
        try:
            os.unlink(os.path.join(d, name))
        except OSError:
            pass
    try:
        os.rmdir(d)
    except OSError:
        pass


def remove(d: str) -> None:
    """Remove credentials made by make_temporary (only the files it wrote)."""
    _remove(d)


def _pems(days: int) -> tuple[bytes, bytes, bytes]:
    """A new authority (self-signed, P-256) and one member certificate it signs, for server
    and client use alike; the authority's key is dropped here."""
    from cryptography import x509   # noqa: PLC0415 (only when credentials are made)
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    cluster = secrets.token_hex(8)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                            f"manybench cluster {cluster} authority")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - SKEW).not_valid_after(now + datetime.timedelta(days=days))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, key_cert_sign=True, crl_sign=True,
                                       encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                         critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    member = (x509.CertificateBuilder()
              .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                                          f"manybench cluster {cluster} member")]))
              .issuer_name(ca_name).public_key(key.public_key())
              .serial_number(x509.random_serial_number())
              .not_valid_before(now - SKEW).not_valid_after(now + datetime.timedelta(days=days))
              .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
              .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                    ExtendedKeyUsageOID.CLIENT_AUTH]),
                             critical=False)
              .add_extension(x509.SubjectAlternativeName([x509.DNSName("manybench")]),
                             critical=False)
              .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                  ca_key.public_key()), critical=False)
              .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return (ca.public_bytes(pem), member.public_bytes(pem),
            key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))
