"""The C fast path in front of kd.rnea, kd.crba, kd.aba, kd.nonlinear_effects and
kd.gravity_torques (src/kanedyn/dynamics/_fastcall.c).

It must be invisible: the same bits as the Python wrapper behind it (which the
other dynamics tests check against the readable reference), the same errors for
bad input, every call it does not take handed on unchanged, and no reference
leaked on any path.
"""

from __future__ import annotations

import copy
import inspect
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.dynamics import reference as ref
from kanedyn.dynamics.flat import HOT

ALL_JOINTS = ("revolute", "prismatic", "helical", "spherical", "planar", "free")
PUBLIC = ("rnea", "crba", "aba", "nonlinear_effects", "gravity_torques")


def state(model, seed):
    rng = np.random.default_rng(seed)
    q = kd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    return q, v, a


def calls(model, q, v, a):
    """(public function, its arguments) for each algorithm with a fast path."""
    return [(kd.rnea, (model, q, v, a)), (kd.crba, (model, q)), (kd.aba, (model, q, v, a)),
            (kd.nonlinear_effects, (model, q, v)), (kd.gravity_torques, (model, q))]


def test_the_extension_is_built_and_in_front():
    """`make test` builds the extension (setup.py); were it missing, every single-state
    call would silently take the slower Python path."""
    from kanedyn.dynamics._fastcall import Caller

    for name in PUBLIC:
        f = getattr(kd, name)
        assert isinstance(f, Caller), name
        assert inspect.isfunction(f.__wrapped__) and f.__wrapped__.__name__ == name
        assert f.__name__ == name and f.__doc__ == f.__wrapped__.__doc__
        assert inspect.signature(f) == inspect.signature(f.__wrapped__)
        assert pickle.loads(pickle.dumps(f)) is f  # by reference, as a function


@pytest.mark.parametrize("seed", range(4))
def test_same_bits_as_the_python_wrapper(seed):
    model = kd.models.random_tree(9, seed, floating_base=seed % 2 == 1, joint_types=ALL_JOINTS)
    q, v, a = state(model, seed)
    for f, args in calls(model, q, v, a):
        fast = f(*args)
        np.testing.assert_array_equal(fast, f.__wrapped__(*args))
        out = np.full_like(fast, np.nan)
        assert f(*args, out=out) is out
        np.testing.assert_array_equal(out, fast)
    np.testing.assert_allclose(kd.crba(model, q), ref.crba(model, q), rtol=1e-12, atol=1e-12)


def test_calls_it_does_not_take_reach_the_wrapper():
    model = kd.models.random_tree(5, 3, floating_base=True)
    q, v, a = state(model, 3)
    f_ext = np.random.default_rng(3).normal(size=(model.nb, 6))
    tau = kd.rnea(model, q, v, a)
    with_f = ref.rnea(model, q, v, a, f_ext)
    np.testing.assert_allclose(kd.rnea(model, q, v, a, f_ext), with_f, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kd.rnea(model, q, v, a, f_ext=f_ext), with_f, rtol=1e-12,
                               atol=1e-12)
    for f, args in ((kd.rnea, (model, q, v, a)), (kd.aba, (model, q, v, tau))):
        expect = f.__wrapped__(*args)  # f_ext=None, by position or by name: taken in C
        np.testing.assert_array_equal(f(*args, None), expect)
        np.testing.assert_array_equal(f(*args, f_ext=None, out=np.empty(model.nv)), expect)
        with pytest.raises(TypeError):
            f(*args, None, f_ext=None)
    with pytest.raises(TypeError):
        kd.crba(model, q, None)  # crba has no f_ext
    Mf = np.zeros((model.nv, model.nv), order="F")  # out of another layout: written all the same
    assert kd.crba(model, q, out=Mf) is Mf
    np.testing.assert_array_equal(Mf, kd.crba(model, q))
    with pytest.raises(kd.StateError, match="out"):
        kd.crba(model, q, out=np.empty((model.nv, model.nv + 1)))
    with pytest.raises(kd.StateError, match="out"):
        kd.rnea(model, q, v, a, out=np.empty(model.nv, dtype=np.float32))
    with pytest.raises(TypeError):
        kd.rnea(model, q, v, a, outt=np.empty(model.nv))  # a misspelt keyword
    with pytest.raises(TypeError):
        kd.crba(model)
    with pytest.raises(kd.ModelError):
        kd.crba("not a model", q)
    fresh = copy.deepcopy(model)  # its flat form is built on the first call
    np.testing.assert_array_equal(kd.aba(fresh, q, v, a), kd.aba(model, q, v, a))


def test_a_kernel_that_says_no_raises_the_wrappers_error():
    """A non-unit quaternion, a NaN, an overflow: the kernel's status sends the call to
    the wrapper, which names the culprit (and no partial result is returned)."""
    model = kd.models.random_tree(4, 0, floating_base=True)
    q, v, a = state(model, 0)
    bad = q.copy()
    bad[3:7] *= 1.01
    nan = q.copy()
    nan[-1] = np.nan
    for f, args in calls(model, bad, v, a):
        with pytest.raises(kd.StateError, match="joint0"):
            f(*args)
    for f, args in calls(model, nan, v, a):
        with pytest.raises(kd.StateError, match="NaN"):
            f(*args)


