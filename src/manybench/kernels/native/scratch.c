/* Scratch as hostile ground: a file below a run's scratch root is reached by descriptor,
 * each directory opened from the one above it (openat, O_NOFOLLOW | O_DIRECTORY), the file
 * itself with O_NOFOLLOW | O_NONBLOCK and checked once open: a regular file with one link.
 * A symbolic link, a hard link to a file elsewhere, a FIFO, a socket or a device planted
 * there is refused with its name and what it is, and nothing is written through it. Used by
 * the extension (kernels/iofile.py, meta.c) and by mbkernel inside a wrap: one rule for all.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "native.h"

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

const char *nb_scratch_kind(mode_t m)
{
    return S_ISLNK(m) ? "a symbolic link" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket"
         : S_ISDIR(m) ? "a directory" : S_ISCHR(m) || S_ISBLK(m) ? "a device"
         : S_ISREG(m) ? "a regular file" : "an unknown kind of file";
}

/* What is at dfd/name, for a message ("a symbolic link"), or NULL when lstat fails. */
static const char *found(int dfd, const char *name)
{
    struct stat st;
    return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? nb_scratch_kind(st.st_mode)
                                                            : NULL;
}

static int refuse(char *msg, size_t len, const char *shown, const char *what, const char *want)
{
    snprintf(msg, len, "%s is %s, not %s: nothing in scratch is used through one", shown, what,
             want);
    return EPERM;
}

int nb_scratch_refusal(const struct stat *st, mode_t want, const char *shown, char *msg,
                       size_t len)
{
    if ((st->st_mode & S_IFMT) != want)
        return refuse(msg, len, shown, nb_scratch_kind(st->st_mode),
                      want == S_IFDIR ? "a directory" : "a regular file");
    if (want == S_IFREG && st->st_nlink != 1) {
        snprintf(msg, len, "%s has %ju links: a file in scratch is never used through a hard "
                 "link (its writes would change the file behind the other name)", shown,
                 (uintmax_t)st->st_nlink);
        return EPERM;
    }
    return 0;
}

int nb_scratch_check(int dfd, const char *name, mode_t want, const char *shown, char *msg,
                     size_t len)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno;
    return nb_scratch_refusal(&st, want, shown, msg, len);
}

int nb_scratch_openat(int dfd, const char *name, const char *shown, int flags, int mode,
                      int *out, char *msg, size_t len)
{
    /* O_NONBLOCK: a FIFO opens at once (or fails) instead of waiting for a peer; O_TRUNC
     * only once the file is known to be ours alone (a hard link would truncate another) */
    int fd = openat(dfd, name, (flags & ~O_TRUNC) | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
    if (fd < 0) {
        int e = errno;
        const char *what = found(dfd, name);
        if (e == ELOOP || e == ENXIO || e == EISDIR || (what && strcmp(what, "a regular file")))
            return refuse(msg, len, shown, what ? what : "not a regular file",
                          "a regular file");
        return nb_fail_msg(msg, len, e, "cannot open %s", shown);
    }
    struct stat st;
    int e = 0;
    if (fstat(fd, &st) != 0)
        e = nb_fail_msg(msg, len, errno, "cannot stat %s", shown);
    else if ((e = nb_scratch_refusal(&st, S_IFREG, shown, msg, len)) != 0)
        ;
    else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
        e = nb_fail_msg(msg, len, errno, "fcntl on %s", shown);
    else if ((flags & O_TRUNC) && ftruncate(fd, 0) != 0)
        e = nb_fail_msg(msg, len, errno, "cannot truncate %s", shown);
    if (e) {
        close(fd);
        return e;
    }
    *out = fd;
    return 0;
}

/* A directory below the root that another user could change: anyone who may write to it
 * may swap an entry for a link between a check and a use by path. */
static int shared_dir(int fd, const char *root, const char *path, char *msg, size_t len)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return nb_fail_msg(msg, len, errno, "cannot stat %s/%s", root, path);
    if (st.st_uid == geteuid() && !(st.st_mode & (S_IWGRP | S_IWOTH)))
        return 0;
    snprintf(msg, len, "%s/%s can be changed by other users (mode %03o, owner uid %ju): a "
             "directory reached by path in the timed window must be this user's alone", root,
             path, (unsigned)(st.st_mode & 07777), (uintmax_t)st.st_uid);
    return EPERM;
}

/* root/rel by descriptor: *out is rel's directory with `private` or O_DIRECTORY in flags,
 * else the file, opened and checked. */
static int open_below(const char *root, const char *rel, int flags, int mode, int private,
                      int *out, char *msg, size_t len)
{
    char path[4096], shown[4096 + 256];
    if (snprintf(path, sizeof path, "%s", rel) >= (int)sizeof path)
        return nb_fail_msg(msg, len, ENAMETOOLONG, "%s/%s", root, rel);
    int dfd = open(root, DIR_FLAGS);
    if (dfd < 0) {
        int e = errno;
        snprintf(shown, sizeof shown, "%s/.", root);
        if (e == ELOOP || e == ENOTDIR)
            return refuse(msg, len, shown, found(AT_FDCWD, root) ?: "not a directory",
                          "a directory");
        return nb_fail_msg(msg, len, e, "cannot open %s", root);
    }
    char *part = path, *slash;
    size_t n = strlen(path);
    int want_dir = (flags & O_DIRECTORY) != 0; /* the last component is a directory too */
    if (want_dir && n > 0 && n + 1 < sizeof path && path[n - 1] != '/')
        strcat(path, "/");
    while ((slash = strchr(part, '/')) != NULL) { /* each directory from the one above it */
        *slash = 0;
        if (!*part || strcmp(part, ".") == 0 || strcmp(part, "..") == 0) {
            close(dfd);
            return nb_fail_msg(msg, len, EINVAL, "%s/%s: not a plain path below the root",
                               root, rel);
        }
        int nfd = openat(dfd, part, DIR_FLAGS);
        if (nfd < 0 && errno == ENOENT && (flags & O_CREAT)) {
            if (mkdirat(dfd, part, 0700) != 0 && errno != EEXIST) {
                int e = errno;
                close(dfd);
                return nb_fail_msg(msg, len, e, "cannot create %s/%s", root, path);
            }
            nfd = openat(dfd, part, DIR_FLAGS);
        }
        if (nfd < 0) {
            int e = errno;
            const char *what = found(dfd, part);
            close(dfd);
            snprintf(shown, sizeof shown, "%s/%s", root, path);
            if (e == ELOOP || e == ENOTDIR)
                return refuse(msg, len, shown, what ? what : "not a directory", "a directory");
            return nb_fail_msg(msg, len, e, "cannot open %s", shown);
        }
        close(dfd);
        dfd = nfd;
        int e = private ? shared_dir(dfd, root, path, msg, len) : 0;
        if (e) {
            close(dfd);
            return e;
        }
        *slash = '/';
        part = slash + 1;
    }
    if (want_dir) {
        *out = dfd;
        return 0;
    }
    snprintf(shown, sizeof shown, "%s/%s", root, rel);
    int e = nb_scratch_openat(dfd, part, shown, flags, mode, out, msg, len);
    close(dfd);
    return e;
}

int nb_scratch_open(const char *root, const char *rel, int flags, int mode, int *out,
                    char *msg, size_t len)
{
    return open_below(root, rel, flags, mode, 0, out, msg, len);
}

int nb_scratch_dir(const char *root, const char *rel, int create, int private, int *out,
                   char *msg, size_t len)
{
    return open_below(root, rel, O_DIRECTORY | (create ? O_CREAT : 0), 0, private, out, msg,
                      len);
}
