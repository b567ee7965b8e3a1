"""manybench's C extension (_native_c, kernels/native/), loaded only on a cpu that has the
instructions it was built for (build_isa.check: CpuMismatch, an ImportError, names both),
never a SIGILL. Once loaded, the extension itself is manybench._native."""
import sys

from .build_isa import check

check()
from . import _native_c  # noqa: E402  (after the check: loading runs its code)

sys.modules[__name__] = _native_c
