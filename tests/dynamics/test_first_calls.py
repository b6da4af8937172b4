"""First calls on a cold cache (kanedyn.dynamics.first_calls): answered by the reference
while the kernels compile in the background, then by the kernels.

The public functions rebind their kernels on their first compiled call, so the tiered
start can only be seen in a new process: the tests run one with an empty numba cache
(every first call is answered by the reference, its kernel queued for the background
thread) and one on the cache this process has filled (every kernel loads at once,
nothing is queued), and compare what they answer with the compiled kernels here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.dynamics import first_calls

#: a child's start: kanedyn imported, the functions first_calls answers by the reference
#: listed in ``answered`` as they are
COUNTING = r"""
import json
import numpy as np
import kanedyn as kd
from kanedyn.dynamics import first_calls
answered = []
_reference = first_calls.reference
def counting(name, *args):
    answered.append(name)
    return _reference(name, *args)
first_calls.reference = counting
"""

#: one state and a batch of three of every function first_calls answers, on a tree with a
#: free root and every joint type; prints them (and the first_calls bookkeeping) as JSON
CHILD = COUNTING + r"""
model = kd.models.random_tree(6, seed=3, floating_base=True,
                              joint_types=("revolute", "prismatic", "helical", "spherical",
                                           "planar"))
rng = np.random.default_rng(0)
Q = np.stack([kd.random_configuration(model, rng) for _ in range(3)])
V, A = rng.standard_normal((3, model.nv)), rng.standard_normal((3, model.nv))
F = rng.standard_normal((3, model.nb, 6))
out = {}
for tag, k in (("one", 0), ("batch", slice(None))):
    q, v, a, f = Q[k], V[k], A[k], F[k]
    out[tag] = {
        "rnea": kd.rnea(model, q, v, a).tolist(),
        "rnea_fext": kd.rnea(model, q, v, a, f).tolist(),
        "nle": kd.nonlinear_effects(model, q, v).tolist(),
        "gravity": kd.gravity_torques(model, q).tolist(),
        "crba": kd.crba(model, q).tolist(),
        "aba": kd.aba(model, q, v, a).tolist(),
        "aba_fext": kd.aba(model, q, v, a, f).tolist(),
    }
buf = np.empty(model.nv)
out["out"] = kd.rnea(model, Q[1], V[1], A[1], out=buf).tolist()
out["out_is_buf"] = bool(kd.aba(model, Q[1], V[1], A[1], out=buf) is buf)
bad = Q[0].copy(); bad[3:7] *= 1.1  # the free root's quaternion, norm 1.1
try:
    kd.rnea(model, bad, V[0], A[0])
    out["bad"] = "no error"
except kd.StateError as e:
    out["bad"] = str(e)
out["answered"] = answered
out["mode"] = first_calls.mode()
out["queued"] = sorted(first_calls._wanted)
out["done"] = sorted(first_calls._done)
print(json.dumps(out))
"""


def _child(cache: str | None, script: str = CHILD) -> dict:
    env = dict(os.environ, KANEDYN_FIRST_CALLS="reference")
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
    r = subprocess.run([sys.executable, "-c", script], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _by_row(f, model, q, *args, **kw):
    """``f(model, q, ...)`` of one state, or of a batch row by row (the array arguments
    indexed by row, the others passed as they are; a tuple result stacked part by part)."""
    if np.ndim(q) == 1:
        return f(model, q, *args, **kw)
    rows = [f(model, q[k], *(a[k] if isinstance(a, np.ndarray) else a for a in args), **kw)
            for k in range(len(q))]
    if isinstance(rows[0], tuple):  # (frame_placement: R, p)
        return tuple(np.stack(part) for part in zip(*rows, strict=True))
    return np.stack(rows)


class _ByRow:
    """``kd`` with the functions first_calls answers (the five of REFERENCE and the frame
    functions) taking a batch row by row: the compiled single-state kernels only (a batch
    equals its rows: tests/dynamics/test_fast_kernels.py, test_frames.py), so that these
    tests compile no batched kernel."""

    def __getattr__(self, name):
        f = getattr(kd, name)
        if name not in first_calls.REFERENCE and not name.startswith("frame_"):
            return f

        return lambda model, q, *args, **kw: _by_row(f, model, q, *args, **kw)


def _compiled() -> dict:
    """The same calls here, on the compiled kernels (the suite's mode)."""
    ns: dict = {"kd": _ByRow(), "np": np, "first_calls": first_calls, "answered": []}
    exec(CHILD[len(COUNTING):].replace("print(json.dumps(out))", ""), ns)
    return ns["out"]


def _compare(got: dict, want: dict) -> None:
    for tag in ("one", "batch"):
        for name, w in want[tag].items():
            g, w = np.asarray(got[tag][name]), np.asarray(w)
            assert g.shape == w.shape, (tag, name)
            # the reference's arithmetic against the kernels': round-off of sums of
            # O(10)-O(100) terms in double precision
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10 * np.abs(w).max(),
                                       err_msg=f"{tag} {name}")
    np.testing.assert_allclose(got["out"], want["out"], rtol=1e-10, atol=1e-9)
    assert got["out_is_buf"] and want["out_is_buf"]
    assert got["bad"] == want["bad"] and "quaternion" in got["bad"]


