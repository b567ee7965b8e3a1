/* Python bindings of the net kernels (to be written). */
#include "bind.h"

PyMethodDef nb_net_methods[] = {
    {NULL, NULL, 0, NULL},
};
