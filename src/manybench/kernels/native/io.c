/* io.write / io.read: sequential block I/O on one open file, and the layout of read files. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "native.h"

void *nb_alloc_buffer(uint64_t block, int fill)
{
    size_t len = (size_t)((block + NB_ALIGN - 1) / NB_ALIGN * NB_ALIGN);
    void *buf = NULL;
    int rc = posix_memalign(&buf, NB_ALIGN, len ? len : NB_ALIGN);
    if (rc != 0) {
        errno = rc;
        return NULL;
    }
    /* Filling touches every page now, so no page fault lands inside the timed window, and
     * the pseudo-random bytes keep compressing or deduplicating storage honest. */
    uint64_t x = 0x9e3779b97f4a7c15ULL, *w = buf;
    for (size_t i = 0; i < len / 8; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        w[i] = fill ? (x | 0x0101010101010101ULL) : 0;
    }
    return buf;
}

/* The timed loop. One MONOTONIC read per operation: the end of op i is the start of op i+1,
 * so the latency histogram costs one vDSO call per op and nothing is counted twice. */
static void io_loop(const nb_io_args *a, void *buf, int64_t s, nb_result *r, int64_t *last)
{
    int64_t t = s;
    int64_t dl = a->deadline_ns ? s + (a->deadline_ns - r->start_ns) : INT64_MAX;
    uint64_t done = 0, pos = 0;
    while ((!a->size || done < a->size) && t < dl) {
        size_t n = (size_t)a->block;
        if (a->size && a->size - done < n)
            n = (size_t)(a->size - done);
        ssize_t k = a->write ? write(a->fd, buf, n) : read(a->fd, buf, n);
        int e = k < 0 ? errno : 0; /* before anything else can touch errno */
        int64_t t2 = nb_mono();
        if (k < 0) {
            if (e == EINTR)
                continue;
            nb_fail(r, e, "%s at offset %llu", a->write ? "write" : "read",
                    (unsigned long long)pos);
            break;
        }
        if (k == 0) {
            if (a->write) {
                nb_set_error(r, EIO, "write at offset %llu wrote nothing",
                             (unsigned long long)pos);
                break;
            }
            if (a->deadline_ns && pos > 0) { /* stonewall reads wrap around at EOF */
                if (lseek(a->fd, 0, SEEK_SET) < 0) {
                    nb_fail(r, errno, "lseek to 0 at end of file");
                    break;
                }
                pos = 0;
                t = t2;
                continue;
            }
            if (a->size)
                nb_set_error(r, ENODATA, "end of file after %llu bytes, before size %llu",
                             (unsigned long long)done, (unsigned long long)a->size);
            break; /* no size: reading to EOF is the whole job */
        }
        r->hist[nb_bucket((uint64_t)(t2 - t))]++;
        r->ops++;
        done += (uint64_t)k;
        NB_PROGRESS(done);
        pos += (uint64_t)k;
        t = t2;
    }
    r->bytes = done;
    if (a->write && a->fsync_end && !r->err) { /* as fio's end_fsync: inside the window */
        int rc = fsync(a->fd);
        int64_t t2 = nb_mono();
        if (rc != 0)
            nb_fail(r, errno, "fsync after %llu bytes", (unsigned long long)done);
        r->fsync_ns = t2 - t;
        t = t2;
    }
    *last = t;
}

int nb_run_io(const nb_io_args *a, int64_t t0_ns, int64_t spin_ns, nb_result *r)
{
    if (a->block == 0)
        nb_set_error(r, EINVAL, "block must be at least 1 byte");
    else if (a->write && !a->size && !a->deadline_ns)
        nb_set_error(r, EINVAL, "a write needs a size or a deadline");
    else if (a->direct && (a->block % NB_ALIGN || a->size % NB_ALIGN))
        nb_set_error(r, EINVAL, "direct I/O needs block and size multiples of %d", NB_ALIGN);
    if (r->err)
        return r->err;
    /* Everything that can fail or fault is done before the wait. */
    r->hist = calloc(HIST_BUCKETS, sizeof *r->hist);
    void *buf = nb_alloc_buffer(a->block, a->write);
    if (!r->hist || !buf) {
        nb_fail(r, ENOMEM, "allocating a %llu-byte buffer", (unsigned long long)a->block);
        free(buf);
        return r->err;
    }
    int64_t s = nb_begin(r, t0_ns, spin_ns), last = s;
    io_loop(a, buf, s, r, &last);
    nb_end(r, s, last);
    free(buf);
    return r->err;
}

static int write_all(int fd, const char *buf, size_t n, uint64_t off)
{
    while (n > 0) {
        ssize_t k = pwrite(fd, buf, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return k < 0 ? errno : EIO;
        buf += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

int nb_preallocate(int fd, uint64_t size)
{
    /* fio's default fallocate=native: fallocate(fd, 0, 0, size); a file system without it
     * (EOPNOTSUPP) gets no preallocation, as fio goes on without, never glibc's emulation
     * (posix_fallocate writing zeros would be work fio does not do) */
    struct stat st; /* regular files only, as fio (a device has nothing to allocate) */
    if (!size || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        fallocate(fd, 0, 0, (off_t)size) == 0)
        return 0;
    return errno == EOPNOTSUPP || errno == ENOSYS ? 0 : errno;
}

int nb_layout(int fd, const char *label, uint64_t size, uint64_t block, char *msg,
              size_t msglen)
{
    if (block == 0)
        block = 1 << 20;
    /* fd: opened by nb_scratch_open, so the inode written is the one checked */
    struct stat st;
    if (fstat(fd, &st) != 0)
        return nb_fail_msg(msg, msglen, errno, "cannot stat %s", label);
    int err = 0;
    uint64_t off = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    if (off < size) {
        char *buf = nb_alloc_buffer(block, 1);
        if (!buf)
            err = nb_fail_msg(msg, msglen, ENOMEM, "allocating a layout buffer");
        for (; buf && off < size && !err; off += block) {
            size_t n = size - off < block ? (size_t)(size - off) : (size_t)block;
            int e = write_all(fd, buf, n, off);
            if (e)
                err = nb_fail_msg(msg, msglen, e, "laying out %s at offset %llu", label,
                                  (unsigned long long)off);
        }
        free(buf);
        /* On the device, not only in the page cache: a later drop of the cache must be able
         * to evict these pages, and a read test must not pay for their writeback. */
        if (!err && fsync(fd) != 0)
            err = nb_fail_msg(msg, msglen, errno, "fsync of %s", label);
    }
    return err;
}

/* Pages of [0, size) of an open file that are in the page cache, counted with mincore on a
 * mapping that is never touched (so nothing is read in): how much of a read will come from
 * memory. Returns 0 with *resident and *pages set, or an errno. */
int nb_resident(int fd, uint64_t size, uint64_t *resident, uint64_t *pages)
{
    long psz = sysconf(_SC_PAGESIZE);
    *resident = *pages = 0;
    if (size == 0)
        return 0;
    void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return errno;
    size_t n = (size_t)((size + (uint64_t)psz - 1) / (uint64_t)psz);
    unsigned char *vec = malloc(n);
    int e = 0;
    if (!vec)
        e = ENOMEM;
    else if (mincore(m, (size_t)size, vec) != 0)
        e = errno;
    else
        for (size_t i = 0; i < n; i++)
            *resident += vec[i] & 1;
    *pages = n;
    free(vec);
    munmap(m, (size_t)size);
    return e;
}
