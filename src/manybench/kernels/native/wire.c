/* The wire codec's msgpack hooks (node/codec.py), in C: msgpack calls them once for every
 * object, tuple and type head of a message, and in Python each call was a frame of its own.
 * A null node-phase crosses ~20 of them in the agent and ~15 in the slot, on processes woken
 * from sleep with cold caches, so they were a third of what a node spent on a phase's
 * Python. node/codec.py's Python hooks are the reference and the path taken without the
 * extension (tests/node/test_codec.py packs and unpacks every message both ways and compares).
 *
 *   WireHooks(types, names, heads, plain, tuple_head, ext_more, default_more, shared,
 *             recent, decoded, limit, unpackb, ExtType, max_nested)
 *     types[code], names[code]: the wire type of each code (1..; 0: the tuple) and its
 *       fields; heads[code]: its msgpack ExtType(code, b""); plain: {type: code} of the
 *       types packed inline, shared: of those packed apart and kept; recent, decoded: the
 *       codec's caches of shared objects ({code: {id: (obj, ext)}}, {code: {bytes: obj}}),
 *       and limit ({code: how many kept}): bytes of a shared object not seen before are
 *       unpacked (msgpack's unpackb with these hooks), made and kept here as codec._ext
 *       does, an object packed before found here; ext_more(code, data), default_more(obj): the
 *       Python hooks for everything else (a shared object not kept, subclasses, refusals);
 *       max_nested: how many shared objects may be unpacked inside one another (ValueError
 *       past it: each level is a call of msgpack's unpacker, ~32 kB of C stack).
 *   .marks                    one head object per code, what ext_hook gives for an empty ext
 *   .ext_hook(code, data)     an empty ext: its mark; a shared object's bytes: the object
 *                             kept for them, or made and kept; else ext_more(code, data)
 *   .list_hook(values)        [mark, *fields] -> the object (a tuple for code 0); else values
 *   .default(obj)             a tuple or a plain wire object -> [head, *fields]; a shared
 *                             one kept in recent: its ext; else default_more(obj)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "bind.h"

typedef struct {
    PyObject_HEAD
    int code;
} Mark;

static PyMemberDef mark_members[] = {
    {"code", T_INT, offsetof(Mark, code), READONLY, "the wire type's code (0: a tuple)"},
    {NULL},
};

static PyTypeObject MarkType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "manybench._native.WireMark",
    .tp_basicsize = sizeof(Mark),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The extension heading an object's array: which wire type it is.",
    .tp_members = mark_members,
};

typedef struct {
    PyObject_HEAD
    PyObject *types;        /* tuple: code -> type (None at 0) */
    PyObject *names;        /* tuple: code -> tuple of field names */
    PyObject *heads;        /* tuple: code -> ExtType(code, b"") */
    PyObject *plain;        /* dict: type -> code, types packed inline */
    PyObject *tuple_head;
    PyObject *ext_more;
    PyObject *default_more;
    PyObject *marks;        /* tuple: code -> Mark */
    PyObject *shared;       /* dict: type -> code, types packed apart and kept */
    PyObject *recent;       /* dict: code -> {id(obj): (obj, ext)} (codec.recent) */
    PyObject *decoded;      /* dict: code -> {packed bytes: obj} (codec.decoded) */
    PyObject *limit;        /* dict: code -> how many of its objects the caches keep */
    PyObject *unpack;       /* msgpack.unpackb */
    PyObject *unpack_kw;    /* its keywords: these hooks, raw=False, strict_map_key=False */
    PyObject *exttype;      /* msgpack.ExtType */
    int max_nested;         /* shared objects unpacked inside one another, at most */
} Hooks;

/* shared objects being unpacked by this thread, one inside the other (made_anew) */
static _Thread_local int nested;

/* The Python hooks are the codec's bound methods, and the codec holds these: a cycle, so
 * the collector must see through them. */
