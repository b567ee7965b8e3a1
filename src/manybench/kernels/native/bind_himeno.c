/* Python bindings of the himeno kernels (to be written). */
#include "bind.h"

PyMethodDef nb_himeno_methods[] = {
    {NULL, NULL, 0, NULL},
};
