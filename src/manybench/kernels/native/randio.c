/* randio kernels (to be written). */