static int hooks_traverse(Hooks *h, visitproc visit, void *arg)
{
    Py_VISIT(h->types);
    Py_VISIT(h->names);
    Py_VISIT(h->heads);
    Py_VISIT(h->plain);
    Py_VISIT(h->tuple_head);
    Py_VISIT(h->ext_more);
    Py_VISIT(h->default_more);
    Py_VISIT(h->marks);
    Py_VISIT(h->shared);
    Py_VISIT(h->recent);
    Py_VISIT(h->decoded);
    Py_VISIT(h->limit);
    Py_VISIT(h->unpack);
    Py_VISIT(h->unpack_kw);
    Py_VISIT(h->exttype);
    return 0;
}

static int hooks_clear(Hooks *h)
{
    Py_CLEAR(h->types);
    Py_CLEAR(h->names);
    Py_CLEAR(h->heads);
    Py_CLEAR(h->plain);
    Py_CLEAR(h->tuple_head);
    Py_CLEAR(h->ext_more);
    Py_CLEAR(h->default_more);
    Py_CLEAR(h->marks);
    Py_CLEAR(h->shared);
    Py_CLEAR(h->recent);
    Py_CLEAR(h->decoded);
    Py_CLEAR(h->limit);
    Py_CLEAR(h->unpack);
    Py_CLEAR(h->unpack_kw);
    Py_CLEAR(h->exttype);
    return 0;
}

static void hooks_dealloc(Hooks *h)
{
    PyObject_GC_UnTrack(h);
    hooks_clear(h);
    Py_TYPE(h)->tp_free((PyObject *)h);
}

static PyObject *hooks_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    PyObject *types, *names, *heads, *plain, *tuple_head, *ext_more, *default_more, *shared,
        *recent, *decoded, *limit, *unpack, *exttype;
    int max_nested;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OOOO!O!O!O!OO!i:WireHooks", &PyTuple_Type, &types,
                          &PyTuple_Type, &names, &PyTuple_Type, &heads, &PyDict_Type, &plain,
                          &tuple_head, &ext_more, &default_more, &PyDict_Type, &shared,
                          &PyDict_Type, &recent, &PyDict_Type, &decoded, &PyDict_Type, &limit,
                          &unpack, &PyType_Type, &exttype, &max_nested))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)exttype, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "WireHooks: ExtType is a tuple (msgpack's namedtuple)");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(types);
    if (PyTuple_GET_SIZE(names) != n || PyTuple_GET_SIZE(heads) != n || n > 127) {
        PyErr_SetString(PyExc_ValueError, "WireHooks: types, names and heads differ in length");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyTuple_Check(PyTuple_GET_ITEM(names, i))) {
            PyErr_SetString(PyExc_TypeError, "WireHooks: each names entry is a tuple");
            return NULL;
        }
    PyObject *marks = PyTuple_New(n);
    if (!marks)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Mark *m = PyObject_New(Mark, &MarkType);
        if (!m) {
            Py_DECREF(marks);
            return NULL;
        }
        m->code = (int)i;
        PyTuple_SET_ITEM(marks, i, (PyObject *)m);
    }
    Hooks *h = (Hooks *)type->tp_alloc(type, 0);
    if (!h) {
        Py_DECREF(marks);
        return NULL;
    }
    PyObject *all[] = {types, names, heads, plain, tuple_head, ext_more, default_more, shared,
                       recent, decoded, limit, unpack, exttype};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        Py_INCREF(all[i]);
    h->types = types, h->names = names, h->heads = heads, h->plain = plain;
    h->tuple_head = tuple_head, h->ext_more = ext_more, h->default_more = default_more;
    h->marks = marks;
    h->shared = shared, h->recent = recent, h->decoded = decoded;
    h->limit = limit, h->unpack = unpack, h->exttype = exttype;
    h->max_nested = max_nested;
    /* what codec._unpack passes msgpack, these hooks being its hooks (a cycle: traversed) */
    PyObject *ext_hook = PyObject_GetAttrString((PyObject *)h, "ext_hook");
    PyObject *list_hook = PyObject_GetAttrString((PyObject *)h, "list_hook");
    h->unpack_kw = ext_hook && list_hook ? Py_BuildValue(
        "{sOsOsOsO}", "ext_hook", ext_hook, "list_hook", list_hook, "raw", Py_False,
        "strict_map_key", Py_False) : NULL;
    Py_XDECREF(ext_hook);
    Py_XDECREF(list_hook);
    if (!h->unpack_kw) {
        Py_DECREF(h);
        return NULL;
    }
    return (PyObject *)h;
}

