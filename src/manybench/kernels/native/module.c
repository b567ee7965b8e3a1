/* manybench._native: the Python face of the C kernels (see API.md).
 *
 * This file defines the module: the core calls (clocks, waiting for T0, null, sequential
 * I/O, page-cache residency, spawn and release at T0, build_info), the result dict and
 * OSError helpers the bindings share (bind.h), and PyInit, which adds every kernel family's
 * method table. Each family's bindings live in its own bind_<family>.c (the tables are listed
 * in families.c), so the interpreter is touched here and in the bind_*.c files; the kernels
 * themselves (timing.c, io.c, spawn.c, native.h, each family's <family>.c and .h) are plain C
 * and never include Python.h. Every call that can block or loop runs with the GIL released;
 * argument conversion and result dicts are built before and after it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "native.h"
#include "bind.h"
#include "clones.h"

/* ---- helpers ---- */

static PyObject *raise_errno(int err, const char *msg)
{
    PyObject *args = Py_BuildValue("(is)", err, msg);
    if (args) {
        PyErr_SetObject(PyExc_OSError, args); /* OSError(errno, msg): .errno, .strerror */
        Py_DECREF(args);
    }
    return NULL;
}

static PyObject *hist_bytes(const uint64_t *h)
{
    PyObject *b = PyBytes_FromStringAndSize(NULL, HIST_BUCKETS * 8);
    if (!b)
        return NULL;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(b);
    for (int i = 0; i < HIST_BUCKETS; i++) /* little-endian whatever the host */
        for (int k = 0; k < 8; k++)
            *p++ = (unsigned char)(h[i] >> (8 * k));
    return b;
}

