/* libFuzzer target: the node protocol's decoder, node/codec.py with its msgpack hooks in C
 * (kernels/native/wire.c), on the real wire table (node/protocol.py's CODEC). An input is a
 * message body, what follows the envelope: a real frame, cut short, or anything. The codec
 * must answer with a message or ValueError; any other exception is a finding (abort), as is
 * any sanitizer report. wire.c is compiled into this program, with coverage; the interpreter
 * and msgpack are not instrumented. scripts/fuzz.sh builds and runs it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    PyObject *body = PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)size);
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
