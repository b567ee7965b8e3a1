/* The coordinator's record path (run/outcome.py, results/store.py): the two per-record loops
 * a phase of 64,000 slots spends most of its Python time in, done once per column here. The
 * Python code beside each call is the reference (tests/results/test_record_native.py checks both give
 * the same). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "bind.h"

/* json_items(data) -> [str | None, ...]: the text of each element of the JSON array `data`
 * (bytes as orjson writes it: compact, UTF-8), in order; None for an element whose text holds
 * "null" (orjson writes a NaN or an infinity so: the caller encodes that one with json, as it
 * would alone). One orjson call encodes a column's 64,000 dicts in a fifth of the time of
 * 64,000 calls; this cuts its text back into one value per record. Only strings can hold a
 * bracket or a comma that is not structure, so a scan that skips strings (to a quote not
 * escaped) and counts depth finds every top-level comma. */
static int is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

static PyObject *py_json_items(PyObject *self, PyObject *args)
{
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*:json_items", &buf))
        return NULL;
    const char *s = buf.buf;
    Py_ssize_t n = buf.len, i = 0;
    PyObject *out = PyList_New(0);
    if (!out)
        goto fail;
    while (i < n && is_space(s[i]))
        i++;
    if (i >= n || s[i] != '[')
        goto bad;
    i++;
    int depth = 0, empty = 1;
    Py_ssize_t start = i;
    for (; i < n; i++) {
        char c = s[i];
        if (c == '"') {                     /* a string: to its closing quote */
            Py_ssize_t from = i + 1;
            for (;;) {
                const char *q = memchr(s + from, '"', n - from);
                if (!q)
                    goto bad;
                Py_ssize_t j = q - s, k = j;
                while (k > i + 1 && s[k - 1] == '\\')
                    k--;
                from = j + 1;
                if ((j - k) % 2 == 0) {     /* not escaped */
                    i = j;
                    break;
                }
            }
            empty = 0;
        } else if (c == '[' || c == '{') {
            depth++;
            empty = 0;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        } else if (depth == 0 && (c == ',' || c == ']')) {
            if (c == ']' && empty && PyList_GET_SIZE(out) == 0)   /* [] */
                break;
            PyObject *item;
            if (memmem(s + start, i - start, "null", 4)) {
                item = Py_None;
                Py_INCREF(item);
            } else {
                item = PyUnicode_DecodeUTF8(s + start, i - start, "strict");
            }
            if (!item || PyList_Append(out, item) < 0) {
                Py_XDECREF(item);
                goto fail;
            }
            Py_DECREF(item);
            if (c == ']')
                break;
            start = i + 1;
        } else if (!is_space(c)) {
            empty = 0;
        }
    }
    if (i >= n || depth != 0)
        goto bad;
    for (i++; i < n; i++)
        if (!is_space(s[i]))
            goto bad;
    PyBuffer_Release(&buf);
    return out;
bad:
    PyErr_SetString(PyExc_ValueError, "json_items: not a JSON array");
fail:
    Py_XDECREF(out);
    PyBuffer_Release(&buf);
    return NULL;
}

/* shift_stamps(stamps, off) -> [t - off if t else 0 for t in stamps]: a node's stamps moved
 * into the coordinator's clock (engines/base.to_coordinator). None when a stamp is not an
 * int of 64 bits, or a difference would not be one: the caller's Python does it then. */
static PyObject *py_shift_stamps(PyObject *self, PyObject *args)
{
    PyObject *seq;
    long long off;
    if (!PyArg_ParseTuple(args, "O!L:shift_stamps", &PyList_Type, &seq, &off))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(seq);
    PyObject *out = PyList_New(n);
    if (!out)
        return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *v = PyList_GET_ITEM(seq, k);
        int overflow = 0;
        long long t = PyLong_CheckExact(v) ? PyLong_AsLongLongAndOverflow(v, &overflow) : 0;
        long long moved;
        if (!PyLong_CheckExact(v) || overflow ||
            (t != 0 && __builtin_sub_overflow(t, off, &moved))) {
            Py_DECREF(out);
            if (PyErr_Occurred())
                return NULL;
            Py_RETURN_NONE;
        }
        PyObject *o = PyLong_FromLongLong(t == 0 ? 0 : moved);
        if (!o) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, k, o);
    }
    return out;
}

/* slot_metrics(metrics, clock, armed, t0, late_key) -> [dict] | None: each slot's record
 * metrics, as run/outcome._node_records makes them: {**m, **clock} (m None or empty: a copy
 * of clock), and late_key: armed - t0 if armed > t0 else 0 where armed is not 0. None when
 * an m is neither None nor a dict (the Python does it, and says what is wrong). */
