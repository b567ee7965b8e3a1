/* Python bindings of cpu.dgemm (dgemm.c): load a CBLAS, make the matrices, time the calls.
 *
 *   blas_load(path) -> {"index", "path", "file", "symbol", "ilp64", "threads", "config",
 *       "corename"}
 *       OSError(errno, reason) when the library cannot be loaded or has no cblas_dgemm.
 *   blas_set_threads(index, threads) -> bool: False when the library has no call for it.
 *   dgemm_new(index, n, seed) -> handle (three filled n x n matrices; freed with the handle)
 *   dgemm_matrix(handle, which) -> bytes: 0 = A, 1 = B, 2 = C, n*n native doubles, row-major
 *   dgemm_time(handle, count, alpha, beta) -> ns: untimed calls (warm-up, calibration)
 *   run_dgemm(handle, repeat, alpha, beta, t0_ns, spin_ns) -> result dict (API.md)
 */
#include "bind.h"
#include "dgemm.h"

#define CAPSULE "manybench._native.dgemm"

static void free_capsule(PyObject *cap)
{
    nb_dgemm_free(PyCapsule_GetPointer(cap, CAPSULE));
}

static nb_dgemm *handle(PyObject *cap)
{
    return PyCapsule_GetPointer(cap, CAPSULE); /* sets an error when it is not one */
}

static PyObject *py_blas_load(PyObject *self, PyObject *args)
{
    PyObject *path;
    nb_blas_info info;
    char msg[NB_MSG_LEN] = "";
    int idx;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path))
        return NULL;
    const char *p = PyBytes_AS_STRING(path);
    Py_BEGIN_ALLOW_THREADS /* a library's constructors may start threads or read files */
    idx = nb_blas_load(p, &info, msg, sizeof msg);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (idx < 0)
        return nb_raise_errno(-idx, msg);
    return Py_BuildValue("{s:i,s:s,s:s,s:s,s:O,s:s,s:s,s:s}", "index", idx, "path",
                         info.path, "file", info.file, "symbol", info.symbol, "ilp64",
                         info.ilp64 ? Py_True : Py_False, "threads", info.threads, "config",
                         info.config, "corename", info.corename);
}

static PyObject *py_blas_set_threads(PyObject *self, PyObject *args)
{
    int idx, threads, done;
    if (!PyArg_ParseTuple(args, "ii", &idx, &threads))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    done = nb_blas_set_threads(idx, threads);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(done);
}

static PyObject *py_blas_get_threads(PyObject *self, PyObject *args)
{
    int idx;
    if (!PyArg_ParseTuple(args, "i", &idx))
        return NULL;
    return PyLong_FromLong(nb_blas_get_threads(idx));
}

static PyObject *py_dgemm_new(PyObject *self, PyObject *args)
{
    int idx, e;
    unsigned long long n, seed;
    nb_dgemm *d = NULL;
    char msg[NB_MSG_LEN] = "";
    if (!PyArg_ParseTuple(args, "iKK", &idx, &n, &seed))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    e = nb_dgemm_new(idx, n, seed, &d, msg, sizeof msg);
    Py_END_ALLOW_THREADS
    if (e)
        return nb_raise_errno(e, msg);
    PyObject *cap = PyCapsule_New(d, CAPSULE, free_capsule);
    if (!cap)
        nb_dgemm_free(d);
    return cap;
}

static PyObject *py_dgemm_matrix(PyObject *self, PyObject *args)
{
    PyObject *cap;
    int which;
    if (!PyArg_ParseTuple(args, "Oi", &cap, &which))
        return NULL;
    nb_dgemm *d = handle(cap);
    if (!d)
        return NULL;
    const double *m = nb_dgemm_matrix(d, which);
    if (!m) {
        PyErr_SetString(PyExc_ValueError, "which must be 0 (A), 1 (B) or 2 (C)");
        return NULL;
    }
    uint64_t n = nb_dgemm_n(d);
    return PyBytes_FromStringAndSize((const char *)m, (Py_ssize_t)(n * n * sizeof *m));
}

static PyObject *py_dgemm_time(PyObject *self, PyObject *args)
{
    PyObject *cap;
    unsigned long long count;
    double alpha, beta;
    int64_t ns;
    if (!PyArg_ParseTuple(args, "OKdd", &cap, &count, &alpha, &beta))
        return NULL;
    nb_dgemm *d = handle(cap);
    if (!d)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    ns = nb_dgemm_time(d, count, alpha, beta);
    Py_END_ALLOW_THREADS
    return PyLong_FromLongLong(ns);
}

static PyObject *py_run_dgemm(PyObject *self, PyObject *args)
{
    PyObject *cap;
    unsigned long long repeat;
    double alpha, beta;
    long long t0, spin;
    nb_result r = {0};
    if (!PyArg_ParseTuple(args, "OKddLL", &cap, &repeat, &alpha, &beta, &t0, &spin))
        return NULL;
    nb_dgemm *d = handle(cap);
    if (!d)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    nb_run_dgemm(d, repeat, alpha, beta, t0, spin, &r);
    Py_END_ALLOW_THREADS
    return nb_result_dict(&r, 0);
}

PyMethodDef nb_dgemm_methods[] = {
    {"blas_load", py_blas_load, METH_VARARGS,
     "blas_load(path) -> dict: dlopen a CBLAS and find its dgemm (OSError when not usable)"},
    {"blas_set_threads", py_blas_set_threads, METH_VARARGS,
     "blas_set_threads(index, threads) -> bool"},
    {"blas_get_threads", py_blas_get_threads, METH_VARARGS,
     "blas_get_threads(index) -> int: the library's own thread count, -1 when it cannot say"},
    {"dgemm_new", py_dgemm_new, METH_VARARGS,
     "dgemm_new(index, n, seed) -> handle: three filled n x n matrices"},
    {"dgemm_matrix", py_dgemm_matrix, METH_VARARGS,
     "dgemm_matrix(handle, which) -> bytes (0 = A, 1 = B, 2 = C; row-major doubles)"},
    {"dgemm_time", py_dgemm_time, METH_VARARGS,
     "dgemm_time(handle, count, alpha, beta) -> ns (untimed calls)"},
    {"run_dgemm", py_run_dgemm, METH_VARARGS,
     "run_dgemm(handle, repeat, alpha, beta, t0_ns, spin_ns) -> dict"},
    {NULL, NULL, 0, NULL},
};
