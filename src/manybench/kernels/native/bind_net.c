/* Python bindings of the net kernels (net.c): the result dict of API.md plus the span the
 * mean latency is taken over (span_ns, span_ops) and whether the sender closed (eof). */
#include "bind.h"
#include "net.h"

static int parse_net(PyObject *args, nb_net_args *a, int stream, long long *t0,
                     long long *spin)
{
    int fd, server, busy;
    long long msg, count, warmup, deadline = 0, timeout;
    int ok = stream ? PyArg_ParseTuple(args, "ippLLLLLLL", &fd, &server, &busy, &msg, &count,
                                       &deadline, &warmup, &timeout, t0, spin)
                    : PyArg_ParseTuple(args, "ippLLLLLL", &fd, &server, &busy, &msg, &count,
                                       &warmup, &timeout, t0, spin);
    if (!ok)
        return 0;
    if (msg < 1 || count < 0 || warmup < 0 || deadline < 0 || timeout < 1) {
        PyErr_SetString(PyExc_ValueError, "msg_size must be positive; counts, deadline and "
                                          "timeout must not be negative");
        return 0;
    }
    memset(a, 0, sizeof *a);
    a->fd = fd;
    a->server = server;
    a->busy = busy;
    a->msg_size = (uint64_t)msg;
    a->warmup = (uint64_t)warmup;
    a->timeout_ns = timeout;
    if (stream) {
        a->size = (uint64_t)count;
        a->deadline_ns = deadline;
    } else {
        a->iterations = (uint64_t)count;
    }
    return 1;
}

static PyObject *net_dict(nb_result *r, const nb_net_out *o)
{
    PyObject *d = nb_result_dict(r, 0);
    if (!d)
        return NULL;
    PyObject *span = PyLong_FromLongLong(o->span_ns), *ops = PyLong_FromUnsignedLongLong(
                                                           o->span_ops);
    int bad = !span || !ops || PyDict_SetItemString(d, "span_ns", span) < 0 ||
              PyDict_SetItemString(d, "span_ops", ops) < 0 ||
              PyDict_SetItemString(d, "eof", o->eof ? Py_True : Py_False) < 0;
    Py_XDECREF(span);
    Py_XDECREF(ops);
    if (bad) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *py_net_pingpong(PyObject *self, PyObject *args)
{
    nb_net_args a;
    nb_net_out o;
    nb_result r = {0};
    long long t0, spin;
    if (!parse_net(args, &a, 0, &t0, &spin))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    nb_net_pingpong(&a, t0, spin, &r, &o);
    Py_END_ALLOW_THREADS
    return net_dict(&r, &o);
}

static PyObject *py_net_stream(PyObject *self, PyObject *args)
{
    nb_net_args a;
    nb_net_out o;
    nb_result r = {0};
    long long t0, spin;
    if (!parse_net(args, &a, 1, &t0, &spin))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    nb_net_stream(&a, t0, spin, &r, &o);
    Py_END_ALLOW_THREADS
    return net_dict(&r, &o);
}

PyMethodDef nb_net_methods[] = {
    {"net_pingpong", py_net_pingpong, METH_VARARGS,
     "net_pingpong(fd, server, busy, msg_size, iterations, warmup, timeout_ns, t0_ns, spin_ns)"
     " -> dict (+ span_ns, span_ops, eof)"},
    {"net_stream", py_net_stream, METH_VARARGS,
     "net_stream(fd, server, busy, msg_size, size, deadline_ns, warmup, timeout_ns, t0_ns, "
     "spin_ns) -> dict (+ span_ns, span_ops, eof)"},
    {NULL, NULL, 0, NULL},
};
