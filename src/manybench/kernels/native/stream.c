/* stream kernels (to be written). */
