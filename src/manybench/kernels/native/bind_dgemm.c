/* Python bindings of the dgemm kernels (to be written). */
#include "bind.h"

PyMethodDef nb_dgemm_methods[] = {
    {NULL, NULL, 0, NULL},
};
