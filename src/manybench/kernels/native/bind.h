/* What the kernel families' Python bindings (bind_*.c) share with module.c.
 * A family is one C file of timed loops (plain C, see native.h) plus one bind_<family>.c that
 * parses arguments, drops the GIL around the call and returns nb_result_dict(). */
#ifndef MANYBENCH_BIND_H
#define MANYBENCH_BIND_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "native.h"

PyObject *nb_result_dict(nb_result *r, int with_fsync);
PyObject *nb_raise_errno(int err, const char *msg);

extern PyMethodDef nb_meta_methods[], nb_stream_methods[], nb_himeno_methods[],
    nb_dgemm_methods[], nb_randio_methods[], nb_net_methods[], nb_probe_methods[];

/* NULL-terminated list, defined in families.c */
extern PyMethodDef *nb_family_methods[];

/* the coordinator's record path (records.c), not a kernel family */
extern PyMethodDef nb_records_methods[];
/* wire.c: node/codec.py's msgpack hooks (WireHooks, WireMark) added to the module */
int nb_add_wire(PyObject *m);
#endif