/* The result dict of API.md; frees r->hist. */
static PyObject *result_dict(nb_result *r, int with_fsync)
{
    PyObject *hist = r->hist ? hist_bytes(r->hist) : (Py_INCREF(Py_None), Py_None);
    free(r->hist);
    r->hist = NULL;
    if (!hist)
        return NULL;
    PyObject *d = Py_BuildValue(
        "{s:L,s:L,s:L,s:L,s:K,s:K,s:i,s:s,s:N}", "start_ns", (long long)r->start_ns,
        "end_ns", (long long)r->end_ns, "elapsed_ns", (long long)r->elapsed_ns, "armed_ns",
        (long long)r->armed_ns, "ops", (unsigned long long)r->ops, "bytes",
        (unsigned long long)r->bytes, "errno", r->err, "error", r->msg, "hist", hist);
    if (d && with_fsync) {
        PyObject *f = PyLong_FromLongLong(r->fsync_ns);
        if (!f || PyDict_SetItemString(d, "fsync_ns", f) < 0) {
            Py_XDECREF(f);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(f);
    }
    return d;
}

static int nonneg(long long v, const char *name)
{
    if (v >= 0)
        return 1;
    PyErr_Format(PyExc_ValueError, "%s must not be negative", name);
    return 0;
}

/* ---- clocks and waiting ---- */

static PyObject *py_progress(PyObject *self, PyObject *unused)
{
    return PyLong_FromUnsignedLongLong(nb_progress_now());
}

static PyObject *py_now_ns(PyObject *self, PyObject *unused)
{
    return PyLong_FromLongLong(nb_now());
}

static PyObject *py_mono_ns(PyObject *self, PyObject *unused)
{
    return PyLong_FromLongLong(nb_mono());
}

static PyObject *py_set_timerslack(PyObject *self, PyObject *args)
{
    unsigned long ns;
    if (!PyArg_ParseTuple(args, "k", &ns))
        return NULL;
    int e = nb_set_timerslack(ns);
    if (e)
        return raise_errno(e, "prctl(PR_SET_TIMERSLACK) failed");
    Py_RETURN_NONE;
}

static PyObject *py_set_settle(PyObject *self, PyObject *args)
{
    long long ns;
    if (!PyArg_ParseTuple(args, "L", &ns))
        return NULL;
    nb_set_settle(ns);
    Py_RETURN_NONE;
}

static PyObject *py_wait_until(PyObject *self, PyObject *args)
{
    long long t0, spin;
    int64_t wake;
    if (!PyArg_ParseTuple(args, "LL", &t0, &spin))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    wake = nb_wait_until(t0, spin);
    Py_END_ALLOW_THREADS
    return PyLong_FromLongLong(wake);
}

static PyObject *py_bucket(PyObject *self, PyObject *args)
{
    unsigned long long v;
    if (!PyArg_ParseTuple(args, "K", &v))
        return NULL;
    return PyLong_FromUnsignedLong(nb_bucket(v));
}

/* ---- kernels ---- */

static PyObject *py_run_null(PyObject *self, PyObject *args)
{
    long long t0, spin;
    nb_result r = {0};
    if (!PyArg_ParseTuple(args, "LL", &t0, &spin))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    nb_run_null(&r, t0, spin);
    Py_END_ALLOW_THREADS
    return result_dict(&r, 0);
}

static PyObject *py_run_io(PyObject *self, PyObject *args)
{
    int fd, write, fsync_end, direct;
    long long block, size, deadline, t0, spin;
    nb_result r = {0};
    if (!PyArg_ParseTuple(args, "ipLLLppLL", &fd, &write, &block, &size, &deadline,
                          &fsync_end, &direct, &t0, &spin))
        return NULL;
    if (!nonneg(block, "block") || !nonneg(size, "size") || !nonneg(deadline, "deadline_ns"))
        return NULL;
    nb_io_args a = {fd, write, fsync_end, direct, (uint64_t)block, (uint64_t)size, deadline};
    Py_BEGIN_ALLOW_THREADS
    nb_run_io(&a, t0, spin, &r);
    Py_END_ALLOW_THREADS
    return result_dict(&r, 1);
}

static PyObject *py_preallocate(PyObject *self, PyObject *args)
{
    int fd, e;
    long long size;
    if (!PyArg_ParseTuple(args, "iL", &fd, &size))
        return NULL;
    if (!nonneg(size, "size"))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    e = nb_preallocate(fd, (uint64_t)size);
    Py_END_ALLOW_THREADS
    if (e)
        return raise_errno(e, "fallocate failed");
    Py_RETURN_NONE;
}

static PyObject *py_layout(PyObject *self, PyObject *args)
{
    int fd;
    const char *label;
    long long size, block;
    char msg[NB_MSG_LEN] = "";
    int e;
    if (!PyArg_ParseTuple(args, "isLL", &fd, &label, &size, &block))
        return NULL;
    if (!nonneg(size, "size") || !nonneg(block, "block"))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    e = nb_layout(fd, label, (uint64_t)size, (uint64_t)block, msg, sizeof msg);
    Py_END_ALLOW_THREADS
    if (e)
        return raise_errno(e, msg);
    Py_RETURN_NONE;
}

static PyObject *py_scratch_open(PyObject *self, PyObject *args)
{
    PyObject *root, *rel;
    int flags, mode, fd = -1, e;
    char msg[NB_MSG_LEN] = "";
    if (!PyArg_ParseTuple(args, "O&O&ii", PyUnicode_FSConverter, &root, PyUnicode_FSConverter,
                          &rel, &flags, &mode))
        return NULL;
    const char *r = PyBytes_AS_STRING(root), *p = PyBytes_AS_STRING(rel);
    Py_BEGIN_ALLOW_THREADS
    e = nb_scratch_open(r, p, flags, mode, &fd, msg, sizeof msg);
    Py_END_ALLOW_THREADS
    Py_DECREF(root);
    Py_DECREF(rel);
    if (e)
        return raise_errno(e, msg);
    return PyLong_FromLong(fd);
}

static PyObject *py_scratch_check(PyObject *self, PyObject *args)
{
    PyObject *name, *shown;
    int dfd, dir, e;
    char msg[NB_MSG_LEN] = "";
    if (!PyArg_ParseTuple(args, "iO&pO&", &dfd, PyUnicode_FSConverter, &name, &dir,
                          PyUnicode_FSConverter, &shown))
        return NULL;
    e = nb_scratch_check(dfd, PyBytes_AS_STRING(name), dir ? S_IFDIR : S_IFREG,
                         PyBytes_AS_STRING(shown), msg, sizeof msg);
    Py_DECREF(name);
    Py_DECREF(shown);
    if (e) /* ENOENT: FileNotFoundError, as OSError(errno, text) makes it */
        return raise_errno(e, e == EPERM ? msg : strerror(e));
    Py_RETURN_NONE;
}

/* ---- memory policy (numa.c) ---- */

static PyObject *py_set_mempolicy(PyObject *self, PyObject *args)
{
    int mode;
    PyObject *nodes;
    if (!PyArg_ParseTuple(args, "iO", &mode, &nodes))
        return NULL;
    nb_nodemask mask = {{0}};
    PyObject *it = PyObject_GetIter(nodes);
    if (!it)
        return NULL;
    PyObject *item;
    while ((item = PyIter_Next(it))) {
        long n = PyLong_AsLong(item);
        Py_DECREF(item);
        if (n == -1 && PyErr_Occurred())
            break;
        if (n < 0 || n >= NB_MAX_NODES) {
            PyErr_Format(PyExc_ValueError, "memory node %ld out of range", n);
            break;
        }
        nb_nodemask_add(&mask, (int)n);
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        return NULL;
    int err = nb_set_mempolicy(mode, &mask);
    if (err) {
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
}

static PyObject *py_get_mempolicy(PyObject *self, PyObject *unused)
{
    int mode = 0;
    nb_nodemask mask;
    int err = nb_get_mempolicy(&mode, &mask);
    if (err) {
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    PyObject *nodes = PyList_New(0);
    if (!nodes)
        return NULL;
    for (long n = 0; n < NB_MAX_NODES; n++) {
        if (nb_nodemask_has(&mask, (int)n)) {
            PyObject *v = PyLong_FromLong(n);
            if (!v || PyList_Append(nodes, v) < 0) {
                Py_XDECREF(v);
                Py_DECREF(nodes);
                return NULL;
            }
            Py_DECREF(v);
        }
    }
    return Py_BuildValue("(iN)", mode, nodes);
}

static PyObject *py_resident(PyObject *self, PyObject *args)
{
    int fd, e;
    long long size;
    uint64_t resident, pages;
    if (!PyArg_ParseTuple(args, "iL", &fd, &size))
        return NULL;
    if (!nonneg(size, "size"))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    e = nb_resident(fd, (uint64_t)size, &resident, &pages);
    Py_END_ALLOW_THREADS
    if (e)
        return raise_errno(e, "mincore of the file's pages");
    return Py_BuildValue("(KK)", (unsigned long long)resident, (unsigned long long)pages);
}

/* ---- external commands ---- */

static PyObject *py_install_term_handler(PyObject *self, PyObject *unused)
{
    int e = nb_install_term_handler();
    if (e)
        return raise_errno(e, "sigaction(SIGTERM/SIGHUP) failed");
    Py_RETURN_NONE;
}

static PyObject *py_forget_child(PyObject *self, PyObject *args)
{
    int pid;
    if (!PyArg_ParseTuple(args, "i", &pid))
        return NULL;
    nb_forget_child(pid);
    Py_RETURN_NONE;
}

static PyObject *py_track_child(PyObject *self, PyObject *args)
{
    int pid;
    if (!PyArg_ParseTuple(args, "i", &pid))
        return NULL;
    nb_track_child(pid);
    Py_RETURN_NONE;
}

static PyObject *py_forget_children(PyObject *self, PyObject *unused)
{
    nb_forget_children();
    Py_RETURN_NONE;
}

static PyObject *py_set_kill_file(PyObject *self, PyObject *args)
{
    PyObject *path = NULL;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path))
        return NULL;
    int e = nb_set_kill_file(PyBytes_AS_STRING(path));
    Py_DECREF(path);
    if (e)
        return raise_errno(e, "opening the cgroup's kill file");
    Py_RETURN_NONE;
}

/* A NULL-terminated char* array over a list of owned bytes objects (kept in *keep). */
static char **c_strings(PyObject *seq, PyObject **keep, const char *what)
{
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    char **v = PyMem_Calloc((size_t)n + 1, sizeof *v);
    *keep = PyList_New(n);
    if (!v || !*keep) {
        Py_DECREF(fast);
        PyMem_Free(v);
        Py_CLEAR(*keep);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = NULL;
        if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(fast, i), &b)) {
            Py_DECREF(fast);
            PyMem_Free(v);
            Py_CLEAR(*keep);
            return NULL;
        }
        PyList_SET_ITEM(*keep, i, b); /* steals b */
        v[i] = PyBytes_AS_STRING(b);
    }
    Py_DECREF(fast);
    return v;
}

