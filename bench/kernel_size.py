"""Machine instructions of the single-state CRBA kernel, ``kernels.crba.crba_f``.

    rm -rf /tmp/nbc && NUMBA_CACHE_DIR=/tmp/nbc PYTHONPATH=<checkout>/src \
        .venv/bin/python bench/kernel_size.py

numba gives no assembly for code loaded from its disk cache, hence the empty cache
directory: the kernel is compiled afresh (about a minute). The count is the number of
instruction lines of ``inspect_asm()`` (labels and assembler directives left out), for
comparing two checkouts' code size, not their speed.
"""

from __future__ import annotations

import numpy as np

import kanedyn as kd
from kanedyn.dynamics.kernels import crba

kd.crba(kd.models.pendulum_chain(3), np.zeros(3))
for asm in crba.crba_f.inspect_asm().values():
    lines = [x for x in asm.splitlines() if x.startswith("\t") and not x.startswith("\t.")]
    print("crba_f", len(lines), "instructions")