static PyObject *made_anew(Hooks *h, PyObject *code, PyObject *data);

/* ext_hook(code, data): what msgpack hands every extension. */
static PyObject *hooks_ext(Hooks *h, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "ext_hook(code, data)");
        return NULL;
    }
    long code = PyLong_AsLong(args[0]);
    if (code == -1 && PyErr_Occurred())
        return NULL;
    if (code < 0 || code >= PyTuple_GET_SIZE(h->types))
        return PyErr_Format(PyExc_ValueError, "unknown wire type %ld", code);
    if (PyBytes_CheckExact(args[1]) && PyBytes_GET_SIZE(args[1]) == 0) {
        PyObject *m = PyTuple_GET_ITEM(h->marks, code);   /* an object's head: the most common */
        Py_INCREF(m);
        return m;
    }
    /* a shared object whose bytes came before (a placement's assignments, phase after
     * phase): the object made then, as codec._ext finds it */
    PyObject *key = PyLong_FromLong(code);
    if (!key)
        return NULL;
    PyObject *decoded = PyDict_GetItemWithError(h->decoded, key);
    if (decoded && PyDict_Check(decoded) && PyBytes_CheckExact(args[1])) {
        PyObject *obj = PyDict_GetItemWithError(decoded, args[1]);
        if (!obj && !PyErr_Occurred())
            obj = made_anew(h, key, args[1]);
        else
            Py_XINCREF(obj);
        if (obj || PyErr_Occurred()) {
            Py_DECREF(key);
            return obj;
        }
    }
    Py_DECREF(key);
    if (PyErr_Occurred())
        return NULL;
    return PyObject_Vectorcall(h->ext_more, args, 2, NULL);
}

/* An object of wire type `code` from its fields (a tuple), as codec._make: its fields set
 * as its __init__ would (wire types are plain dataclasses without __post_init__; frozen ones
 * refuse only later changes) without calling it, a frozen __init__ costing a call per
 * field; a count of fields that does not match goes through __init__ (its defaults, or its
 * TypeError). */
static PyObject *make(Hooks *h, int code, PyObject *fields)
{
    PyObject *type = PyTuple_GET_ITEM(h->types, code);
    PyObject *names = PyTuple_GET_ITEM(h->names, code);
    Py_ssize_t n = PyTuple_GET_SIZE(fields);
    if (PyTuple_GET_SIZE(names) != n || !PyType_Check(type))
        return PyObject_Call(type, fields, NULL);
    PyTypeObject *t = (PyTypeObject *)type;
    PyObject *obj = t->tp_alloc(t, 0);     /* object.__new__(cls) */
    if (!obj)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyObject_GenericSetAttr(obj, PyTuple_GET_ITEM(names, i), PyTuple_GET_ITEM(fields, i))
            < 0) {
            Py_DECREF(obj);
            return NULL;
        }
    return obj;
}

/* od[key] = value, then its oldest entries dropped beyond `keep` (an OrderedDict's own
 * methods: its order is its own bookkeeping). */
static int keep_newest(PyObject *od, PyObject *key, PyObject *value, Py_ssize_t keep)
{
    if (PyObject_SetItem(od, key, value) < 0)
        return -1;
    while (PyObject_Length(od) > keep) {
        PyObject *old = PyObject_CallMethod(od, "popitem", "O", Py_False);
        if (!old)
            return -1;
        Py_DECREF(old);
    }
    return 0;
}

/* A shared object's bytes not seen before (a new phase: every phase), as codec._ext makes
 * it: its array unpacked, the object made, kept with its bytes (the agent passes them on to
 * its slots as they came). NULL with no error set: not the usual case (its caches are not
 * dicts, it holds no array): codec._ext does it, and says what is wrong. */