/* envp may be None, a mapping or a sequence of "KEY=VALUE"; returns a new list or None. */
static PyObject *env_list(PyObject *env)
{
    if (env == Py_None || !PyMapping_Check(env) || PyUnicode_Check(env) || PyList_Check(env) ||
        PyTuple_Check(env)) {
        Py_INCREF(env);
        return env;
    }
    PyObject *items = PyMapping_Items(env), *out = NULL;
    if (!items)
        return NULL;
    out = PyList_New(0);
    for (Py_ssize_t i = 0; out && i < PyList_GET_SIZE(items); i++) {
        PyObject *kv = PyList_GET_ITEM(items, i);
        PyObject *s = PyUnicode_FromFormat("%S=%S", PyTuple_GET_ITEM(kv, 0),
                                           PyTuple_GET_ITEM(kv, 1));
        if (!s || PyList_Append(out, s) < 0)
            Py_CLEAR(out);
        Py_XDECREF(s);
    }
    Py_DECREF(items);
    return out;
}

static PyObject *py_spawn(PyObject *self, PyObject *args)
{
    PyObject *path, *argv_o, *env_o, *cwd_o, *keep_a = NULL, *keep_e = NULL, *cwd = NULL;
    PyObject *envl = NULL, *ret = NULL;
    char **argv = NULL, **envp = NULL;
    int out_fd, err_fd, pid = 0, ctl = -1, stamp = -1, e;
    if (!PyArg_ParseTuple(args, "O&OOOii", PyUnicode_FSConverter, &path, &argv_o, &env_o,
                          &cwd_o, &out_fd, &err_fd))
        return NULL;
    if (!(argv = c_strings(argv_o, &keep_a, "argv must be a sequence")))
        goto done;
    if (!(envl = env_list(env_o)))
        goto done;
    if (envl != Py_None && !(envp = c_strings(envl, &keep_e, "envp must be a sequence")))
        goto done;
    if (cwd_o != Py_None && !PyUnicode_FSConverter(cwd_o, &cwd))
        goto done;
    const char *p = PyBytes_AS_STRING(path), *c = cwd ? PyBytes_AS_STRING(cwd) : NULL;
    Py_BEGIN_ALLOW_THREADS
    e = nb_spawn(p, argv, envp, c, out_fd, err_fd, &pid, &ctl, &stamp);
    Py_END_ALLOW_THREADS
    if (e)
        raise_errno(e, "cannot start the command (pipe or fork failed)");
    else
        ret = Py_BuildValue("(iii)", pid, ctl, stamp);
done:
    PyMem_Free(argv);
    PyMem_Free(envp);
    Py_XDECREF(keep_a);
    Py_XDECREF(keep_e);
    Py_XDECREF(envl);
    Py_XDECREF(cwd);
    Py_DECREF(path);
    return ret;
}

