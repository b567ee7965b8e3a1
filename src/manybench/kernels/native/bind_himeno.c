/* Python bindings of cpu.himeno (see himeno.h):
 *   himeno_new(mimax, mjmax, mkmax, threads) -> handle   allocate + initmt (before T0)
 *   himeno_rehearse(handle, nn, keep=False) -> (seconds, gosa)
 *                                                         nn untimed iterations, then p reset
 *                                                         (kept: himenoBMTxp's rehearsal)
 *   himeno_run(handle, nn, t0_ns, spin_ns) -> dict        API.md's dict plus "gosa", "gosa1"
 *   himeno_release(handle)                                free the grids now
 */
#include <errno.h>
#include <stdlib.h>

#include "bind.h"
#include "himeno.h"

#define CAPSULE "manybench.himeno"

static void capsule_free(PyObject *cap)
{
    nb_himeno *h = PyCapsule_GetPointer(cap, CAPSULE);
    if (h) {
        nb_himeno_release(h);
        free(h);
    }
}

static nb_himeno *handle(PyObject *cap)
{
    nb_himeno *h = PyCapsule_GetPointer(cap, CAPSULE);
    if (h && !h->mem) {
        PyErr_SetString(PyExc_ValueError, "the himeno grids were already released");
        return NULL;
    }
    return h;
}

static PyObject *py_himeno_new(PyObject *self, PyObject *args)
{
    int mi, mj, mk, threads, e;
    nb_himeno *h = NULL;
    char msg[NB_MSG_LEN] = "";
    if (!PyArg_ParseTuple(args, "iiii", &mi, &mj, &mk, &threads))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    e = nb_himeno_new(mi, mj, mk, threads, &h, msg, sizeof msg);
    Py_END_ALLOW_THREADS
    if (e)
        return nb_raise_errno(e, msg);
    PyObject *cap = PyCapsule_New(h, CAPSULE, capsule_free);
    if (!cap) {
        nb_himeno_release(h);
        free(h);
    }
    return cap;
}

static PyObject *py_himeno_rehearse(PyObject *self, PyObject *args)
{
    PyObject *cap;
    int nn, keep = 0;
    float gosa;
    int64_t t;
    if (!PyArg_ParseTuple(args, "Oi|p", &cap, &nn, &keep))
        return NULL;
    nb_himeno *h = handle(cap);
    if (!h)
        return NULL;
    if (nn < 1) {
        PyErr_SetString(PyExc_ValueError, "nn must be at least 1");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    t = nb_mono();
    gosa = nb_himeno_jacobi(h, nn);
    t = nb_mono() - t;
    if (!keep)
        nb_himeno_reset(h);
    Py_END_ALLOW_THREADS
    return Py_BuildValue("(dd)", (double)t / 1e9, (double)gosa);
}

static PyObject *py_himeno_run(PyObject *self, PyObject *args)
{
    PyObject *cap;
    int nn;
    long long t0, spin;
    float gosa, gosa1;
    nb_result r = {0};
    if (!PyArg_ParseTuple(args, "OiLL", &cap, &nn, &t0, &spin))
        return NULL;
    nb_himeno *h = handle(cap);
    if (!h)
        return NULL;
    if (nn < 1) {
        PyErr_SetString(PyExc_ValueError, "nn must be at least 1");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    nb_himeno_run(h, nn, t0, spin, &gosa, &gosa1, &r);
    Py_END_ALLOW_THREADS
    PyObject *d = nb_result_dict(&r, 0);
    if (!d)
        return NULL;
    PyObject *g = PyFloat_FromDouble(gosa), *g1 = PyFloat_FromDouble(gosa1);
    if (!g || !g1 || PyDict_SetItemString(d, "gosa", g) < 0 ||
        PyDict_SetItemString(d, "gosa1", g1) < 0)
        Py_CLEAR(d);
    Py_XDECREF(g);
    Py_XDECREF(g1);
    return d;
}

static PyObject *py_himeno_release(PyObject *self, PyObject *args)
{
    PyObject *cap;
    if (!PyArg_ParseTuple(args, "O", &cap))
        return NULL;
    nb_himeno *h = PyCapsule_GetPointer(cap, CAPSULE);
    if (!h)
        return NULL;
    nb_himeno_release(h);
    Py_RETURN_NONE;
}

PyMethodDef nb_himeno_methods[] = {
    {"himeno_new", py_himeno_new, METH_VARARGS,
     "himeno_new(mimax, mjmax, mkmax, threads) -> handle: grids allocated, initmt done"},
    {"himeno_rehearse", py_himeno_rehearse, METH_VARARGS,
     "himeno_rehearse(handle, nn) -> (seconds, gosa): untimed iterations, then p reset"},
    {"himeno_run", py_himeno_run, METH_VARARGS,
     "himeno_run(handle, nn, t0_ns, spin_ns) -> dict with gosa (last) and gosa1 (first)"},
    {"himeno_release", py_himeno_release, METH_VARARGS,
     "himeno_release(handle): free the grids now"},
    {NULL, NULL, 0, NULL},
};