def test_cold_cache_answers_by_the_reference_while_compiling(tmp_path):
    want = _compiled()
    assert want["mode"] == "compile"
    got = _child(str(tmp_path / "cache"))
    assert got["mode"] == "reference"
    # nothing was in the empty cache: every call was answered by the reference (7 single
    # states, 7 batches, the out= pair; the bad quaternion stops before), and the kernels
    # they asked for were handed to the compiler process, which takes seconds to start
    # and to compile one (a batch of 3 asks for no batched kernel: SMALL_BATCH)
    assert len(got["answered"]) == 16 and set(got["answered"]) == set(first_calls.REFERENCE)
    assert got["done"] == []
    for key in ("kernel:rnea_f", "kernel:nle_f", "kernel:gravity_f", "kernel:crba_f",
                "kernel:aba_f", "kernel:rnea_f_fext", "kernel:aba_f_fext", "c:rnea_c",
                "c:crba_c", "c:aba_c"):
        assert key in got["queued"], key
    assert not any(k.endswith("_batch") for k in got["queued"])
    _compare(got, want)


def test_warm_cache_loads_the_kernels_at_once():
    want = _compiled()  # (compiled here, with numba's disk cache, so on disk now)
    got = _child(os.environ.get("NUMBA_CACHE_DIR"))
    assert got["queued"] == [] and got["answered"] == [], (got["queued"], got["answered"])
    # (a single state goes through the C entry point, which readies its kernel itself; a
    # batch of 3 takes its batched kernel if that is in the cache, else its rows' kernels)
    for key in ("c:rnea_c", "c:nle_c", "c:gravity_c", "c:crba_c", "c:aba_c",
                "kernel:rnea_f_fext", "kernel:aba_f_fext"):
        assert key in got["done"], key
    _compare(got, want)


#: a module with a compiled function and its first-run job, for the compiler process
TINY = """
from numba import njit


@njit(cache=True)
def tiny(x):
    return 2.0 * x


def first_run():
    tiny(1.0)
"""

#: a first call of ``tiny`` through loop_ready on an empty cache, the compiler process's
#: work awaited, then the same call again
CYCLE = r"""
import json
import tiny_first_calls as t
from kanedyn.dynamics import first_calls
first = first_calls.loop_ready(t.tiny, (1.0,), "call:tiny_first_calls:first_run")
assert first_calls.wait(300)
after = first_calls.loop_ready(t.tiny, (1.0,), "call:tiny_first_calls:first_run")
y = t.tiny(1.0)
print(json.dumps({"first": first, "after": after, "y": y, "wanted": sorted(first_calls._wanted),
                  "hits": sum(t.tiny.stats.cache_hits.values()),
                  "misses": sum(t.tiny.stats.cache_misses.values())}))
"""