static PyObject *py_release(PyObject *self, PyObject *args)
{
    int fd, e;
    long long t0, spin;
    if (!PyArg_ParseTuple(args, "iLL", &fd, &t0, &spin))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    e = nb_release(fd, t0, spin);
    Py_END_ALLOW_THREADS
    if (e)
        return raise_errno(e, "cannot release the command (did it die before T0?)");
    Py_RETURN_NONE;
}

static PyObject *py_read_stamp(PyObject *self, PyObject *args)
{
    int fd, e, child_err;
    int64_t s, sm;
    if (!PyArg_ParseTuple(args, "i", &fd))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    e = nb_read_stamp(fd, &s, &sm, &child_err);
    Py_END_ALLOW_THREADS
    if (e)
        return raise_errno(e, "cannot read the command's start stamp");
    return Py_BuildValue("(LLi)", (long long)s, (long long)sm, child_err);
}

/* ---- how this extension was built (setup.py defines the macros from its one list) ---- */

#ifndef MB_CC
#define MB_CC "unknown"
#endif
#ifndef MB_CFLAGS
#define MB_CFLAGS ""
#endif
#ifndef MB_MARCH
#define MB_MARCH ""
#endif
#ifndef MB_SANITIZE
#define MB_SANITIZE "" /* the sanitizers built in ("address,undefined"), "" for none */
#endif
#ifdef _OPENMP
#define MB_OPENMP 1
#else
#define MB_OPENMP 0
#endif
#ifndef __VERSION__
#define __VERSION__ "unknown"
#endif

