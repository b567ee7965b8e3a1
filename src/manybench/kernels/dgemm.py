"""dgemm kernels (to be written)."""
KERNELS: list = []
