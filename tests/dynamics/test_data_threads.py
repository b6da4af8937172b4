"""Model / Data: each thread's scratch space is its own, the Model is never written.

N threads call rnea, aba, crba and frame_jacobian on different states at once — each
with its own ``kd.Data``, and again with the default (per-thread) data — and must give
the bits of the same calls made one after another in one thread. The kernels run
without the GIL (nogil), so a shared workspace would show here as wrong bits. A Data
of another model is refused, and no algorithm writes into the Model's arrays.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.dynamics.flat import flatten

N_THREADS = 4
ITERATIONS = 150


def _states(model, n: int, seed: int):
    rng = np.random.default_rng(seed)
    q = np.array([kd.random_configuration(model, rng) for _ in range(n)])
    v = rng.standard_normal((n, model.nv))
    a = rng.standard_normal((n, model.nv))
    return q, v, a


def _calls(model, frame, q, v, a, data):
    tau = kd.rnea(model, q, v, a, data=data)
    return (tau, kd.aba(model, q, v, tau, data=data), kd.crba(model, q, data=data),
            kd.frame_jacobian(model, q, frame, "world", data=data))


def _default_calls(model, frame, q, v, a):
    # no data= at all: the path (C front end, Python fast path) a plain call takes
    tau = kd.rnea(model, q, v, a)
    return (tau, kd.aba(model, q, v, tau), kd.crba(model, q),
            kd.frame_jacobian(model, q, frame, "world"))


def _run_threads(work):
    errors: list[BaseException] = []
    start = threading.Barrier(N_THREADS)

    def target(k):
        try:
            start.wait()
            work(k)
        except BaseException as e:  # noqa: BLE001 (reported below, in the main thread)
            errors.append(e)

    threads = [threading.Thread(target=target, args=(k,)) for k in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


@pytest.mark.parametrize("robot", ["panda", "floating"])
@pytest.mark.parametrize("own_data", [True, False], ids=["own-data", "default-data"])
def test_threads_give_the_single_thread_bits(robot, own_data):
    if robot == "panda":
        model = kd.load_robot("panda")
        frame = "panda_hand_tcp"
    else:  # a floating base with quaternions, and 20 bodies (Caller releases the GIL)
        model = kd.models.random_tree(20, 3, floating_base=True)
        frame = model.body_names[-1]
    states = [_states(model, ITERATIONS, seed=k) for k in range(N_THREADS)]
    # the expected bits: every state in this thread, one after another
    expected = [[_default_calls(model, frame, q[i], v[i], a[i]) for i in range(ITERATIONS)]
                for q, v, a in states]
    got: list[list | None] = [None] * N_THREADS

    def work(k):
        q, v, a = states[k]
        data = kd.Data(model) if own_data else None
        results = []
        for i in range(ITERATIONS):
            if own_data:
                results.append(_calls(model, frame, q[i], v[i], a[i], data))
            else:
                results.append(_default_calls(model, frame, q[i], v[i], a[i]))
        got[k] = results

    _run_threads(work)
    for k in range(N_THREADS):
        for i in range(ITERATIONS):
            for name, x, y in zip(("rnea", "aba", "crba", "frame_jacobian"), got[k][i],
                                  expected[k][i], strict=True):
                assert np.array_equal(x, y), f"thread {k}, state {i}: {name} differs"


def test_default_data_is_one_per_thread():
    from kanedyn.dynamics.data import data_of

    model = kd.load_robot("panda")
    mine = data_of(model, None)
    assert data_of(model, None) is mine
    theirs = []
    t = threading.Thread(target=lambda: theirs.append(data_of(model, None)))
    t.start()
    t.join()
    assert theirs[0] is not mine and theirs[0].buf is not mine.buf
    assert theirs[0].model is model


def test_a_data_of_another_model_is_refused():
    panda = kd.load_robot("panda")
    chain = kd.models.pendulum_chain(n=3)
    d = kd.Data(chain)
    q = kd.random_configuration(panda, 0)
    z = np.zeros(panda.nv)
    calls = [
        lambda: kd.rnea(panda, q, z, z, data=d),
        lambda: kd.crba(panda, q, data=d),
        lambda: kd.aba(panda, q, z, z, data=d),
        lambda: kd.nonlinear_effects(panda, q, z, data=d),
        lambda: kd.gravity_torques(panda, q, data=d),
        lambda: kd.frame_jacobian(panda, q, "panda_hand_tcp", data=d),
        lambda: kd.frame_placement(panda, q, "panda_hand_tcp", data=d),
        lambda: kd.centroidal_momentum_matrix(panda, q, data=d),
        lambda: kd.centroidal_momentum(panda, q, z, data=d),
        lambda: kd.joint_wrenches(panda, q, z, z, data=d),
        lambda: kd.forward_kinematics(panda, q, data=d),
        lambda: kd.jacobian(panda, q, panda.body_names[-1], data=d),
        lambda: kd.kinetic_energy(panda, q, z, data=d),
        lambda: kd.center_of_mass(panda, q, data=d),
        lambda: kd.rnea_derivatives(panda, q, z, z, data=d),
        lambda: kd.aba_derivatives(panda, q, z, z, data=d),
    ]
    for call in calls:
        with pytest.raises(kd.ModelError, match=r"belongs to model .*not to model"):
            call()
    with pytest.raises(TypeError, match="data= must be a kanedyn Data"):
        kd.rnea(panda, q, z, z, data=object())
    # a batch takes the general path, which checks it all the same
    with pytest.raises(kd.ModelError, match="belongs to model"):
        kd.rnea(panda, np.stack([q, q]), z, z, data=d)


def _model_arrays(model):
    fm = flatten(model)
    arrays = [fm.data, fm.buf]
    for b in model.bodies:
        arrays += [b.inertia, b.placement.E, b.placement.r]
        if hasattr(b.joint, "axis"):
            arrays.append(np.asarray(b.joint.axis))
    return arrays


@pytest.mark.parametrize("robot", ["panda", "floating"])
def test_no_algorithm_writes_into_the_model(robot):
    model = (kd.load_robot("panda") if robot == "panda"
             else kd.models.random_tree(7, 2, floating_base=True))
    frame = "panda_hand_tcp" if robot == "panda" else model.body_names[-1]
    fm = flatten(model)
    assert not fm.buf.flags.writeable  # the template: a kernel given it would fail
    before = [x.copy() for x in _model_arrays(model)]
    q, v, a = (x[0] for x in _states(model, 1, seed=3))
    Q, V, A = _states(model, 3, seed=4)
    for data in (None, kd.Data(model)):
        for qq, vv, aa in ((q, v, a), (Q, V, A)):
            kw = {"data": data}
            kd.rnea(model, qq, vv, aa, **kw)
            kd.nonlinear_effects(model, qq, vv, **kw)
            kd.gravity_torques(model, qq, **kw)
            kd.crba(model, qq, **kw)
            kd.aba(model, qq, vv, aa, **kw)
            kd.forward_kinematics(model, qq, vv, **kw)
            kd.jacobian(model, qq, model.body_names[-1], **kw)
            kd.kinetic_energy(model, qq, vv, **kw)
            kd.potential_energy(model, qq, **kw)
            kd.spatial_momentum(model, qq, vv, **kw)
            kd.center_of_mass(model, qq, **kw)
            kd.centroidal_momentum_matrix(model, qq, **kw)
            kd.centroidal_momentum(model, qq, vv, **kw)
            kd.centroidal_momentum_bias(model, qq, vv, **kw)
            kd.joint_wrenches(model, qq, vv, aa, **kw)
            kd.frame_placement(model, qq, frame, **kw)
            kd.frame_velocity(model, qq, vv, frame, **kw)
            kd.frame_acceleration(model, qq, vv, aa, frame, **kw)
            kd.frame_jacobian(model, qq, frame, "world", **kw)
            kd.frame_jacobian_time_variation(model, qq, vv, frame, **kw)
        kd.rnea_derivatives(model, q, v, a, **kw)
        kd.aba_derivatives(model, q, v, a, **kw)
        kd.dynamics.kinetic_energy_gradient_derivative(model, q, v, **kw)
    for x, y in zip(_model_arrays(model), before, strict=True):
        assert np.array_equal(x, y)


def test_a_data_is_not_copied():
    import copy
    import pickle

    d = kd.Data(kd.load_robot("panda"))
    with pytest.raises(TypeError, match="make a new one"):
        pickle.dumps(d)
    with pytest.raises(TypeError, match="make a new one"):
        copy.deepcopy(d)


def _energy_derivatives_configuration(system, model, q, v, a):
    # ModelSystem: the energy kernel (energy, gravity torques) and the configuration
    # kernel; kd.*_derivatives: the tangent kernels of derivatives_kernel.py
    return (np.array([system.energy(q, v)]), system.gravity_torques(q),
            *kd.rnea_derivatives(model, q, v, a), *kd.aba_derivatives(model, q, v, a),
            system.integrate_configuration(q, v, 1e-2))


@pytest.mark.parametrize("robot", ["panda", "floating"])
def test_threads_on_energy_derivatives_and_configuration_give_the_single_thread_bits(robot):
    """The energy, derivative and configuration kernels (nogil) on different states in N
    threads, each with its own ModelSystem (whose result buffers are its own), give the
    bits of the same calls one after another."""
    model = (kd.load_robot("panda") if robot == "panda"
             else kd.models.random_tree(12, 3, floating_base=True))
    states = [_states(model, 40, seed=10 + k) for k in range(N_THREADS)]
    one = kd.ModelSystem(model)
    expected = [[_energy_derivatives_configuration(one, model, q[i], v[i], a[i])
                 for i in range(len(q))] for q, v, a in states]
    got: list[list | None] = [None] * N_THREADS

    def work(k):
        system = kd.ModelSystem(model)
        q, v, a = states[k]
        got[k] = [_energy_derivatives_configuration(system, model, q[i], v[i], a[i])
                  for i in range(len(q))]

    _run_threads(work)
    names = ("energy", "gravity_torques", "rnea dq", "rnea dv", "aba dq", "aba dv",
             "integrate_configuration")
    for k in range(N_THREADS):
        for i, (x, y) in enumerate(zip(got[k], expected[k], strict=True)):
            for name, a, b in zip(names, x, y, strict=True):
                assert np.array_equal(a, b), f"thread {k}, state {i}: {name} differs"


def test_threads_running_batches_and_single_runs_give_the_single_thread_bits():
    """simulate_batch (prange over runs inside, nogil) and kd.simulate's compiled rk4 in
    N threads at once, on different initial states, give the single-thread bits."""
    model = kd.models.pendulum_chain(5, planar=False)
    forces = [kd.forces.JointDamper("joint1", 0.2), kd.forces.JointSpring("joint3", 1.5, 0.1)]
    rng = np.random.default_rng(5)
    starts = [(rng.uniform(-1, 1, (3, 5)), rng.normal(size=(3, 5))) for _ in range(N_THREADS)]

    def runs(Q0, V0):
        b = kd.simulate_batch(model, Q0, V0, 0.05, dt=1e-3, forces=forces, save_every=5)
        s = kd.simulate(model, Q0[0], V0[0], 0.05, method="rk4", dt=1e-3, forces=forces,
                        progress=False, save_every=5)
        return b.q, b.v, b.energy, b.work_nc, s.q, s.v, s.work_nc

    expected = [runs(Q0, V0) for Q0, V0 in starts]
    got: list[tuple | None] = [None] * N_THREADS

    def work(k):
        got[k] = runs(*starts[k])

    _run_threads(work)
    for k in range(N_THREADS):
        for name, x, y in zip(("batch q", "batch v", "batch energy", "batch work_nc",
                               "single q", "single v", "single work_nc"), got[k], expected[k],
                              strict=True):
            assert np.array_equal(x, y), f"thread {k}: {name} differs"
    # the single run is the batch's first run, to the bit (one compiled loop)
    assert np.array_equal(expected[0][4], expected[0][0][0])


def test_the_compiled_loops_and_kernels_release_the_gil():
    """Every numba function of the energy, derivative and configuration kernels, of the
    compiled integrator loops and of the batch is compiled with nogil=True: else a thread
    pool over them would run one at a time."""
    import importlib

    from numba.core.dispatcher import Dispatcher

    modules = ("kanedyn.dynamics.energy_kernel", "kanedyn.dynamics.derivatives_kernel",
               "kanedyn.sim.configuration_kernel", "kanedyn.integrators.rk4_compiled",
               "kanedyn.integrators.discrete_gradient_compiled", "kanedyn.sim.batch",
               "kanedyn.constraints.system_kernel", "kanedyn.integrators.radau_compiled",
               "kanedyn.integrators.kane_compiled")
    seen = 0
    for name in modules:
        mod = importlib.import_module(name)
        for attr, f in vars(mod).items():
            if isinstance(f, Dispatcher) and f.py_func.__module__ == name:
                seen += 1
                assert f.targetoptions.get("nogil") is True, f"{name}.{attr} holds the GIL"
    assert seen >= 30  # (the modules' kernels are there to be checked)
