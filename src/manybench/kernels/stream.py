"""stream kernels (to be written)."""
KERNELS: list = []
