/* Python bindings of the node probes (probe.h):
 *   noise_floor(cpus, spin_ns, sleep_ns, interval_ns) -> list of dicts, one per cpu, measured
 *       at once on one pinned thread each (-1: unpinned): reads, gaps_10us, gaps_100us,
 *       gaps_1ms, gap_max_ns, lost_ns, wakes, wakes_late (>= 100 us), wake_p50_ns,
 *       wake_p99_ns, wake_max_ns, pin_errno
 *   probe_clock(ns, trials) -> GHz of one busy core (0.0: no probe for this architecture)
 *   probe_fma(ns, trials) -> (GFLOPS at 64, 128, 256, 512 bits), 0.0 where not available
 */
#include <stdlib.h>

#include "bind.h"
#include "probe.h"

static PyObject *noise_dict(const nb_noise *n)
{
    return Py_BuildValue("{s:i,s:K,s:K,s:K,s:K,s:L,s:L,s:K,s:K,s:L,s:L,s:L,s:i}", "cpu", n->cpu,
                         "reads", (unsigned long long)n->reads, "gaps_10us",
                         (unsigned long long)n->gaps[0], "gaps_100us",
                         (unsigned long long)n->gaps[1], "gaps_1ms",
                         (unsigned long long)n->gaps[2], "gap_max_ns", (long long)n->gap_max_ns,
                         "lost_ns", (long long)n->lost_ns, "wakes",
                         (unsigned long long)n->wakes, "wakes_late",
                         (unsigned long long)n->wakes_late, "wake_p50_ns",
                         (long long)n->wake_p50_ns, "wake_p99_ns", (long long)n->wake_p99_ns,
                         "wake_max_ns", (long long)n->wake_max_ns, "pin_errno", n->err);
}

static PyObject *py_noise_floor(PyObject *self, PyObject *args)
{
    PyObject *cpus;
    long long spin, sleep, interval;
    if (!PyArg_ParseTuple(args, "OLLL", &cpus, &spin, &sleep, &interval))
        return NULL;
    if (spin < 0 || sleep < 0 || interval < 0) {
        PyErr_SetString(PyExc_ValueError, "durations must not be negative");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(cpus, "cpus must be a sequence of ints");
    if (!seq)
        return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    if (count < 1 || count > 65536) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "cpus must name 1 to 65536 cpus");
        return NULL;
    }
    nb_noise *n = calloc((size_t)count, sizeof *n);
    if (!n) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        long c = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (c == -1 && PyErr_Occurred()) {
            free(n);
            Py_DECREF(seq);
            return NULL;
        }
        n[i] = (nb_noise){.cpu = (int)c, .spin_ns = spin, .sleep_ns = sleep,
                          .interval_ns = interval};
    }
    Py_DECREF(seq);
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = nb_noise_many(n, (int)count);
    Py_END_ALLOW_THREADS
    if (err) {
        free(n);
        return nb_raise_errno(err, "noise_floor: starting a measuring thread failed");
    }
    PyObject *out = PyList_New(count);
    for (Py_ssize_t i = 0; out && i < count; i++) {
        PyObject *d = noise_dict(&n[i]);
        if (!d) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, d);
    }
    free(n);
    return out;
}

static PyObject *py_probe_clock(PyObject *self, PyObject *args)
{
    long long ns;
    int trials;
    double ghz;
    if (!PyArg_ParseTuple(args, "Li", &ns, &trials))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    ghz = nb_probe_clock_ghz(ns, trials);
    Py_END_ALLOW_THREADS
    return PyFloat_FromDouble(ghz);
}

static PyObject *py_probe_fma(PyObject *self, PyObject *args)
{
    long long ns;
    int trials;
    double g[4];
    if (!PyArg_ParseTuple(args, "Li", &ns, &trials))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    nb_probe_fma(ns, trials, g);
    Py_END_ALLOW_THREADS
    return Py_BuildValue("(dddd)", g[0], g[1], g[2], g[3]);
}

PyMethodDef nb_probe_methods[] = {
    {"noise_floor", py_noise_floor, METH_VARARGS,
     "noise_floor(cpus, spin_ns, sleep_ns, interval_ns) -> [dict per cpu]: clock-read gaps "
     "while spinning and lateness of absolute sleeps, measured at once on each cpu"},
    {"probe_clock", py_probe_clock, METH_VARARGS,
     "probe_clock(ns, trials) -> GHz of this busy core (dependent adds), 0.0 if unknown"},
    {"probe_fma", py_probe_fma, METH_VARARGS,
     "probe_fma(ns, trials) -> (GFLOPS at 64, 128, 256, 512 bits) of this core's DP FMA"},
    {NULL, NULL, 0, NULL},
};
