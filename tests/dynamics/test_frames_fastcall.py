"""The C fast path in front of the frame functions (``FrameCaller`` of
src/kanedyn/dynamics/_fastcall.c, set up in kanedyn.dynamics.frames).

As for kd.rnea and the others (test_fastcall.py) it must be invisible: the same bits
as the Python wrapper behind it (which test_frames.py checks against Pinocchio, finite
differences and the numpy reference), for every function and reference, by position
and by name; the same error, word for word, for every bad input; every call it does
not take handed on unchanged; and no reference leaked.
"""

from __future__ import annotations

import copy
import functools
import gc
import inspect
import pickle
import sys
import weakref

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.dynamics import frames
from kanedyn.spatial import quat_to_matrix

REFS = ("local", "local_world_aligned", "world")
NAMES = ("frame_placement", "frame_velocity", "frame_acceleration", "frame_jacobian",
         "frame_jacobian_time_variation")
#: (states, what FrameCaller returns, its op tables): as frames.py sets each one up
FRONTS = {
    "frame_placement": (1, frames._POSE_RESULT, {"local": frames.POSE}, None),
    "frame_velocity": (2, frames._VECTOR_RESULT, frames._VEL_OPS, None),
    "frame_acceleration": (3, frames._VECTOR_RESULT, frames._CACC_OPS, frames._ACC_OPS),
    "frame_jacobian": (1, frames._MATRIX_RESULT, frames._JAC_OPS, None),
    "frame_jacobian_time_variation": (2, frames._MATRIX_RESULT, frames._DJAC_OPS, None),
}


def _model(seed=0, floating=True):
    m = kd.models.random_tree(7, seed, floating_base=floating,
                              joint_types=("revolute", "prismatic", "helical", "spherical",
                                           "planar"))
    rng = np.random.default_rng(seed)
    qr = rng.normal(size=4)
    m = m.add_frame("sensor", m.body_names[-1],
                    (quat_to_matrix(qr / np.linalg.norm(qr)), rng.normal(size=3)))
    return m


def _state(model, seed):
    rng = np.random.default_rng(seed)
    q = kd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    return q, v, a


def _variants(model, q, v, a, frame):
    """(function name, args, kwargs) of every function, reference and spelling: the
    optional parameters left out, by position and by name."""
    states = {1: (q,), 2: (q, v), 3: (q, v, a)}
    out = [("frame_placement", (model, q, frame), {}),
           ("frame_placement", (model, q), {"frame": frame})]
    for name in NAMES[1:]:
        x = (model, *states[FRONTS[name][0]])
        out.append((name, (*x, frame), {}))
        out.append((name, x, {"frame": frame}))
        for r in REFS:
            out.append((name, (*x, frame, r), {}))
            out.append((name, (*x, frame), {"reference": r}))
            out.append((name, x, {"reference": r, "frame": frame}))
            if name == "frame_acceleration":
                for c in (True, False):
                    out.append((name, (*x, frame, r, c), {}))
                    out.append((name, (*x, frame), {"reference": r, "classical": c}))
                    out.append((name, (*x, frame, r), {"classical": c}))
    return out


def _same(x, y):
    if isinstance(y, tuple):
        assert isinstance(x, tuple) and len(x) == len(y)
        for a, b in zip(x, y, strict=True):
            _same(a, b)
    else:
        assert type(x) is np.ndarray and x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