/* the targets the hot loops are cloned for (clones.h), as a list of str: [] without clones */
static PyObject *clone_targets(void)
{
#ifdef NB_CLONE_TARGETS
    static const char *const targets[] = {NB_CLONE_TARGETS};
    const size_t n = sizeof targets / sizeof *targets;
#else
    static const char *const *targets = NULL;
    const size_t n = 0;
#endif
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        /* "arch=x86-64-v4" -> "x86-64-v4", as nb_clone_target() names them */
        const char *t = strncmp(targets[i], "arch=", 5) ? targets[i] : targets[i] + 5;
        PyObject *s = PyUnicode_FromString(t);
        if (!s) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, s);
    }
    return list;
}

static PyObject *py_build_info(PyObject *self, PyObject *unused)
{
    /* MB_CFLAGS is setup.py's flags joined by spaces (none holds whitespace): split back */
    PyObject *joined = PyUnicode_FromString(MB_CFLAGS);
    if (!joined)
        return NULL;
    PyObject *cflags = PyUnicode_Split(joined, NULL, -1);
    Py_DECREF(joined);
    if (!cflags)
        return NULL;
    PyObject *clones = clone_targets();
    if (!clones) {
        Py_DECREF(cflags);
        return NULL;
    }
    return Py_BuildValue("{s:s,s:s,s:N,s:N,s:s,s:s,s:N,s:s}", "compiler", MB_CC,
                         "compiler_version", __VERSION__, "cflags", cflags, "openmp",
                         PyBool_FromLong(MB_OPENMP), "march", MB_MARCH, "sanitize", MB_SANITIZE,
                         "clones", clones, "clone", nb_clone_target());
}