static PyObject *py_slot_metrics(PyObject *self, PyObject *args)
{
    PyObject *ms, *clock, *armed, *t0, *key;
    if (!PyArg_ParseTuple(args, "O!O!O!OU:slot_metrics", &PyList_Type, &ms, &PyDict_Type,
                          &clock, &PyList_Type, &armed, &t0, &key))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(ms);
    if (PyList_GET_SIZE(armed) != n) {
        PyErr_SetString(PyExc_ValueError, "slot_metrics: metrics and armed differ in length");
        return NULL;
    }
    PyObject *out = PyList_New(n), *zero = PyLong_FromLong(0);
    if (!out || !zero)
        goto fail;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *m = PyList_GET_ITEM(ms, k), *a = PyList_GET_ITEM(armed, k);
        int full = m == Py_None ? 0 : PyObject_IsTrue(m);
        if (full < 0)
            goto fail;
        if (full && !PyDict_Check(m)) {
            Py_DECREF(out);
            Py_DECREF(zero);
            Py_RETURN_NONE;
        }
        PyObject *d = full ? PyDict_Copy(m) : PyDict_New();
        if (!d)
            goto fail;
        PyList_SET_ITEM(out, k, d);
        if (PyDict_Update(d, clock) < 0)
            goto fail;
        int on = PyObject_IsTrue(a);
        if (on < 0)
            goto fail;
        if (on) {
            int later = PyObject_RichCompareBool(a, t0, Py_GT);
            if (later < 0)
                goto fail;
            PyObject *late = later ? PyNumber_Subtract(a, t0) : (Py_INCREF(zero), zero);
            if (!late)
                goto fail;
            int err = PyDict_SetItem(d, key, late);
            Py_DECREF(late);
            if (err < 0)
                goto fail;
        }
    }
    Py_DECREF(zero);
    return out;
fail:
    Py_XDECREF(out);
    Py_XDECREF(zero);
    return NULL;
}

/* slot_extra(extra, armed, ranks, armed_key, rank_key) -> [dict] | None: each slot's record
 * extra, as run/outcome._node_records makes it: a copy of x (None or empty: {}), armed_key:
 * armed where it is not 0, rank_key: its rank. None when an x is neither None nor a dict. */
static PyObject *py_slot_extra(PyObject *self, PyObject *args)
{
    PyObject *xs, *armed, *ranks, *akey, *rkey;
    if (!PyArg_ParseTuple(args, "O!O!O!UU:slot_extra", &PyList_Type, &xs, &PyList_Type,
                          &armed, &PyList_Type, &ranks, &akey, &rkey))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(xs);
    if (PyList_GET_SIZE(armed) != n || PyList_GET_SIZE(ranks) != n) {
        PyErr_SetString(PyExc_ValueError, "slot_extra: extra, armed and ranks differ in length");
        return NULL;
    }
    PyObject *out = PyList_New(n);
    if (!out)
        return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *x = PyList_GET_ITEM(xs, k), *a = PyList_GET_ITEM(armed, k);
        int full = x == Py_None ? 0 : PyObject_IsTrue(x);
        if (full < 0)
            goto fail;
        if (full && !PyDict_Check(x)) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
        PyObject *d = full ? PyDict_Copy(x) : PyDict_New();
        if (!d)
            goto fail;
        PyList_SET_ITEM(out, k, d);
        int on = PyObject_IsTrue(a);
        if (on < 0 || (on && PyDict_SetItem(d, akey, a) < 0) ||
            PyDict_SetItem(d, rkey, PyList_GET_ITEM(ranks, k)) < 0)
            goto fail;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

PyMethodDef nb_records_methods[] = {
    {"slot_metrics", py_slot_metrics, METH_VARARGS,
     "slot_metrics(metrics, clock, armed, t0, late_key) -> [dict] | None (outcome.py's)"},
    {"slot_extra", py_slot_extra, METH_VARARGS,
     "slot_extra(extra, armed, ranks, armed_key, rank_key) -> [dict] | None (outcome.py's)"},
    {"json_items", py_json_items, METH_VARARGS,
     "json_items(data) -> [str | None]: each element's text of a compact JSON array (orjson's), "
     "None where it holds \"null\""},
    {"shift_stamps", py_shift_stamps, METH_VARARGS,
     "shift_stamps(stamps, off) -> [t - off if t else 0] | None (not all 64-bit ints)"},
    {NULL, NULL, 0, NULL},
};
