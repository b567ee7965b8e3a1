"""Scratch as hostile ground: what a kernel opens or makes below the run's scratch root is
reached by descriptor from that root (native/scratch.c: every directory O_NOFOLLOW |
O_DIRECTORY, the file O_NOFOLLOW, then checked to be a regular file with one link). A
symbolic link, a hard link, a FIFO, a socket or a device planted there is a phase error
naming it; nothing is ever written through one. mbkernel applies the same C inside a wrap.
"""
from __future__ import annotations

import errno
import os
import stat

from ..node.wire_types import SlotContext
from .base import KernelError
from .native import native, user_message


def root_of(ctx: SlotContext) -> str:
    """The run's scratch root for this slot's task ({dir}/<run>, made by the agent); a
    context made without one (a kernel driven directly) is rooted at its slot directory's
    parent, made here."""
    if ctx.root:
        return ctx.root
    parent = os.path.dirname(os.path.abspath(ctx.scratch))
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError:
        pass     # opening it says why, as a KernelError
    return parent


def below(root: str, path: str, label: str) -> str:
    """path relative to root; KernelError when it is not below it."""
    rel = os.path.relpath(os.path.abspath(path), root)
    if rel == ".." or rel.startswith("../") or os.path.isabs(rel):
        raise KernelError(f"{label}: {path} is outside the run's scratch {root}")
    return "" if rel == "." else rel


def open_below(root: str, path: str, flags: int, label: str, mode: int = 0o600) -> int:
    """An fd of path (below root) opened by descriptor and checked; KernelError naming what
    was found instead of a regular file, or why it could not be opened."""
    try:
        return native().scratch_open(root, below(root, path, label), flags, mode)
    except OSError as e:
        if e.errno == errno.EPERM:        # a planted object: the C message names it
            raise KernelError(f"{label}: {e.strerror}") from None
        raise KernelError(user_message(label, e.errno or 0, e.strerror or str(e))) from None


def make_dir(root: str, path: str, label: str) -> None:
    """path and every directory between root and it, made 0700 where missing, none of
    them a link or anything but a directory."""
    os.close(open_below(root, path, os.O_DIRECTORY | os.O_CREAT, label))


def same_file(a: int, b: int) -> bool:
    sa, sb = os.fstat(a), os.fstat(b)
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def remove_below(dfd: int, name: str) -> None:
    """Remove name inside the open directory dfd and all below it, by descriptor: a link is
    removed, never followed."""
    try:
        st = os.lstat(name, dir_fd=dfd)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=dfd)
        return
    for _, dirs, files, fd in os.fwalk(name, topdown=False, dir_fd=dfd):
        for f in files:
            os.unlink(f, dir_fd=fd)
        for d in dirs:     # a link to a directory is listed here, not walked into
            try:
                os.rmdir(d, dir_fd=fd)
            except NotADirectoryError:
                os.unlink(d, dir_fd=fd)
    os.rmdir(name, dir_fd=dfd)


def install_copy(root: str, directory: str, src: str, name: str, label: str) -> str:
    """src copied to directory/name (below root; made where missing), kept when current (same
    size and mtime), else written under a name of its own and renamed into place, so slots
    installing it at once never see half a file. Written by descriptor: never through a
    planted link. Returns its path."""
    make_dir(root, directory, label)
    dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        s = os.stat(src)
        try:
            d = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if stat.S_ISREG(d.st_mode) and d.st_nlink == 1 and \
                    (d.st_size, int(d.st_mtime)) == (s.st_size, int(s.st_mtime)):
                return os.path.join(directory, name)
        except FileNotFoundError:
            pass
        tmp = f"{name}.{os.getpid()}.{os.urandom(4).hex()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o755, dir_fd=dfd)
        try:
            with open(src, "rb") as f:
                os.sendfile(fd, f.fileno(), 0, s.st_size)
            os.utime(fd, ns=(s.st_atime_ns, s.st_mtime_ns))
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except OSError as e:
        raise KernelError(f"{label}: cannot install {name} in {directory}: "
                          f"{e.strerror or e}") from None
    finally:
        os.close(dfd)
    return os.path.join(directory, name)
