/* net kernels: what net.c and bind_net.c share (the family's own header; see native.h). */
#ifndef MANYBENCH_NET_H
#define MANYBENCH_NET_H

#include "native.h"

/* One side of a connected TCP pair. The socket is connected and blocking; SO_RCVTIMEO and
 * SO_SNDTIMEO bound how long a silent peer can hold a blocking call (EAGAIN = timeout). */
typedef struct {
    int fd;
    int server;           /* 1: the even rank (echoes / receives); 0: the client (sends) */
    int busy;             /* 1: MSG_DONTWAIT calls spun on EAGAIN instead of blocking */
    uint64_t msg_size;    /* bytes per message */
    uint64_t iterations;  /* pingpong: timed round trips */
    uint64_t warmup;      /* pingpong: round trips; stream: messages; before the wait */
    uint64_t size;        /* stream: bytes to move, 0 = no limit */
    int64_t deadline_ns;  /* stream: absolute REALTIME stop (the stonewall), 0 = none */
    int64_t timeout_ns;   /* a peer silent this long is an error */
} nb_net_args;

/* What a run adds to nb_result: the span the mean latency is taken over. */
typedef struct {
    int64_t span_ns;      /* pingpong: MONOTONIC span covering span_ops round trips */
    uint64_t span_ops;
    int eof;              /* stream receiver: the sender closed its side (normal end) */
} nb_net_out;

int nb_net_pingpong(const nb_net_args *a, int64_t t0_ns, int64_t spin_ns, nb_result *r,
                    nb_net_out *o);
int nb_net_stream(const nb_net_args *a, int64_t t0_ns, int64_t spin_ns, nb_result *r,
                  nb_net_out *o);

#endif
