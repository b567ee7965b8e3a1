"""himeno kernels (to be written)."""
KERNELS: list = []
