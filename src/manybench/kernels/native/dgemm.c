/* dgemm kernels (to be written). */