def test_no_reference_is_leaked():
    model = kd.models.random_tree(4, 1, floating_base=True)
    q, v, a = state(model, 1)
    bad = q.copy()
    bad[3:7] *= 1.01
    out, M = np.empty(model.nv), np.empty((model.nv, model.nv))

    def run(n):
        for _ in range(n):
            kd.rnea(model, q, v, a)
            kd.rnea(model, q, v, a, out=out)
            kd.rnea(model, q.tolist(), v, a)  # handed to the wrapper
            for kw in ({}, {"out": M}):
                try:
                    kd.crba(model, bad, **kw)  # the kernel says no
                except kd.StateError:
                    pass

    run(10)
    objects = (model, getattr(model, HOT), q, v, a, bad, out, M)
    before = [sys.getrefcount(x) for x in objects]
    run(1000)
    assert [sys.getrefcount(x) for x in objects] == before


def test_kanedyn_no_c_turns_it_off():
    """KANEDYN_NO_C=1: the public functions are the Python wrappers themselves."""
    code = ("import inspect, kanedyn as kd; "
            f"print(all(inspect.isfunction(getattr(kd, n)) for n in {PUBLIC!r}))")
    env = dict(os.environ, KANEDYN_NO_C="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       check=True)
    assert r.stdout.strip() == "True"


def test_which_calls_the_c_path_takes():
    """A Caller with a recording stand-in for the wrapper: the calls it answers itself
    give RNEA's τ; every other call reaches the stand-in with its arguments untouched."""
    from kanedyn.dynamics._fastcall import Caller

    from kanedyn.dynamics import kernels

    seen = []

    def wrapper(*args, **kwargs):
        seen.append((args, kwargs))
        return "wrapper"

    f = Caller(wrapper, lambda: kernels.c_entry("rnea_c"), "qvv", (-1,), fext=True)
    model = kd.models.random_tree(4, 5, floating_base=True)
    q, v, a = state(model, 5)
    tau = kd.rnea.__wrapped__(model, q, v, a)
    out = np.empty(model.nv)
    for args, kwargs in [((model, q, v, a), {}), ((model, q, v, a, None), {}),
                         ((model, q, v, a), {"f_ext": None}), ((model, q, v, a), {"out": out}),
                         ((model, q, v, a), {"out": None, "f_ext": None})]:
        r = f(*args, **kwargs)
        assert isinstance(r, np.ndarray), (args[4:], kwargs)
        np.testing.assert_array_equal(r, tau)
    assert seen == []
    ro = out.copy()
    ro.flags.writeable = False
    handed = [((model, q.tolist(), v, a), {}), ((model, q, v, a.astype(np.float32)), {}),
              ((model, q, np.repeat(v, 2)[::2], a), {}), ((model, q[:-1], v, a), {}),
              ((model, q, v[None], a), {}), ((model, q, v, a, np.zeros((model.nb, 6))), {}),
              ((model, q, v, a), {"f_ext": np.zeros((model.nb, 6))}),
              ((model, q, v, a, None), {"f_ext": None}), ((model, q, v, a), {"out": ro}),
              ((model, q, v, a), {"out": np.empty(model.nv + 1)}), ((model, q, v), {}),
              ((model, q, v, a), {"other": 1}), (("not a model", q, v, a), {})]
    for args, kwargs in handed:
        assert f(*args, **kwargs) == "wrapper"
        assert all(x is y for x, y in zip(seen[-1][0], args, strict=True))
        assert seen[-1][1].keys() == kwargs.keys()
    assert len(seen) == len(handed)


def test_every_entry_with_a_c_kernel_has_the_c_path_in_front():
    """The C front end is made from the entry-point table: every public function whose
    entry names a C kernel is a Caller, and the shape it allocates is the table's."""
    from kanedyn.dynamics._fastcall import Caller

    from kanedyn.dynamics.kernels import ENTRIES

    model = kd.models.random_tree(5, 2, floating_base=True)
    q, v, a = state(model, 2)
    args = {"q": q, "v": v, "a": a, "tau": a}
    with_c = [e for e in ENTRIES.values() if e.c]
    assert {e.name for e in with_c} >= set(PUBLIC)
    for e in with_c:
        f = getattr(kd, e.name)
        assert isinstance(f, Caller), e.name
        r = f(model, *(args[n] for n in e.inputs))
        assert r.shape == e.result_shape(model.nv, model.nb), e.name
        np.testing.assert_array_equal(r, f.__wrapped__(model, *(args[n] for n in e.inputs)))


def test_a_caller_refuses_a_row_it_cannot_serve():
    """Caller(fallback, loader, inputs, result): each state 'q' or 'v', one to four of them,
    a result of one or two dimensions, each a size or -1 (nv), -2 (nb) or -3 (10 nb, the
    joint torque regressor's columns)."""
    from kanedyn.dynamics._fastcall import Caller

    def w(*a, **k):
        return None

    def loader():
        return 0

    for inputs, result, word in [("", (-1,), "state arrays"), ("qvvvv", (-1,), "state arrays"),
                                 ("qx", (-1,), "'q' or 'v'"), ("q", (), "dimensions"),
                                 ("q", (6, 6, 6), "dimensions"), ("q", (-4,), "size >= 0")]:
        with pytest.raises(ValueError, match=word):
            Caller(w, loader, inputs, result)
    Caller(w, loader, "qvv", (-1, -3))  # (identify/regressor.py's)
    with pytest.raises(TypeError):
        Caller(w, loader, 3, (-1,))  # the former signature (nin, matrix, ...): refused
    with pytest.raises(TypeError, match="callable"):
        Caller(w, None, "q", (-1,))
