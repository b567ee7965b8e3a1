/* libFuzzer target: the node protocol's decoder, node/codec.py with its msgpack hooks in C
 * (kernels/native/wire.c), on the real wire table (node/protocol.py's CODEC). An input is a
 * message body, what follows the envelope: a real frame, cut short, or anything; or, after a
 * first byte 0xff, a recipe that builds one (build() below). The codec must answer with a
 * message or ValueError; any other exception is a finding (abort), as is any sanitizer
 * report. wire.c is compiled into this program, with coverage; the interpreter and msgpack
 * are not instrumented, so coverage cannot lead mutations of raw bytes to new shapes of
 * message: recipes make every shape a few mutations away (objects of any code with any
 * number of fields, shared objects nested in each other, maps, tuples).
 * scripts/fuzz.sh builds and runs it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nb_add_wire(PyObject *m); /* wire.c */

static PyObject *unpack; /* protocol.CODEC.unpack */

static void fail(const char *what)
{
    if (PyErr_Occurred())
        PyErr_Print();
    fprintf(stderr, "fuzz/wire_decode: %s\n", what);
    abort();
}

static struct PyModuleDef native_def = {PyModuleDef_HEAD_INIT, "manybench._native", NULL, -1};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    /* Python's objects from malloc: a reference the hooks drop too soon is a use-after-free
     * that AddressSanitizer sees (pymalloc's pools would hide it) */
    setenv("PYTHONMALLOC", "malloc", 1);
    Py_InitializeEx(0);
    /* manybench._native holding only the hooks, as built here: the codec imports WireHooks
     * from it (the package's own extension, if any, is never loaded) */
    PyObject *pkg = PyImport_ImportModule("manybench");
    PyObject *native = pkg ? PyModule_Create(&native_def) : NULL;
    if (!native || nb_add_wire(native) < 0
        || PyDict_SetItemString(PyImport_GetModuleDict(), "manybench._native", native) < 0
        || PyObject_SetAttrString(pkg, "_native", native) < 0)
        fail("cannot make manybench._native (is src/ on PYTHONPATH?)");
    PyObject *protocol = PyImport_ImportModule("manybench.node.protocol");
    PyObject *codec = protocol ? PyObject_GetAttrString(protocol, "CODEC") : NULL;
    PyObject *in_c = codec ? PyObject_GetAttrString(codec, "native") : NULL;
    if (in_c != Py_True)
        fail("the codec does not use the hooks in C");
    unpack = PyObject_GetAttrString(codec, "unpack");
    if (!unpack)
        fail("no CODEC.unpack");
    Py_DECREF(in_c);
    Py_DECREF(codec);
    Py_DECREF(protocol);
    Py_DECREF(native);
    Py_DECREF(pkg);
    return 0;
}

/* ---- recipes: msgpack built from the input's bytes, one choice a byte ---- */

typedef struct {
    const uint8_t *in;
    size_t left;
    uint8_t *out;
    size_t len, cap;
} recipe;

static uint8_t take(recipe *r) /* the next byte of the recipe; 0 once it is used up */
{
    if (!r->left)
        return 0;
    r->left--;
    return *r->in++;
}

static void put(recipe *r, const void *bytes, size_t n)
{
    if (r->len + n > r->cap || !r->out) {
        r->cap = (r->len + n) * 2 + 16;
        r->out = realloc(r->out, r->cap);
        if (!r->out)
            abort();
    }
    if (n)
        memcpy(r->out + r->len, bytes, n);
    r->len += n;
}

static void put_head(recipe *r, uint8_t tag, uint64_t n, int bytes) /* tag, n big-endian */
{
    uint8_t b[9] = {tag};
    for (int i = 0; i < bytes; i++)
        b[1 + i] = (uint8_t)(n >> (8 * (bytes - 1 - i)));
    put(r, b, (size_t)bytes + 1);
}

static void put_ext(recipe *r, uint8_t code, const uint8_t *data, size_t n)
{
    if (n > 0xffff)
        put_head(r, 0xc9, n, 4);
    else if (n > 0xff)
        put_head(r, 0xc8, n, 2);
    else
        put_head(r, 0xc7, n, 1);
    put(r, &code, 1);
    put(r, data, n);
}

/* One value: its kind from the next byte, then what it needs. Codes up to 63: the table's
 * (49) and some past its end. */
static void build(recipe *r, int depth)
{
    uint8_t kind = take(r), a = take(r);
    int n = a & 15;
    if (depth > 1000 || !r->left)
        kind = 0;
    switch (kind % 10) {
    case 0: put(r, "\xc0", 1); break;                          /* nil */
    case 1: put_head(r, 0xcf, (uint64_t)a << 56 | take(r), 8); break;   /* uint64 */
    case 2: put_head(r, 0xd3, -(uint64_t)a, 8); break;             /* negative int64 */
    case 3: put_head(r, 0xd9, n, 1); for (int i = 0; i < n; i++) put(r, "x", 1); break;
    case 4: put_head(r, 0xcb, (uint64_t)a << 52, 8); break;        /* float64 */
    case 5:                                                     /* an array */
        put_head(r, 0xdc, n, 2);
        for (int i = 0; i < n; i++)
            build(r, depth + 1);
        break;
    case 6:                                                     /* an object: its head first */
        put_head(r, 0xdc, n + 1, 2);
        put_ext(r, take(r) & 63, NULL, 0);
        for (int i = 0; i < n; i++)
            build(r, depth + 1);
        break;
    case 7: {                                                   /* an extension holding a value */
        uint8_t code = take(r) & 63;
        recipe inner = {r->in, r->left, NULL, 0, 0};
        build(&inner, depth + 1);
        r->in = inner.in, r->left = inner.left;
        put_ext(r, code, inner.out, inner.len);
        free(inner.out);
        break;
    }
    case 8:                                                     /* a map */
        put_head(r, 0xde, n, 2);
        for (int i = 0; i < 2 * n; i++)
            build(r, depth + 1);
        break;
    default: put_head(r, 0xc4, n, 1); for (int i = 0; i < n; i++) put(r, "b", 1); break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    recipe r = {data + 1, size ? size - 1 : 0, NULL, 0, 0};
    if (size && data[0] == 0xff) {
        build(&r, 0);
        data = r.out, size = r.len;
    }
    PyObject *body = PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)size);
    free(r.out);
    if (!body)
        fail("no memory for the input");
    PyObject *msg = PyObject_CallOneArg(unpack, body);
    Py_DECREF(body);
    if (msg) {
        Py_DECREF(msg);
        return 0;
    }
    if (!PyErr_ExceptionMatches(PyExc_ValueError))
        fail("unpack raised what is not a ValueError");
    PyErr_Clear();
    return 0;
}
