/* Python bindings of mem.stream (see stream.h):
 *   stream_new(elements, threads) -> handle     allocate and first-touch a, b, c (before T0)
 *   stream_run(handle, ntimes, t0_ns, spin_ns) -> dict (API.md's result dict, plus
 *       "times_ns": 4 tuples (Copy, Scale, Add, Triad) of ntimes per-iteration durations)
 *   stream_release(handle)                      free the arrays now (also done on collection)
 *   stream_layout(handle) -> (a, b, c)          the arrays' addresses (their layout, tested)
 */
#include <errno.h>
#include <stdlib.h>

#include "bind.h"
#include "stream.h"

#define CAPSULE "manybench.stream"

static void capsule_free(PyObject *cap)
{
    nb_stream *s = PyCapsule_GetPointer(cap, CAPSULE);
    if (s) {
        nb_stream_release(s);
        free(s);
    }
}

static nb_stream *handle(PyObject *cap)
{
    return PyCapsule_GetPointer(cap, CAPSULE); /* sets TypeError/ValueError when not ours */
}

static PyObject *py_stream_new(PyObject *self, PyObject *args)
{
    long long n;
    int threads, e;
    nb_stream *s = NULL;
    char msg[NB_MSG_LEN] = "";
    if (!PyArg_ParseTuple(args, "Li", &n, &threads))
        return NULL;
    if (n < 1 || threads < 1) {
        PyErr_SetString(PyExc_ValueError, "elements and threads must be at least 1");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    e = nb_stream_new((uint64_t)n, threads, &s, msg, sizeof msg);
    Py_END_ALLOW_THREADS
    if (e)
        return nb_raise_errno(e, msg);
    PyObject *cap = PyCapsule_New(s, CAPSULE, capsule_free);
    if (!cap) {
        nb_stream_release(s);
        free(s);
    }
    return cap;
}

static PyObject *py_stream_run(PyObject *self, PyObject *args)
{
    PyObject *cap;
    int ntimes;
    long long t0, spin;
    nb_result r = {0};
    if (!PyArg_ParseTuple(args, "OiLL", &cap, &ntimes, &t0, &spin))
        return NULL;
    nb_stream *s = handle(cap);
    if (!s)
        return NULL;
    if (ntimes < 1) {
        PyErr_SetString(PyExc_ValueError, "ntimes must be at least 1");
        return NULL;
    }
    int64_t *times = calloc((size_t)NB_STREAM_KERNELS * (size_t)ntimes, sizeof *times);
    if (!times)
        return PyErr_NoMemory();
    Py_BEGIN_ALLOW_THREADS
    nb_stream_run(s, ntimes, times, t0, spin, &r);
    Py_END_ALLOW_THREADS
    PyObject *d = nb_result_dict(&r, 0);
    PyObject *all = d ? PyTuple_New(NB_STREAM_KERNELS) : NULL;
    for (int j = 0; all && j < NB_STREAM_KERNELS; j++) {
        PyObject *one = PyTuple_New(ntimes);
        for (int k = 0; one && k < ntimes; k++) {
            PyObject *v = PyLong_FromLongLong(times[j * ntimes + k]);
            if (!v)
                Py_CLEAR(one);
            else
                PyTuple_SET_ITEM(one, k, v);
        }
        if (!one)
            Py_CLEAR(all);
        else
            PyTuple_SET_ITEM(all, j, one);
    }
    free(times);
    if (!all || PyDict_SetItemString(d, "times_ns", all) < 0)
        Py_CLEAR(d);
    Py_XDECREF(all);
    return d;
}

static PyObject *py_stream_release(PyObject *self, PyObject *args)
{
    PyObject *cap;
    if (!PyArg_ParseTuple(args, "O", &cap))
        return NULL;
    nb_stream *s = handle(cap);
    if (!s)
        return NULL;
    nb_stream_release(s);
    Py_RETURN_NONE;
}

static PyObject *py_stream_layout(PyObject *self, PyObject *args)
{
    PyObject *cap;
    if (!PyArg_ParseTuple(args, "O", &cap))
        return NULL;
    nb_stream *s = handle(cap);
    if (!s)
        return NULL;
    return Py_BuildValue("(KKK)", (unsigned long long)(uintptr_t)s->a,
                         (unsigned long long)(uintptr_t)s->b, (unsigned long long)(uintptr_t)s->c);
}

PyMethodDef nb_stream_methods[] = {
    {"stream_new", py_stream_new, METH_VARARGS,
     "stream_new(elements, threads) -> handle: a, b, c allocated and first-touched"},
    {"stream_run", py_stream_run, METH_VARARGS,
     "stream_run(handle, ntimes, t0_ns, spin_ns) -> dict with times_ns"},
    {"stream_release", py_stream_release, METH_VARARGS,
     "stream_release(handle): free the arrays now"},
    {"stream_layout", py_stream_layout, METH_VARARGS,
     "stream_layout(handle) -> (a, b, c): the arrays' addresses"},
    {NULL, NULL, 0, NULL},
};