def _outcome(f, args, kwargs):
    """The result, or (type, message) of the error."""
    try:
        return f(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the error itself is what is compared
        return type(e), str(e)


def _stand_in(name):
    """A FrameCaller set up as frames.py sets up ``name``, in front of a recorder with
    the wrapper's signature instead of the wrapper: what reaches the recorder is what
    the C path did not take."""
    seen = []

    @functools.wraps(getattr(kd, name).__wrapped__)
    def recorder(*args, **kwargs):
        seen.append((args, kwargs))
        return "wrapper"

    return frames._c_front(recorder, *FRONTS[name]), seen


def test_the_frame_functions_are_behind_the_c_path():
    from kanedyn.dynamics._fastcall import FrameCaller

    for name in NAMES:
        f = getattr(kd, name)
        assert isinstance(f, FrameCaller), name
        assert inspect.isfunction(f.__wrapped__) and f.__wrapped__.__name__ == name
        assert f.__name__ == name and f.__doc__ == f.__wrapped__.__doc__
        assert inspect.signature(f) == inspect.signature(f.__wrapped__)
        assert pickle.loads(pickle.dumps(f)) is f


@pytest.mark.parametrize("seed, floating", [(0, True), (1, False)])
def test_same_bits_as_the_python_path(seed, floating):
    """Every function, reference and spelling: the C path (frame cached), the Python
    wrapper behind it, and a copy of the model whose frames are not cached yet (whose
    first call goes through the wrapper's general path) agree bit for bit; and each of
    those calls is one the C path answers itself (a stand-in wrapper sees none)."""
    model = _model(seed, floating)
    q, v, a = _state(model, seed)
    for frame in ("sensor", model.body_names[2], model.root_name):
        for name, args, kwargs in _variants(model, q, v, a, frame):
            f = getattr(kd, name)
            expect = f.__wrapped__(*args, **kwargs)
            fresh = copy.deepcopy(model)
            _same(f(fresh, *args[1:], **kwargs), expect)  # (not cached: the wrapper)
            _same(f(*args, **kwargs), expect)  # (cached now: C)
            stand_in, seen = _stand_in(name)
            _same(stand_in(*args, **kwargs), expect)
            assert seen == [], (name, args[1:], kwargs)
    R, p = kd.frame_placement(model, q, "sensor")
    assert R.shape == (3, 3) and p.shape == (3,) and R.flags.writeable and p.flags.writeable
    assert R.base is p.base and R.base.shape == (12,)  # views of one array, as the wrapper's


def test_calls_it_does_not_take_reach_the_wrapper_unchanged():
    model = _model(2)
    q, v, a = _state(model, 2)
    kd.frame_jacobian(model, q, "sensor")  # cached
    for name in NAMES:
        nin = FRONTS[name][0]
        x = (q, v, a)[:nin]
        stand_in, seen = _stand_in(name)
        handed = [
            ((model, *x, "nowhere"), {}),  # not cached (unknown)
            ((model, *x, ["sensor"]), {}),  # unhashable
            ((model, q.tolist(), *x[1:], "sensor"), {}),
            ((model, q.astype(np.float32), *x[1:], "sensor"), {}),
            ((model, np.repeat(q, 2)[::2], *x[1:], "sensor"), {}),
            ((model, q[:-1], *x[1:], "sensor"), {}),
            ((model, q[None], *x[1:], "sensor"), {}),
            ((model, *x), {}),  # no frame
            ((model, *x, "sensor"), {"frame": "sensor"}),  # twice
            ((model, *x, "sensor"), {"other": 1}),
            ((model, *x), {"q": q, "frame": "sensor"}),
            (("not a model", *x, "sensor"), {}),
        ]
        if nin > 1:
            handed += [((model, q, v[:-1], *x[2:], "sensor"), {}),
                       ((model, q, v.astype(np.float32), *x[2:], "sensor"), {})]
        if name != "frame_placement":
            handed += [((model, *x, "sensor", "body"), {}), ((model, *x, "sensor"),
                                                              {"reference": 3}),
                       ((model, *x, "sensor"), {"reference": ["local"]}),
                       ((model, *x, "sensor", "local"), {"reference": "local"})]
        else:
            handed += [((model, *x, "sensor", "local"), {}),
                       ((model, *x, "sensor"), {"reference": "local"})]
        if name == "frame_acceleration":
            handed += [((model, *x, "sensor", "local", 1), {}),
                       ((model, *x, "sensor"), {"classical": np.bool_(False)}),
                       ((model, *x, "sensor", "local", True, 1), {})]
        for args, kwargs in handed:
            assert stand_in(*args, **kwargs) == "wrapper"
            assert all(x is y for x, y in zip(seen[-1][0], args, strict=True))
            assert seen[-1][1].keys() == kwargs.keys()
            assert all(seen[-1][1][k] is kwargs[k] for k in kwargs)
        assert len(seen) == len(handed)


def _bad_inputs(model, q, v, a):
    """(name, args, kwargs, error, message pattern) of bad calls on a cached frame."""
    bad_quat = q.copy()
    bad_quat[3:7] *= 1.01
    nan = q.copy()
    nan[-1] = np.nan
    huge = np.full_like(v, 1e308)  # finite speeds whose products overflow
    out = []
    for name in NAMES:
        x = (q, v, a)[:FRONTS[name][0]]
        out += [
            (name, (model, *x, "tcp"), {}, kd.ModelError, "no frame or body named 'tcp'"),
            (name, (model, q[:-1], *x[1:], "sensor"), {}, kd.StateError, "q"),
            (name, (model, bad_quat, *x[1:], "sensor"), {}, kd.StateError, "quaternion"),
            (name, (model, nan, *x[1:], "sensor"), {}, kd.StateError, "NaN|not finite"),
            (name, (model, *x, "sensor"), {"other": 1}, TypeError, "other"),
        ]
        if name == "frame_jacobian_time_variation" or name == "frame_velocity":
            out.append((name, (model, q, huge, "sensor"), {}, kd.StateError,
                        "not finite for finite input"))
        if len(x) > 1:
            out += [(name, (model, q, v[:-1], *x[2:], "sensor"), {}, kd.StateError, "v"),
                    (name, (model, q, None, *x[2:], "sensor"), {}, kd.StateError, "v")]
        if name != "frame_placement":
            out += [(name, (model, *x, "sensor", "body"), {}, kd.KanedynError,
                     "unknown reference 'body'"),
                    (name, (model, *x, "sensor"), {"reference": "LOCAL"}, kd.KanedynError,
                     "unknown reference 'LOCAL'")]
    return out


def test_bad_input_gives_the_wrappers_error():
    """Each bad call raises what the Python wrapper raises, word for word, whether or not
    the frame is cached (the C path hands it on, or its kernel says no first)."""
    model = _model(3)
    q, v, a = _state(model, 3)
    for name, args, kwargs, error, pattern in _bad_inputs(model, q, v, a):
        f = getattr(kd, name)
        kd.frame_placement(model, q, "sensor")  # the frame is cached (for every function)
        with pytest.raises(error, match=pattern) as e:
            f(*args, **kwargs)
        assert _outcome(f.__wrapped__, args, kwargs) == (error, str(e.value))
        fresh = copy.deepcopy(model)
        assert _outcome(f, (fresh, *args[1:]), kwargs) == (error, str(e.value))


def test_other_inputs_the_wrapper_takes_give_the_same_result():
    """What the C path hands on and the wrapper accepts: a list, another dtype, strides,
    a batch, a truth value for classical that is not a bool."""
    model = _model(4)
    q, v, a = _state(model, 4)
    Q = np.array([q, kd.random_configuration(model, np.random.default_rng(5))])
    for name in NAMES:
        f = getattr(kd, name)
        x = (q, v, a)[:FRONTS[name][0]]
        expect = f(model, *x, "sensor")
        _same(f(model, q.tolist(), *x[1:], "sensor"), expect)
        _same(f(model, np.repeat(q, 2)[::2], *x[1:], "sensor"), expect)
        if len(x) > 1:
            _same(f(model, q, v.astype(np.float32).astype(np.float64), *x[2:], "sensor"),
                  f.__wrapped__(model, q, v.astype(np.float32), *x[2:], "sensor"))
        batch = f(model, Q, *x[1:], "sensor")
        first = batch[0][0] if name == "frame_placement" else batch[0]
        _same(first, expect[0] if name == "frame_placement" else expect)
    for flag in (0, 1, np.bool_(False), np.bool_(True)):
        _same(kd.frame_acceleration(model, q, v, a, "sensor", "world", flag),
              kd.frame_acceleration(model, q, v, a, "sensor", "world", bool(flag)))


def test_no_reference_is_leaked():
    """1e5 calls of each function on the C path, and a thousand handed on or refused:
    the reference counts of the model, the frame name, its cached array, the states and
    the tables do not move, and a pose's two views free their array."""
    # a name of its own (not the interned "sensor" that other tests' models, collected
    # at any time, hold too), on a model of its own
    name = "".join(["leak", "_probe"])
    model = _model(5)
    model = model.add_frame(name, "sensor", (np.eye(3), np.ones(3)))
    world, local = "".join(["wor", "ld"]), "".join(["lo", "cal"])  # equal, not identical
    q, v, a = _state(model, 5)
    bad = q.copy()
    bad[3:7] *= 1.01
    kd.frame_acceleration(model, q, v, a, name)  # cached
    P = getattr(model, frames.ATTR)[name][0]

    def run(n, k):
        for _ in range(n):
            kd.frame_placement(model, q, name)
            kd.frame_velocity(model, q, v, name, world)
            kd.frame_acceleration(model, q, v, a, name, reference="local_world_aligned",
                                  classical=False)
            kd.frame_jacobian(model, q, name, reference=local)
            kd.frame_jacobian_time_variation(model, q, v, name)
        for _ in range(k):
            kd.frame_jacobian(model, q.tolist(), name)  # handed on
            for f, args in ((kd.frame_jacobian, (model, bad, name)),  # the kernel says no
                            (kd.frame_velocity, (model, q, v, name, "body"))):
                try:
                    f(*args)
                except kd.KanedynError:
                    pass

    run(10, 10)
    gc.collect()
    objects = (model, name, P, getattr(model, frames.ATTR), q, v, a, bad, frames._VEL_OPS,
               frames._ACC_OPS, world, local)
    before = [sys.getrefcount(x) for x in objects]
    run(100_000, 1000)
    gc.collect()
    assert [sys.getrefcount(x) for x in objects] == before
    R, p = kd.frame_placement(model, q, name)
    base = weakref.ref(R.base)
    del R, p
    assert base() is None


def test_without_the_extension_the_wrappers_do_the_work(monkeypatch):
    """_c_front without the extension (no C compiler at install) or with KANEDYN_NO_C=1
    gives the wrapper itself."""
    w = kd.frame_jacobian.__wrapped__
    monkeypatch.setenv("KANEDYN_NO_C", "1")
    assert frames._c_front(w, *FRONTS["frame_jacobian"]) is w
    monkeypatch.delenv("KANEDYN_NO_C")
    monkeypatch.setitem(sys.modules, "kanedyn.dynamics._fastcall", None)  # import fails
    assert frames._c_front(w, *FRONTS["frame_jacobian"]) is w
