/* Python bindings of the randio kernels (to be written). */
#include "bind.h"

PyMethodDef nb_randio_methods[] = {
    {NULL, NULL, 0, NULL},
};
