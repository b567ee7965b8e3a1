"""net kernels (to be written)."""
KERNELS: list = []
