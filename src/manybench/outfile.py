"""A file written for the user (`report --html`, `--plots`, `export -o`) appears whole or not
at all: it is written under a temporary name of its own in the same directory (random,
created exclusively: nobody can plant it or guess it) and renamed over the target only once
complete and on disk. A full disk or an interruption leaves the file that was there as it
was, and the temporary one is removed.

A target that is no regular file (a device such as /dev/stdout or /dev/null, a FIFO) cannot
be replaced: it is written in place, as before. A symbolic link is followed: the file it
names is replaced, the link kept.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import stat
from typing import IO, Iterator

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_NAME_BYTES = 100     # of the target's name kept in the temporary one (a name holds 255)


def _target(path: str | os.PathLike) -> tuple[str, os.stat_result | None]:
    """(the file to replace, or to write in place, and its stat when one is there)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        return os.fspath(path), st     # by its own name: /dev/stdout's link names a pipe
    return os.path.realpath(path), st


def in_place(path: str | os.PathLike) -> bool:
    """Whether path is written in place: something is there that is no regular file."""
    st = _target(path)[1]
    return st is not None and not stat.S_ISREG(st.st_mode)


def _create(real: str) -> tuple[int, str]:
    """A new temporary file beside real: (descriptor, path). Mode 0666 less the umask, as
    open() gives a new file."""
    head, name = os.path.split(real)
    short = os.fsencode(name)[:_NAME_BYTES].decode(errors="ignore")
    for _ in range(100):
        tmp = os.path.join(head, f".{short}.{secrets.token_hex(8)}.tmp")
        try:
            return os.open(tmp, _FLAGS, 0o666), tmp
        except FileExistsError:      # 64 random bits: only someone else's on purpose
            continue
    raise FileExistsError(f"no free temporary name beside {real}")


def check(path: str | os.PathLike) -> None:
    """OSError when path cannot be written (its directory takes no new file, or what is
    there cannot be opened); nothing is written and a file there is left as it is."""
    real, st = _target(path)
    if st is not None and not stat.S_ISREG(st.st_mode):
        open(real, "ab").close()       # a device, a FIFO; a directory: IsADirectoryError
        return
    fd, tmp = _create(real)
    os.close(fd)
    os.unlink(tmp)


@contextlib.contextmanager
def replacing(path: str | os.PathLike, binary: bool = False, newline: str | None = None,
              encoding: str | None = None) -> Iterator[IO]:
    """A file open for writing whose content replaces path's when the block ends without an
    exception (flushed and synced first, so a full disk is found here, not later); on any
    exception path keeps what it had and the temporary file is removed."""
    real, st = _target(path)
    mode = "wb" if binary else "w"
    text = {} if binary else {"newline": newline, "encoding": encoding}
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(real, mode, **text) as f:
            yield f
        return
    fd, tmp = _create(real)
    try:
        with os.fdopen(fd, mode, **text) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        if st is not None:       # the replaced file's permissions, not the umask's
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
