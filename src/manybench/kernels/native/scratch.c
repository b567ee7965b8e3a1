/* Scratch as hostile ground: a file below a run's scratch root is reached by descriptor,
 * each directory opened from the one above it (openat, O_NOFOLLOW | O_DIRECTORY), the file
 * itself with O_NOFOLLOW | O_NONBLOCK and checked once open: a regular file with one link.
 * A symbolic link, a hard link to a file elsewhere, a FIFO, a socket or a device planted
 * there is refused with its name and what it is, and nothing is written through it. Used by
 * the extension (kernels/iofile.py) and by mbkernel inside a wrap: one rule for both.
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

static const char *kind(mode_t m)
{
    return S_ISLNK(m) ? "a symbolic link" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket"
         : S_ISDIR(m) ? "a directory" : S_ISCHR(m) || S_ISBLK(m) ? "a device"
         : S_ISREG(m) ? "a regular file" : "an unknown kind of file";
}

/* What is at dfd/name, for a message ("a symbolic link"), or NULL when lstat fails. */
static const char *found(int dfd, const char *name)
{
    struct stat st;
    return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? kind(st.st_mode) : NULL;
}

static int refuse(char *msg, size_t len, const char *root, const char *rel, const char *what,
                  const char *want)
{
    snprintf(msg, len, "%s/%s is %s, not %s: nothing in scratch is used through one", root,
             rel, what, want);
    return EPERM;
}

int nb_scratch_open(const char *root, const char *rel, int flags, int mode, int *out,
                    char *msg, size_t len)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", rel) >= (int)sizeof path)
        return nb_fail_msg(msg, len, ENAMETOOLONG, "%s/%s", root, rel);
    int dfd = open(root, DIR_FLAGS);
    if (dfd < 0) {
        int e = errno;
        if (e == ELOOP || e == ENOTDIR)
            return refuse(msg, len, root, ".", found(AT_FDCWD, root) ?: "not a directory",
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
            if (e == ELOOP || e == ENOTDIR)
                return refuse(msg, len, root, path, what ? what : "not a directory",
                              "a directory");
            return nb_fail_msg(msg, len, e, "cannot open %s/%s", root, path);
        }
        close(dfd);
        dfd = nfd;
        *slash = '/';
        part = slash + 1;
    }
    if (want_dir) {
        *out = dfd;
        return 0;
    }
    /* O_NONBLOCK: a FIFO opens at once (or fails) instead of waiting for a peer; O_TRUNC
     * only once the file is known to be ours alone (a hard link would truncate another) */
    int fd = openat(dfd, part, (flags & ~O_TRUNC) | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
    if (fd < 0) {
        int e = errno;
        const char *what = found(dfd, part);
        close(dfd);
        if (e == ELOOP || e == ENXIO || e == EISDIR || (what && strcmp(what, "a regular file")))
            return refuse(msg, len, root, rel, what ? what : "not a regular file",
                          "a regular file");
        return nb_fail_msg(msg, len, e, "cannot open %s/%s", root, rel);
    }
    close(dfd);
    struct stat st;
    int e = 0;
    if (fstat(fd, &st) != 0)
        e = nb_fail_msg(msg, len, errno, "cannot stat %s/%s", root, rel);
    else if (!S_ISREG(st.st_mode))
        e = refuse(msg, len, root, rel, kind(st.st_mode), "a regular file");
    else if (st.st_nlink != 1) {
        snprintf(msg, len, "%s/%s has %ju links: a file in scratch is never used through a "
                 "hard link (its writes would change the file behind the other name)", root,
                 rel, (uintmax_t)st.st_nlink);
        e = EPERM;
    } else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
        e = nb_fail_msg(msg, len, errno, "fcntl on %s/%s", root, rel);
    else if ((flags & O_TRUNC) && ftruncate(fd, 0) != 0)
        e = nb_fail_msg(msg, len, errno, "cannot truncate %s/%s", root, rel);
    if (e) {
        close(fd);
        return e;
    }
    *out = fd;
    return 0;
}
