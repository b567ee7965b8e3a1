/* The kernel families registered with the module: one line per family. */
#include "bind.h"

PyMethodDef *nb_family_methods[] = {
    nb_meta_methods, nb_stream_methods, nb_himeno_methods, nb_dgemm_methods, nb_randio_methods,
    nb_net_methods, nb_probe_methods, NULL,
};
