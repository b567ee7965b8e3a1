/* himeno kernels (to be written). */