static PyMethodDef methods[] = {
    {"build_info", py_build_info, METH_NOARGS,
     "build_info() -> {compiler, compiler_version, cflags (list), openmp, march, sanitize, "
     "clones (list), clone}"},
    {"now_ns", py_now_ns, METH_NOARGS, "CLOCK_REALTIME in ns."},
    {"progress", py_progress, METH_NOARGS,
     "Bytes or ops the timed call under way has done so far (0 before its first)."},
    {"mono_ns", py_mono_ns, METH_NOARGS, "CLOCK_MONOTONIC in ns."},
    {"set_timerslack", py_set_timerslack, METH_VARARGS, "set_timerslack(ns)"},
    {"set_settle", py_set_settle, METH_VARARGS, "set_settle(ns): rest after each end stamp"},
    {"set_mempolicy", py_set_mempolicy, METH_VARARGS,
     "set_mempolicy(mode, nodes): this thread's memory policy (0 default, 1 preferred, 2 bind, "
     "3 interleave)"},
    {"get_mempolicy", py_get_mempolicy, METH_NOARGS, "get_mempolicy() -> (mode, [nodes])"},
    {"wait_until", py_wait_until, METH_VARARGS, "wait_until(t0_ns, spin_ns) -> wake_ns"},
    {"bucket", py_bucket, METH_VARARGS, "bucket(latency_ns) -> histogram bucket index"},
    {"install_term_handler", py_install_term_handler, METH_NOARGS,
     "SIGTERM/SIGHUP: SIGKILL spawned children's groups, then _exit(128 + sig)."},
    {"forget_child", py_forget_child, METH_VARARGS,
     "forget_child(pid): the term handler no longer kills this (reaped) child's group."},
    {"track_child", py_track_child, METH_VARARGS,
     "track_child(pid): the term handler kills this process group too (a wrap's launcher)."},
    {"forget_children", py_forget_children, METH_NOARGS,
     "forget_children(): the term handler kills no group (the phase's orphans are gone)."},
    {"set_kill_file", py_set_kill_file, METH_VARARGS,
     "set_kill_file(path): the term handler also writes 1 to it (a cgroup's cgroup.kill)."},
    {"run_null", py_run_null, METH_VARARGS, "run_null(t0_ns, spin_ns) -> dict"},
    {"run_io", py_run_io, METH_VARARGS,
     "run_io(fd, write, block, size, deadline_ns, fsync_end, direct, t0_ns, spin_ns) -> dict"},
    {"layout", py_layout, METH_VARARGS,
     "layout(fd, label, size, block): extend the open file to size bytes, fsync'd"},
    {"scratch_open", py_scratch_open, METH_VARARGS,
     "scratch_open(root, rel, flags, mode) -> fd: by descriptor from root, checked (scratch.c)"},
    {"scratch_check", py_scratch_check, METH_VARARGS,
     "scratch_check(dirfd, name, dir, shown): None when lstat finds a directory (dir) or a "
     "regular file with one link at dirfd/name; OSError (EPERM: msg names what is there)"},
    {"preallocate", py_preallocate, METH_VARARGS,
     "preallocate(fd, size): fallocate mode 0 as fio's fallocate=native (none where the file "
     "system has no fallocate)"},
    {"resident", py_resident, METH_VARARGS,
     "resident(fd, size) -> (pages in the page cache, pages) of the file's first size bytes"},
    {"spawn", py_spawn, METH_VARARGS,
     "spawn(path, argv, envp, cwd, out_fd, err_fd) -> (pid, ctl_fd, stamp_fd)"},
    {"release", py_release, METH_VARARGS, "release(ctl_fd, t0_ns, spin_ns)"},
    {"read_stamp", py_read_stamp, METH_VARARGS,
     "read_stamp(stamp_fd) -> (start_ns, start_mono_ns, errno)"},
    {NULL, NULL, 0, NULL},
};

/* Shared with the kernel families' binding files (bind_*.c). */
PyObject *nb_result_dict(nb_result *r, int with_fsync) { return result_dict(r, with_fsync); }
PyObject *nb_raise_errno(int err, const char *msg) { return raise_errno(err, msg); }

static struct PyModuleDef moduledef = {
    /* imported by manybench/_native.py once the cpu is checked (build_isa.py) */
    PyModuleDef_HEAD_INIT, "manybench._native_c",
    "The C side of the slot: waiting for T0, timed kernels, exec at T0 (see API.md).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__native_c(void)
{
    PyObject *m = PyModule_Create(&moduledef);
    if (m && PyModule_AddIntConstant(m, "HIST_BUCKETS", HIST_BUCKETS) < 0)
        Py_CLEAR(m);
    /* each kernel family brings its own method table: adding one is adding a file */
    for (PyMethodDef **t = nb_family_methods; m && *t; t++)
        if (PyModule_AddFunctions(m, *t) < 0)
            Py_CLEAR(m);
    /* the coordinator's record path (records.c) */
    if (m && PyModule_AddFunctions(m, nb_records_methods) < 0)
        Py_CLEAR(m);
    /* the wire codec's msgpack hooks (wire.c) */
    if (m && nb_add_wire(m) < 0)
        Py_CLEAR(m);
    return m;
}
