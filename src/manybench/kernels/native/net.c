/* net kernels (to be written). */
