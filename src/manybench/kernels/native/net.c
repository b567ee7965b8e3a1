/* net.pingpong / net.stream: timed loops on one connected TCP socket of a rank pair.
 *
 * The Python side (kernels/net.py) listens, connects, handshakes and sets the socket options;
 * these loops get a connected blocking socket. Each call does its warm-up exchange first (both
 * ends are in their call by then), then waits for T0, then runs the timed loop, so nothing but
 * socket calls and one MONOTONIC read per message sits inside the window.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net.h"

#define XFER_CLOSED (-1) /* the peer closed its side */
#define EOF_SLACK_NS 100000000LL /* a sender may stop this much before the receiver's stonewall */

/* Moves exactly n bytes. 0 = done, XFER_CLOSED = the peer closed, else an errno (EAGAIN: the
 * peer made no progress for timeout_ns; in blocking mode SO_RCVTIMEO/SO_SNDTIMEO says so). */
static int xfer_all(int fd, char *buf, size_t n, int sending, int busy, int64_t timeout_ns)
{
    int flags = (sending ? MSG_NOSIGNAL : 0) | (busy ? MSG_DONTWAIT : 0);
    int64_t since = 0;
    unsigned spins = 0;
    while (n > 0) {
        ssize_t k = sending ? send(fd, buf, n, flags) : recv(fd, buf, n, flags);
        if (k > 0) {
            buf += k;
            n -= (size_t)k;
            since = 0;
            continue;
        }
        if (k == 0)
            return sending ? EIO : XFER_CLOSED;
        int e = errno;
        if (e == EINTR)
            continue;
        if (e != EAGAIN && e != EWOULDBLOCK)
            return e;
        if (!busy)
            return EAGAIN;
        if ((++spins & 1023u) == 0) { /* busy: the clock is read only now and then */
            int64_t now = nb_mono();
            if (!since)
                since = now;
            else if (now - since > timeout_ns)
                return EAGAIN;
        }
    }
    return 0;
}

/* The error of a failed xfer_all, in words: during <what> <i+1> [of <n>] (n 0 = open-ended). */
static void xfer_error(nb_result *r, int rc, int sending, const char *what, uint64_t i,
                       uint64_t n, int64_t timeout_ns)
{
    char where[96], of[32] = "";
    if (n)
        snprintf(of, sizeof of, " of %llu", (unsigned long long)n);
    snprintf(where, sizeof where, "%s %llu%s", what, (unsigned long long)i + 1, of);
    if (rc == XFER_CLOSED)
        nb_set_error(r, ECONNRESET, "the peer closed the connection during %s", where);
    else if (rc == EAGAIN)
        nb_set_error(r, ETIMEDOUT, "the peer made no progress for %.3g s during %s",
                     (double)timeout_ns / 1e9, where);
    else
        nb_fail(r, rc, "%s during %s", sending ? "send" : "recv", where);
}

/* Buffers first: what can fail or fault does so before the wait. */
static char *setup(const nb_net_args *a, nb_result *r)
{
    if (a->msg_size == 0) {
        nb_set_error(r, EINVAL, "msg_size must be at least 1 byte");
        return NULL;
    }
    r->hist = calloc(HIST_BUCKETS, sizeof *r->hist);
    char *buf = nb_alloc_buffer(a->msg_size, 1);
    if (!r->hist || !buf) {
        nb_fail(r, ENOMEM, "allocating a %llu-byte message buffer",
                (unsigned long long)a->msg_size);
        free(buf);
        return NULL;
    }
    return buf;
}

/* One round trip: the client sends then receives, the server (echo) receives then sends.
 * Returns 0 or the failing xfer_all code, with *sending saying which half failed. */
static inline int round_trip(const nb_net_args *a, char *buf, int *sending)
{
    size_t n = (size_t)a->msg_size;
    int first = !a->server;
    *sending = first;
    int rc = xfer_all(a->fd, buf, n, first, a->busy, a->timeout_ns);
    if (rc)
        return rc;
    *sending = !first;
    return xfer_all(a->fd, buf, n, !first, a->busy, a->timeout_ns);
}

