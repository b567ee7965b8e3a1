/* Python bindings of the stream kernels (to be written). */
#include "bind.h"

PyMethodDef nb_stream_methods[] = {
    {NULL, NULL, 0, NULL},
};