static PyObject *made_anew(Hooks *h, PyObject *code, PyObject *data)
{
    int c = (int)PyLong_AsLong(code);
    PyObject *decoded = PyDict_GetItemWithError(h->decoded, code);
    PyObject *recent = decoded ? PyDict_GetItemWithError(h->recent, code) : NULL;
    PyObject *limit = recent ? PyDict_GetItemWithError(h->limit, code) : NULL;
    if (!limit || c <= 0 || !PyDict_Check(decoded) || !PyDict_Check(recent))
        return NULL;
    Py_ssize_t keep = PyLong_AsSsize_t(limit);
    if (keep < 0)
        return NULL;
    if (nested >= h->max_nested)
        return PyErr_Format(PyExc_ValueError, "shared objects nested deeper than %d",
                            h->max_nested);
    PyObject *args = PyTuple_Pack(1, data);
    nested++;
    PyObject *values = args ? PyObject_Call(h->unpack, args, h->unpack_kw) : NULL;
    nested--;
    Py_XDECREF(args);
    if (!values)
        return NULL;
    if (!PyList_CheckExact(values)) {
        Py_DECREF(values);
        return NULL;
    }
    PyObject *fields = PyList_AsTuple(values);
    Py_DECREF(values);
    if (!fields)
        return NULL;
    PyObject *obj = make(h, c, fields);
    Py_DECREF(fields);
    if (!obj)
        return NULL;
    /* ExtType(code, data) as tuple.__new__ makes it: its own __new__ is Python that checks
     * the two types these already are */
    PyObject *pair = PyTuple_Pack(2, code, data);
    PyObject *one = pair ? PyTuple_Pack(1, pair) : NULL;
    PyObject *ext = one ? PyTuple_Type.tp_new((PyTypeObject *)h->exttype, one, NULL) : NULL;
    Py_XDECREF(pair);
    Py_XDECREF(one);
    PyObject *id = ext ? PyLong_FromVoidPtr(obj) : NULL;
    PyObject *kept = id ? PyTuple_Pack(2, obj, ext) : NULL;
    int failed = !kept || keep_newest(recent, id, kept, keep) < 0
        || keep_newest(decoded, data, obj, keep) < 0;
    Py_XDECREF(ext);
    Py_XDECREF(id);
    Py_XDECREF(kept);
    if (failed) {
        Py_DECREF(obj);
        return NULL;
    }
    return obj;
}

/* list_hook(values): every array msgpack reads. */
static PyObject *hooks_list(Hooks *h, PyObject *values)
{
    Py_ssize_t n = PyList_CheckExact(values) ? PyList_GET_SIZE(values) : 0;
    if (n == 0 || Py_TYPE(PyList_GET_ITEM(values, 0)) != &MarkType) {
        Py_INCREF(values);
        return values;
    }
    int code = ((Mark *)PyList_GET_ITEM(values, 0))->code;
    PyObject *fields = PyList_GetSlice(values, 1, n);
    if (!fields)
        return NULL;
    PyObject *tuple = PyList_AsTuple(fields);
    Py_DECREF(fields);
    if (!tuple || code == 0)
        return tuple;
    PyObject *obj = make(h, code, tuple);
    Py_DECREF(tuple);
    return obj;
}

/* A shared object packed before and still kept (codec.recent: id -> (obj, ext)): *ext its
 * extension (a new reference), else NULL; -1 on an error. */
static int shared_ext(Hooks *h, PyObject *obj, PyObject **ext)
{
    *ext = NULL;
    PyObject *code = PyDict_GetItemWithError(h->shared, (PyObject *)Py_TYPE(obj));
    if (!code)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *recent = PyDict_GetItemWithError(h->recent, code);
    if (!recent || !PyDict_Check(recent))
        return PyErr_Occurred() ? -1 : 0;
    PyObject *id = PyLong_FromVoidPtr(obj);
    if (!id)
        return -1;
    PyObject *got = PyDict_GetItemWithError(recent, id);
    Py_DECREF(id);
    if (!got)
        return PyErr_Occurred() ? -1 : 0;
    if (PyTuple_Check(got) && PyTuple_GET_SIZE(got) == 2 && PyTuple_GET_ITEM(got, 0) == obj) {
        *ext = PyTuple_GET_ITEM(got, 1);
        Py_INCREF(*ext);
    }
    return 0;
}