int nb_net_pingpong(const nb_net_args *a, int64_t t0_ns, int64_t spin_ns, nb_result *r,
                    nb_net_out *o)
{
    memset(o, 0, sizeof *o);
    if (a->iterations == 0)
        nb_set_error(r, EINVAL, "iterations must be at least 1");
    char *buf = r->err ? NULL : setup(a, r);
    if (!buf)
        return r->err;
    int sending = 0, rc = 0;
    for (uint64_t i = 0; i < a->warmup && !rc; i++)
        if ((rc = round_trip(a, buf, &sending)))
            xfer_error(r, rc, sending, "warm-up round trip", i, a->warmup, a->timeout_ns);
    if (rc) {
        free(buf);
        return r->err;
    }
    size_t n = (size_t)a->msg_size;
    uint64_t i = 0;
    int64_t s = nb_begin(r, t0_ns, spin_ns), t = s, last;
    if (!a->server) {
        /* Client: one clock read per round trip; the histogram holds RTT/2 (one-way). */
        for (; i < a->iterations; i++) {
            if ((rc = round_trip(a, buf, &sending)))
                break;
            int64_t t2 = nb_mono();
            r->hist[nb_bucket((uint64_t)(t2 - t) / 2)]++;
            t = t2;
        }
        last = t;
        o->span_ns = t - s;
        o->span_ops = i;
    } else {
        /* Server: the first receive includes waiting for the client to start, so its own
         * latency figures are taken between consecutive receives (one round trip each). */
        int64_t first = 0, prev = 0;
        for (; i < a->iterations; i++) {
            sending = 0;
            if ((rc = xfer_all(a->fd, buf, n, 0, a->busy, a->timeout_ns)))
                break;
            int64_t t2 = nb_mono();
            if (i)
                r->hist[nb_bucket((uint64_t)(t2 - prev) / 2)]++;
            else
                first = t2;
            prev = t2;
            NB_PROGRESS(2 * a->msg_size * (uint64_t)(i + 1)); /* bytes both ways so far */
            sending = 1;
            if ((rc = xfer_all(a->fd, buf, n, 1, a->busy, a->timeout_ns)))
                break;
        }
        last = nb_mono();
        o->span_ns = i > 1 ? prev - first : 0;
        o->span_ops = i > 1 ? i - 1 : 0;
    }
    if (rc)
        xfer_error(r, rc, sending, "round trip", i, a->iterations, a->timeout_ns);
    r->ops = i;
    r->bytes = 2 * a->msg_size * i;
    nb_end(r, s, last);
    free(buf);
    return r->err;
}

/* The sender's side of net.stream. */
static void stream_send(const nb_net_args *a, char *buf, int64_t t0_ns, int64_t spin_ns,
                        nb_result *r)
{
    int rc = 0;
    for (uint64_t i = 0; i < a->warmup && !rc; i++)
        if ((rc = xfer_all(a->fd, buf, (size_t)a->msg_size, 1, a->busy, a->timeout_ns)))
            xfer_error(r, rc, 1, "warm-up message", i, a->warmup, a->timeout_ns);
    char ack;
    if (!rc && (rc = xfer_all(a->fd, &ack, 1, 0, a->busy, a->timeout_ns)))
        xfer_error(r, rc, 0, "the warm-up acknowledgement", 0, 1, a->timeout_ns);
    if (rc)
        return;
    int64_t s = nb_begin(r, t0_ns, spin_ns), t = s;
    int64_t dl = a->deadline_ns ? s + (a->deadline_ns - r->start_ns) : INT64_MAX;
    uint64_t done = 0, total = a->size ? (a->size + a->msg_size - 1) / a->msg_size : 0;
    while ((!a->size || done < a->size) && t < dl) {
        size_t n = (size_t)a->msg_size;
        if (a->size && a->size - done < n)
            n = (size_t)(a->size - done);
        rc = xfer_all(a->fd, buf, n, 1, a->busy, a->timeout_ns);
        int64_t t2 = nb_mono();
        if (rc) {
            xfer_error(r, rc, 1, "message", r->ops, total, a->timeout_ns);
            break;
        }
        r->hist[nb_bucket((uint64_t)(t2 - t))]++;
        r->ops++;
        done += n;
        NB_PROGRESS(done);
        t = t2;
    }
    r->bytes = done;
    nb_end(r, s, t);
    /* The end of the stream, outside the window: the receiver drains to it. */
    if (!r->err)
        shutdown(a->fd, SHUT_WR);
}

