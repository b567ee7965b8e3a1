"""randio kernels (to be written)."""
KERNELS: list = []
