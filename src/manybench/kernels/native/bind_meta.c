/* Python bindings of meta.* (meta.c):
 *   meta_prepare(op, root, dirs, prefix, per_dir, first, count, bytes, at)
 *       makes the operation's precondition true for every item (untimed); OSError on failure
 *   run_meta(op, root, dirs, prefix, per_dir, first, count, bytes, at, t0_ns, spin_ns) -> dict
 *       one operation per item (API.md's result dict)
 * root: the run's scratch root; dirs: the tree's directories relative to it (reached from
 * it by descriptor); item i lives in dirs[i // per_dir].
 */
#include <stdlib.h>

#include "bind.h"
#include "meta.h"

typedef struct {
    nb_meta_args a;
    PyObject *dirs_bytes; /* list of bytes, owned: a.dirs points into it */
    PyObject *prefix;     /* bytes, owned */
    PyObject *root;       /* bytes, owned */
    const char **dirs;
} parsed;

static void release(parsed *p)
{
    free(p->dirs);
    Py_XDECREF(p->dirs_bytes);
    Py_XDECREF(p->prefix);
    Py_XDECREF(p->root);
}

/* The arguments common to both calls; 0 with a Python error set on failure. */
static int parse(PyObject *args, parsed *p, long long *t0, long long *spin)
{
    const char *op;
    PyObject *dirs;
    unsigned long long per_dir, first, count, bytes;
    int at;
    memset(p, 0, sizeof *p);
    int ok = t0 ? PyArg_ParseTuple(args, "sO&OO&KKKKpLL", &op, PyUnicode_FSConverter,
                                   &p->root, &dirs, PyUnicode_FSConverter, &p->prefix,
                                   &per_dir, &first, &count, &bytes, &at, t0, spin)
                : PyArg_ParseTuple(args, "sO&OO&KKKKp", &op, PyUnicode_FSConverter, &p->root,
                                   &dirs, PyUnicode_FSConverter, &p->prefix, &per_dir, &first,
                                   &count, &bytes, &at);
    if (!ok)
        return 0;
    p->a.op = nb_meta_op_from_name(op);
    if (p->a.op < 0) {
        PyErr_Format(PyExc_ValueError, "unknown metadata operation %s", op);
        return 0;
    }
    PyObject *seq = PySequence_Fast(dirs, "dirs must be a sequence of paths");
    if (!seq)
        return 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    p->dirs_bytes = PyList_New(n);
    p->dirs = calloc(n ? (size_t)n : 1, sizeof *p->dirs);
    for (Py_ssize_t k = 0; p->dirs_bytes && p->dirs && k < n; k++) {
        PyObject *b = NULL;
        if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, k), &b)) {
            Py_DECREF(seq);
            return 0;
        }
        PyList_SET_ITEM(p->dirs_bytes, k, b);
        p->dirs[k] = PyBytes_AS_STRING(b);
    }
    Py_DECREF(seq);
    if (!p->dirs_bytes || !p->dirs) {
        PyErr_NoMemory();
        return 0;
    }
    if (n == 0 || per_dir == 0) {
        PyErr_SetString(PyExc_ValueError, "dirs must not be empty and per_dir at least 1");
        return 0;
    }
    p->a.root = PyBytes_AS_STRING(p->root);
    p->a.dirs = p->dirs;
    p->a.ndirs = (unsigned)n;
    p->a.prefix = PyBytes_AS_STRING(p->prefix);
    p->a.per_dir = per_dir;
    p->a.first = first;
    p->a.count = count;
    p->a.bytes = bytes;
    p->a.at = at;
    if (count && (first + count - 1) / per_dir >= (unsigned long long)n) {
        PyErr_SetString(PyExc_ValueError, "an item lies past the last directory of the tree");
        return 0;
    }
    return 1;
}

static PyObject *py_meta_prepare(PyObject *self, PyObject *args)
{
    parsed p;
    char msg[NB_MSG_LEN] = "";
    int e;
    if (!parse(args, &p, NULL, NULL)) {
        release(&p);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    e = nb_meta_prepare(&p.a, msg, sizeof msg);
    Py_END_ALLOW_THREADS
    release(&p);
    if (e)
        return nb_raise_errno(e, msg);
    Py_RETURN_NONE;
}

static PyObject *py_run_meta(PyObject *self, PyObject *args)
{
    parsed p;
    long long t0, spin;
    nb_result r = {0};
    if (!parse(args, &p, &t0, &spin)) {
        release(&p);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    nb_run_meta(&p.a, t0, spin, &r);
    Py_END_ALLOW_THREADS
    release(&p);
    return nb_result_dict(&r, 0);
}

PyMethodDef nb_meta_methods[] = {
    {"meta_prepare", py_meta_prepare, METH_VARARGS,
     "meta_prepare(op, root, dirs, prefix, per_dir, first, count, bytes, at)"},
    {"run_meta", py_run_meta, METH_VARARGS,
     "run_meta(op, root, dirs, prefix, per_dir, first, count, bytes, at, t0_ns, spin_ns) -> dict"},
    {NULL, NULL, 0, NULL},
};