/* The receiver's side of net.stream: counts what arrives until the size or the stonewall. */
static void stream_recv(const nb_net_args *a, char *buf, int64_t t0_ns, int64_t spin_ns,
                        nb_result *r, nb_net_out *o)
{
    int rc = 0;
    uint64_t msg = a->msg_size;
    for (uint64_t i = 0; i < a->warmup && !rc; i++)
        if ((rc = xfer_all(a->fd, buf, (size_t)msg, 0, a->busy, a->timeout_ns)))
            xfer_error(r, rc, 0, "warm-up message", i, a->warmup, a->timeout_ns);
    char ack = 1;
    if (!rc && (rc = xfer_all(a->fd, &ack, 1, 1, a->busy, a->timeout_ns)))
        xfer_error(r, rc, 1, "the warm-up acknowledgement", 0, 1, a->timeout_ns);
    if (rc)
        return;
    int flags = a->busy ? MSG_DONTWAIT : 0;
    int64_t s = nb_begin(r, t0_ns, spin_ns), t = s, tmsg = s, since = 0;
    int64_t dl = a->deadline_ns ? s + (a->deadline_ns - r->start_ns) : INT64_MAX;
    uint64_t done = 0, boundary = msg;
    unsigned spins = 0;
    while ((!a->size || done < a->size) && t < dl) {
        size_t want = (size_t)msg;
        if (a->size && a->size - done < want)
            want = (size_t)(a->size - done);
        ssize_t k = recv(a->fd, buf, want, flags);
        int e = k < 0 ? errno : 0;
        if (k > 0) {
            int64_t t2 = nb_mono();
            done += (uint64_t)k;
            NB_PROGRESS(done);
            t = t2;
            since = 0;
            while (done >= boundary) { /* per-message arrival times */
                r->hist[nb_bucket((uint64_t)(t2 - tmsg))]++;
                r->ops++;
                tmsg = t2;
                boundary += msg;
            }
            continue;
        }
        if (k == 0) {
            o->eof = 1;
            t = nb_mono();
            if (a->size && done < a->size)
                nb_set_error(r, ECONNRESET, "the sender closed the connection after %llu of "
                             "%llu bytes", (unsigned long long)done,
                             (unsigned long long)a->size);
            else if (a->deadline_ns && dl - t > EOF_SLACK_NS)
                nb_set_error(r, ECONNRESET, "the sender closed the connection %.3f s before "
                             "the stonewall, after %llu bytes", (double)(dl - t) / 1e9,
                             (unsigned long long)done);
            break;
        }
        if (e == EINTR)
            continue;
        if (e == EAGAIN || e == EWOULDBLOCK) {
            if (a->busy) {
                if ((++spins & 1023u) != 0)
                    continue;
                int64_t now = nb_mono();
                if (!since)
                    since = now;
                if (now - since <= a->timeout_ns) {
                    t = now; /* the stonewall also ends a wait for data that does not come */
                    continue;
                }
            }
            nb_set_error(r, ETIMEDOUT, "the sender made no progress for %.3g s, after %llu "
                         "bytes", (double)a->timeout_ns / 1e9, (unsigned long long)done);
            break;
        }
        nb_fail(r, e, "recv after %llu bytes", (unsigned long long)done);
        break;
    }
    if (a->size && done == a->size && done % msg) { /* the last, partial message */
        r->hist[nb_bucket((uint64_t)(t - tmsg))]++;
        r->ops++;
    }
    r->bytes = done;
    nb_end(r, s, t);
    /* Past the stonewall the sender may still be sending: drain to its end of stream (outside
     * the window) so it never blocks on a full window. */
    while (!o->eof && !r->err) {
        ssize_t k = recv(a->fd, buf, (size_t)msg, 0);
        if (k == 0)
            o->eof = 1;
        else if (k < 0 && errno != EINTR)
            break; /* reset, or silent past the timeout: the measurement is done anyway */
    }
}

int nb_net_stream(const nb_net_args *a, int64_t t0_ns, int64_t spin_ns, nb_result *r,
                  nb_net_out *o)
{
    memset(o, 0, sizeof *o);
    if (!a->size && !a->deadline_ns)
        nb_set_error(r, EINVAL, "net.stream needs a size or a deadline");
    char *buf = r->err ? NULL : setup(a, r);
    if (!buf)
        return r->err;
    if (a->server)
        stream_recv(a, buf, t0_ns, spin_ns, r, o);
    else
        stream_send(a, buf, t0_ns, spin_ns, r);
    free(buf);
    return r->err;
}