def test_the_compiler_process_fills_the_cache(tmp_path):
    """The whole cycle in a new process on an empty cache: a first call is told "not
    yet" and its job goes to the compiler process, which compiles the function into the
    disk cache; the call after that is told "yes" and loads it from there (a cache hit,
    no compilation in the process)."""
    (tmp_path / "tiny_first_calls.py").write_text(TINY)
    env = dict(os.environ, KANEDYN_FIRST_CALLS="reference",
               NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", CYCLE], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["first"] is False and got["after"] is True and got["y"] == 2.0
    assert got["hits"] == 1 and got["misses"] == 0 and got["wanted"] == []


def test_available_bookkeeping(monkeypatch):
    """The decisions of first_calls.available on stand-in jobs, without a compiler
    process: the mode "compile" readies at once; a job in the cache loads at once; any
    other is asked for (not with request=False) and looked for in the cache again only
    after LOOK_EVERY; a job whose compiler ended without it is readied here."""
    made, probed, polls, cache = [], [], [], set()
    monkeypatch.setattr(first_calls, "make", made.append)
    monkeypatch.setattr(first_calls, "in_cache", lambda k: probed.append(k) or k in cache)
    monkeypatch.setattr(first_calls, "_poll", lambda: polls.append(1))
    for name in ("_done", "_sent", "_ended"):
        monkeypatch.setattr(first_calls, name, set())
    monkeypatch.setattr(first_calls, "_wanted", {})
    monkeypatch.setattr(first_calls, "_next_look", {})
    monkeypatch.setattr(first_calls, "_mode", "compile")
    assert first_calls.available("a") and made == ["a"] and probed == []
    monkeypatch.setattr(first_calls, "_mode", "reference")
    cache.add("b")
    assert first_calls.available("b") and made[-1] == "b"
    assert not first_calls.available("c", priority=3) and first_calls._wanted == {"c": 3}
    assert len(polls) == 1
    n = len(probed)
    assert not first_calls.available("c") and len(probed) == n  # (looked just now)
    assert not first_calls.available("d", request=False) and "d" not in first_calls._wanted
    first_calls._next_look["c"] = 0.0
    cache.add("c")
    assert first_calls.available("c") and made[-1] == "c" and "c" not in first_calls._wanted
    assert first_calls.available("c") and made.count("c") == 1  # (done: no second look)
    first_calls._ended.add("e")  # its compiler ended, the cache has no "e": readied here
    assert first_calls.available("e") and made[-1] == "e"


def test_bad_mode():
    with pytest.raises(ValueError, match="expected one of reference, compile"):
        first_calls.set_mode("lazy")
    assert first_calls.mode() == "compile"
    r = subprocess.run([sys.executable, "-c", "import kanedyn"], capture_output=True, text=True,
                       env=dict(os.environ, KANEDYN_FIRST_CALLS="lazy"))
    assert r.returncode != 0 and "KANEDYN_FIRST_CALLS='lazy'" in r.stderr
    assert kd.rnea is not None


def _chain7():
    return (kd.models.pendulum_chain(7, planar=False, radius=0.05),
            0.5 * np.cos(np.arange(7)), np.linspace(-1.0, 1.0, 7))


def test_a_cold_loop_takes_the_python_steps_and_asks_for_its_first_run(cold_loop_check):
    """rk4's loop here (the Python steps call the kernels of the tests above); the other
    loops beside the tests that compare them with their Python steps (whose kernels those
    compile): tests/integrators/test_discrete_gradient_compiled.py, test_gauss_compiled.py,
    test_verlet_chart_compiled.py, tests/sim/test_rk4_manifold.py. See
    the fixture cold_loop_check of tests/conftest.py."""
    from kanedyn.sim import batch

    cold_loop_check("rk4", *_chain7(), batch.rk4_run, "first_rk4_run")


def test_a_batch_without_its_batched_kernel_goes_row_by_row(monkeypatch):
    """While a batched kernel is not there (on a cold cache), a batch runs row by row on
    the single-state kernels — the same bits as single-state calls — and asks for the
    batched kernel only when it has more than SMALL_BATCH states."""
    from kanedyn.dynamics import _dispatch

    model = kd.models.random_tree(5, seed=4, floating_base=True)
    rng = np.random.default_rng(1)
    N = _dispatch.SMALL_BATCH + 1
    Q = np.stack([kd.random_configuration(model, rng) for _ in range(N)])
    V, A = rng.standard_normal((N, model.nv)), rng.standard_normal((N, model.nv))
    F = rng.standard_normal((N, model.nb, 6))
    calls = {"rnea": lambda n: kd.rnea(model, Q[:n], V[:n], A[:n], F[:n]),
             "nle": lambda n: kd.nonlinear_effects(model, Q[:n], V[:n]),
             "crba": lambda n: kd.crba(model, Q[:n]),
             "aba": lambda n: kd.aba(model, Q[:n], V[:n], A[:n])}
    # the rows as single states (compiled single-state kernels; that they equal the
    # batched kernels' bits is tests/dynamics/test_fast_kernels.py's)
    one = {"rnea": lambda k: kd.rnea(model, Q[k], V[k], A[k], F[k]),
           "nle": lambda k: kd.nonlinear_effects(model, Q[k], V[k]),
           "crba": lambda k: kd.crba(model, Q[k]),
           "aba": lambda k: kd.aba(model, Q[k], V[k], A[k])}
    want = {name: np.stack([f(k) for k in range(N)]) for name, f in one.items()}
    real, asked = first_calls.available, []

    def no_batched(key, priority=0, request=True, **kw):
        if key.endswith("_batch"):
            asked.append((key, request))
            return False
        return real(key, priority, request, **kw)

    monkeypatch.setattr(first_calls, "available", no_batched)
    monkeypatch.setattr(first_calls, "reference", None)  # (never reached: kernels are here)
    for n in (3, N):
        for name, f in calls.items():
            np.testing.assert_array_equal(f(n), want[name][:n], err_msg=f"{name}, {n} states")
    assert {r for k, r in asked if k == "kernel:rnea_batch"} == {False, True}
    assert sorted(k for k, r in asked if r) == ["kernel:aba_batch", "kernel:crba_batch",
                                                "kernel:rnea_batch", "kernel:rnea_batch"]


class _FramesByReference:
    """``kd`` with the frame functions as :mod:`kanedyn.dynamics.frames_reference` called
    directly (a batch row by row)."""

    def __getattr__(self, name):
        from kanedyn.dynamics import frames_reference

        if not name.startswith("frame_"):
            return getattr(kd, name)
        f = getattr(frames_reference, name)

        def call(model, q, *args, **kw):
            if name == "frame_acceleration":
                kw.setdefault("classical", True)
            return _by_row(f, model, q, *args, **kw)
        return call


#: every frame function in every reference, one state and a batch of three, on a tree with
#: a free root; prints them and how many were answered by frames_reference, as JSON
FRAMES_COUNTING = r"""
import json
import numpy as np
import kanedyn as kd
from kanedyn.dynamics import frames
answered = []
_reference = frames._by_reference
def counting(*args):
    answered.append(1)
    return _reference(*args)
frames._by_reference = counting
"""
FRAMES = FRAMES_COUNTING + r"""
model = kd.models.random_tree(5, seed=6, floating_base=True)
rng = np.random.default_rng(2)
Q = np.stack([kd.random_configuration(model, rng) for _ in range(3)])
V, A = rng.standard_normal((3, model.nv)), rng.standard_normal((3, model.nv))
f = model.bodies[-1].name
out = []
for k in (0, slice(None)):
    q, v, a = Q[k], V[k], A[k]
    out += [np.concatenate([np.ravel(x) for x in kd.frame_placement(model, q, f)])]
    for r in ("local", "local_world_aligned", "world"):
        out += [kd.frame_velocity(model, q, v, f, r),
                kd.frame_acceleration(model, q, v, a, f, r),
                kd.frame_acceleration(model, q, v, a, f, r, classical=False),
                kd.frame_jacobian(model, q, f, r),
                kd.frame_jacobian_time_variation(model, q, v, f, r)]
print(json.dumps({"out": [np.ravel(x).tolist() for x in out], "answered": len(answered)}))
"""


def test_frame_functions_on_a_cold_cache_answer_by_the_reference(tmp_path):
    """The frame functions do the same as RNEA & co.: on an empty cache every call (one
    state, and each state of a batch) is answered by frames_reference, through the
    frames' own plumbing (the op codes, references, the classical flag, a batch's rows):
    the same as frames_reference called here directly (that the kernels equal
    frames_reference is tests/dynamics/test_frames.py's; nothing is compiled here)."""
    got = _child(str(tmp_path / "cache"), FRAMES)
    assert got["answered"] == 16 + 16 * 3
    ns: dict = {"kd": _FramesByReference(), "np": np, "answered": []}
    exec(FRAMES[len(FRAMES_COUNTING):].replace("print(json.dumps(", "result = (("), ns)
    want = ns["result"]["out"]
    for g, w in zip(got["out"], want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10 * max(1.0, np.abs(w).max()))
