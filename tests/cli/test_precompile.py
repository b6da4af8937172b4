"""``kanedyn precompile`` (issue 17, first call in seconds): it fills numba's ordinary disk
cache, which a new process then loads instead of compiling, and it covers the whole
entry-point table."""

import json
import os
import subprocess
import sys

from kanedyn.cli import main, precompile_tasks
from kanedyn.dynamics.kernels import ENTRIES

#: a new process: the cache hits and misses of two kernels' dispatchers after loading them
#: (forward kinematics and the energy summary, both cheap to compile) and their results
LOAD = """
import json
import numpy as np
import kanedyn as kd
from kanedyn.dynamics import kernels, reference
model = kd.models.pendulum_chain(3, planar=False)
q, v = np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, -0.3])
V = kd.potential_energy(model, q)
kin = kd.forward_kinematics(model, q, v)
R_ref, p_ref = reference.body_placements(model, q)
ok = bool(np.isclose(V, reference.potential_energy(model, q), rtol=1e-12)
          and np.allclose(kin.R, R_ref, atol=1e-14) and np.allclose(kin.p, p_ref, atol=1e-14))
hits = misses = 0
for name in ("kinematics1", "summary1"):
    s = kernels.ready(name).stats
    hits += sum(s.cache_hits.values())
    misses += sum(s.cache_misses.values())
print(json.dumps([hits, misses, ok]))
"""


def _run(args, cache):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                          timeout=600)


def test_a_new_process_loads_what_precompile_compiled(tmp_path):
    filled, empty = tmp_path / "filled", tmp_path / "empty"
    r = _run(["-m", "kanedyn", "precompile", "--jobs", "2", "--only", "kernel:kinematics1",
              "--only", "kernel:summary1"], filled)
    assert r.returncode == 0, r.stderr
    assert "kernel:kinematics1" in r.stdout and "kernel:summary1" in r.stdout
    assert str(filled) in r.stdout  # it says where the cache is
    hits, misses, ok = json.loads(_run(["-c", LOAD], filled).stdout)
    assert ok and hits == 2 and misses == 0
    # the same process on an empty cache compiles both: the count above can tell them apart
    hits, misses, ok = json.loads(_run(["-c", LOAD], empty).stdout)
    assert ok and hits == 0 and misses == 2


def test_the_tasks_cover_every_kernel_of_the_entry_point_table():
    tasks = set(precompile_tasks())
    for e in ENTRIES.values():
        assert f"kernel:{e.batch}" in tasks, e.name
        if e.single_fext:
            assert f"kernel:{e.single_fext}" in tasks, e.name
        # a C entry point's task readies its single-state kernel first (c_function)
        assert (f"c:{e.name}" if e.c else f"kernel:{e.single}") in tasks, e.name
    assert {"run:simulate avf", "run:simulate rk4"} <= tasks


def test_only_matching_no_task_is_a_usage_error(capsys):
    assert main(["precompile", "--only", "no_such_kernel"]) == 2
    err = capsys.readouterr().err
    assert "no_such_kernel" in err and "kernel:aba_batch" in err