/* default(obj): what msgpack cannot pack itself (strict types: every object, every tuple). */
static PyObject *hooks_default(Hooks *h, PyObject *obj)
{
    if (PyTuple_CheckExact(obj)) {
        Py_ssize_t n = PyTuple_GET_SIZE(obj);
        PyObject *out = PyList_New(n + 1);
        if (!out)
            return NULL;
        Py_INCREF(h->tuple_head);
        PyList_SET_ITEM(out, 0, h->tuple_head);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *v = PyTuple_GET_ITEM(obj, i);
            Py_INCREF(v);
            PyList_SET_ITEM(out, i + 1, v);
        }
        return out;
    }
    PyObject *code = PyDict_GetItemWithError(h->plain, (PyObject *)Py_TYPE(obj));
    if (!code) {
        PyObject *ext;
        if (PyErr_Occurred() || shared_ext(h, obj, &ext) < 0)
            return NULL;
        if (ext)
            return ext;             /* its extension, packed before: as codec._default */
        return PyObject_CallOneArg(h->default_more, obj);   /* shared, subclass, refused */
    }
    Py_ssize_t c = PyLong_AsSsize_t(code);
    if (c <= 0 || c >= PyTuple_GET_SIZE(h->names)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "WireHooks: a code out of range");
        return NULL;
    }
    PyObject *names = PyTuple_GET_ITEM(h->names, c);
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    PyObject *out = PyList_New(n + 1);
    if (!out)
        return NULL;
    PyObject *head = PyTuple_GET_ITEM(h->heads, c);
    Py_INCREF(head);
    PyList_SET_ITEM(out, 0, head);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyObject_GetAttr(obj, PyTuple_GET_ITEM(names, i));
        if (!v) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i + 1, v);
    }
    return out;
}

static PyMethodDef hooks_methods[] = {
    {"ext_hook", (PyCFunction)(void (*)(void))hooks_ext, METH_FASTCALL,
     "ext_hook(code, data): an empty extension's mark, else ext_more(code, data)"},
    {"list_hook", (PyCFunction)hooks_list, METH_O,
     "list_hook(values): [mark, *fields] as its object (a tuple for code 0), else values"},
    {"default", (PyCFunction)hooks_default, METH_O,
     "default(obj): a tuple or plain wire object as [head, *fields], else default_more(obj)"},
    {NULL},
};

static PyMemberDef hooks_members[] = {
    {"marks", T_OBJECT, offsetof(Hooks, marks), READONLY, "code -> the mark ext_hook gives"},
    {NULL},
};

static PyTypeObject HooksType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "manybench._native.WireHooks",
    .tp_basicsize = sizeof(Hooks),
    .tp_dealloc = (destructor)hooks_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)hooks_traverse,
    .tp_clear = (inquiry)hooks_clear,
    .tp_doc = "node/codec.py's msgpack hooks in C (see wire.c).",
    .tp_methods = hooks_methods,
    .tp_members = hooks_members,
    .tp_new = hooks_new,
};

int nb_add_wire(PyObject *m)
{
    if (PyType_Ready(&MarkType) < 0 || PyType_Ready(&HooksType) < 0)
        return -1;
    Py_INCREF(&MarkType);
    if (PyModule_AddObject(m, "WireMark", (PyObject *)&MarkType) < 0) {
        Py_DECREF(&MarkType);
        return -1;
    }
    Py_INCREF(&HooksType);
    if (PyModule_AddObject(m, "WireHooks", (PyObject *)&HooksType) < 0) {
        Py_DECREF(&HooksType);
        return -1;
    }
    return 0;
}
