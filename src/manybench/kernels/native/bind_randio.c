/* Python bindings of io.randread / io.randwrite (randio.c).
 *
 *   randio_probe(engine, iodepth) -> str: the engine that will run ("auto": the first of
 *       io_uring, aio, threads this kernel allows); OSError(errno, reason) when a named
 *       engine is refused.
 *   run_randio(fd, write, engine, iodepth, batch, block, size, ops, deadline_ns, fsync_end,
 *              seed, randommap, drop_each_pass, t0_ns, spin_ns) -> result dict (API.md) plus
 *       "fsync_ns", "engine", "submits" (io_uring, aio: system calls that handed I/Os to the
 *       kernel; threads: 0), "distinct" (the blocks the I/Os fell on, each once; None:
 *       unknown) and "drops" (the cache drops before later passes, inside the window).
 */
#include "bind.h"
#include "randio.h"

static int engine_arg(const char *name)
{
    int e = nb_rio_engine_from_name(name);
    if (e < 0)
        PyErr_Format(PyExc_ValueError, "unknown engine %s (auto, io_uring, aio, threads)",
                     name);
    return e;
}

static PyObject *py_randio_probe(PyObject *self, PyObject *args)
{
    const char *name;
    unsigned int depth;
    char msg[NB_MSG_LEN] = "";
    int e, got;
    if (!PyArg_ParseTuple(args, "sI", &name, &depth))
        return NULL;
    if ((e = engine_arg(name)) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    got = nb_randio_probe(e, depth, msg, sizeof msg);
    Py_END_ALLOW_THREADS
    if (got < 0)
        return nb_raise_errno(-got, msg);
    return PyUnicode_FromString(nb_rio_engine_name(got));
}

/* d[key] = v (a new reference, stolen); NULL (d released) when either failed. */
static PyObject *put(PyObject *d, const char *key, PyObject *v)
{
    if (d && (!v || PyDict_SetItemString(d, key, v) < 0))
        Py_CLEAR(d);
    Py_XDECREF(v);
    return d;
}

static PyObject *py_run_randio(PyObject *self, PyObject *args)
{
    int fd, write, fsync_end, engine, randommap, drop_each_pass;
    const char *name;
    unsigned int depth, batch;
    unsigned long long block, size, ops, seed;
    long long deadline, t0, spin;
    nb_randio_out out = {0};
    nb_result r = {0};
    if (!PyArg_ParseTuple(args, "ipsIIKKKLpKppLL", &fd, &write, &name, &depth, &batch, &block,
                          &size, &ops, &deadline, &fsync_end, &seed, &randommap,
                          &drop_each_pass, &t0, &spin))
        return NULL;
    if ((engine = engine_arg(name)) < 0)
        return NULL;
    if (deadline < 0) {
        PyErr_SetString(PyExc_ValueError, "deadline_ns must not be negative");
        return NULL;
    }
    nb_randio_args a = {.fd = fd, .write = write, .fsync_end = fsync_end, .engine = engine,
                        .iodepth = depth, .batch = batch, .block = block, .size = size,
                        .ops = ops, .deadline_ns = deadline, .seed = seed,
                        .randommap = randommap, .drop_each_pass = drop_each_pass};
    Py_BEGIN_ALLOW_THREADS
    nb_run_randio(&a, t0, spin, &r, &out);
    Py_END_ALLOW_THREADS
    PyObject *d = nb_result_dict(&r, 1);
    d = put(d, "engine", d ? PyUnicode_FromString(nb_rio_engine_name(engine)) : NULL);
    d = put(d, "submits", d ? PyLong_FromUnsignedLongLong(r.submits) : NULL);
    d = put(d, "distinct", !d ? NULL : out.distinct == UINT64_MAX
                                           ? (Py_INCREF(Py_None), Py_None)
                                           : PyLong_FromUnsignedLongLong(out.distinct));
    return put(d, "drops", d ? PyLong_FromUnsignedLongLong(out.drops) : NULL);
}

PyMethodDef nb_randio_methods[] = {
    {"randio_probe", py_randio_probe, METH_VARARGS,
     "randio_probe(engine, iodepth) -> the engine that will run (OSError when refused)"},
    {"run_randio", py_run_randio, METH_VARARGS,
     "run_randio(fd, write, engine, iodepth, batch, block, size, ops, deadline_ns, fsync_end, "
     "seed, randommap, drop_each_pass, t0_ns, spin_ns) -> dict"},
    {NULL, NULL, 0, NULL},
};
