"""A kernel module's disk cache built against another kernels package is dropped, not run.

numba keys a function's cache by its own file only; the frames, centroidal and
joint-wrench kernels compile code of the kernels package (``dynamics/kernels/``) into
theirs, so each records the digest of that package its cache was built with
(``kanedyn.dynamics._compiled``). Here a first process fills a fresh cache; a second
one, in which the package "has changed" (the digest is set to another value before the
kernel module is imported), must delete that module's cache files before compiling and
still compute right.
(The centroidal and joint-wrench kernels use the same loader; one module is run here,
as each run compiles its kernels cold.)"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import kanedyn as kd
    from kanedyn.dynamics import _compiled
    if sys.argv[1] == "changed":
        _compiled.KERNELS_DIGEST = 12345  # as if the kernels had changed since the cache
    from kanedyn.dynamics import {module} as k
    model = kd.models.pendulum_chain(3)
    q = np.array([0.3, -0.2, 0.5])
    k.ready("{kernel}")
    print(k._LOADER.dropped)
    print(np.allclose({check}, atol=1e-12))
""")

CASES = [
    ("frames_kernel", "frame_f",
     "kd.frame_placement(model, q, model.body_names[-1])[1], "
     "kd.forward_kinematics(model, q).p[-1]"),
]


@pytest.mark.parametrize("module, kernel, check", CASES, ids=[c[0] for c in CASES])
def test_a_cache_built_against_another_kernels_py_is_dropped(module, kernel, check,
                                                             tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), KANEDYN_NO_C="1")
    script = SCRIPT.format(module=module, kernel=kernel, check=check)

    def run(mode):
        out = subprocess.run([sys.executable, "-c", script, mode], env=env,
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    assert run("same") == ["False", "True"]        # a fresh cache, written
    files = sorted(p.name for p in Path(tmp_path / "cache").rglob(f"{module}.*.nbi"))
    assert files, "the first run left no cache of the module"
    # the cache was built against another digest: dropped, compiled afresh, still right
    assert run("changed") == ["True", "True"]
    # what that run compiled and cached is kept by the next one (its probe is compiled
    # anew, since the stale probe's cache was deleted, and agrees)
    assert run("same") == ["False", "True"]
