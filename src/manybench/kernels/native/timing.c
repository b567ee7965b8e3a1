/* Waiting for T0 and stamping the timed window; the null kernel. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "native.h"

int64_t nb_wait_until(int64_t t0_ns, int64_t spin_ns)
{
    if (spin_ns < 0)
        spin_ns = 0;
    int64_t target = t0_ns - spin_ns;
    int64_t now = nb_now();
    /* Absolute sleep: a late wake-up or a signal cannot push the target back. */
    while (now < target) {
        struct timespec ts = {.tv_sec = target / 1000000000LL,
                              .tv_nsec = target % 1000000000LL};
        int rc = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL);
        now = nb_now();
        if (rc != 0 && rc != EINTR)
            break; /* EINVAL (target before the epoch): nothing to sleep for */
    }
    /* The last stretch: spin so the first operation starts within a clock read of T0. */
    while (now < t0_ns)
        now = nb_now();
    return now;
}

int nb_set_timerslack(unsigned long ns)
{
    /* PR_SET_TIMERSLACK treats 0 as "back to the default": keep at least 1 ns. */
    return prctl(PR_SET_TIMERSLACK, ns ? ns : 1UL, 0, 0, 0) == 0 ? 0 : errno;
}

/* vsnprintf the context, then append ": reason" when with_reason (GNU strerror_r returns
 * a pointer to a constant string or into buf: thread-safe either way). */
static void format_error(char *msg, size_t len, int err, int with_reason, const char *fmt,
                         va_list ap)
{
    vsnprintf(msg, len, fmt, ap);
    if (with_reason) {
        char buf[128];
        const char *why = strerror_r(err, buf, sizeof buf);
        size_t used = strlen(msg);
        snprintf(msg + used, len - used, ": %s", why);
    }
}

void nb_fail(nb_result *r, int err, const char *fmt, ...)
{
    if (r->err)
        return; /* keep the first error: later ones are usually its consequence */
    r->err = err ? err : EIO;
    va_list ap;
    va_start(ap, fmt);
    format_error(r->msg, sizeof r->msg, r->err, 1, fmt, ap);
    va_end(ap);
}

void nb_set_error(nb_result *r, int err, const char *fmt, ...)
{
    if (r->err)
        return;
    r->err = err ? err : EIO;
    va_list ap;
    va_start(ap, fmt);
    format_error(r->msg, sizeof r->msg, r->err, 0, fmt, ap);
    va_end(ap);
}

int nb_fail_msg(char *msg, size_t len, int err, const char *fmt, ...)
{
    err = err ? err : EIO;
    va_list ap;
    va_start(ap, fmt);
    format_error(msg, len, err, 1, fmt, ap);
    va_end(ap);
    return err;
}

uint64_t nb_progress;

int64_t nb_begin(nb_result *r, int64_t t0_ns, int64_t spin_ns)
{
    NB_PROGRESS(0);
    r->armed_ns = nb_now();
    r->start_ns = nb_wait_until(t0_ns, spin_ns);
    return nb_mono();
}

/* A slot sharing its core rests this long after its end stamp, still inside the C call, so
 * its reporting work does not delay slots on the same core that have not started yet. */
static int64_t settle_ns;

void nb_set_settle(int64_t ns) { settle_ns = ns > 0 ? ns : 0; }

void nb_end(nb_result *r, int64_t start_mono, int64_t last_mono)
{
    /* One quantity: the window is measured on the monotonic clock and the end stamp is the
     * realtime instant it ends at, start_ns + elapsed_ns, so end - start == elapsed exactly
     * (a second realtime read would differ by its own delay and by any clock slew). */
    r->elapsed_ns = last_mono - start_mono;
    r->end_ns = r->start_ns + r->elapsed_ns;
    if (settle_ns)
        nb_wait_until(nb_now() + settle_ns, 0);
}

void nb_run_null(nb_result *r, int64_t t0_ns, int64_t spin_ns)
{
    int64_t s = nb_begin(r, t0_ns, spin_ns);
    nb_end(r, s, nb_mono());
}
