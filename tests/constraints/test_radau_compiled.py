"""The compiled constraint primitives and the compiled Radau IIA loop against their
Python references (kanedyn.constraints.*, kanedyn.integrators.radau.radau5), against
differentiation, and against the published Andrews reference."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn import ConstraintError, SolverError
from kanedyn.constraints import (
    ConstrainedSystem,
    LoopClosure,
    UserConstraint,
    VelocityConstraint,
    problems,
)
from kanedyn.constraints.consistent import consistent_initial_values
from kanedyn.constraints.mechanisms import four_bar_configuration, four_bar_system
from kanedyn.constraints.system_kernel import primitives, workspace_size
from kanedyn.spatial import axis_angle


def compiled(system, q, v):
    """(M, f, g, G, γ) of the compiled primitives at one state."""
    form = system.compiled_form()
    nv, nc = system.nv, system.nc
    M, f, g, G, gam = (np.empty((nv, nv)), np.empty(nv), np.empty(nc), np.empty((nc, nv)),
                       np.empty(nc))
    ws = np.full(workspace_size(form.data, nv), np.nan)  # nothing read before written
    assert primitives(form.kind, form.params, form.data, q, v, True, True, M, f, g, G, gam,
                      ws) == 0
    return M, f, g, G, gam


def reference(system):
    """The system with its readable Python rows (loops.loop_rows) for a Model."""
    if isinstance(system, ConstrainedSystem):
        return ConstrainedSystem(system.model, system.constraints,
                                 system.velocity_constraints, system.tau, compiled=False)
    return system


def python(system, q, v):
    system = reference(system)
    return (system.mass_matrix(q), system.applied_forces(0.0, q, v), system.constraint(0.0, q),
            system.constraint_matrix(0.0, q), system.gamma(0.0, q, v))


def spatial_loop(kind):
    """A 3D tree of four revolute joints about random axes, bodies 1 and 3 closed by a
    loop of ``kind`` with an inclined frame on side a (as tests/constraints/test_loops)."""
    model = kd.models.random_tree(4, seed=3, joint_types=("revolute",))
    rng = np.random.default_rng(0)
    Ra = axis_angle(rng.normal(size=3), 0.7)
    lc = LoopClosure(1, 3, kind, frame_a=(Ra, (0.1, -0.2, 0.3)),
                     frame_b=(np.eye(3), (0.2, 0.1, 0.0)), name="cut")
    return ConstrainedSystem(model, [lc])


SYSTEMS = {
    "andrews": lambda: problems.andrews().system,
    "four_bar": four_bar_system,
    "point": lambda: spatial_loop("point"),
    "revolute": lambda: spatial_loop("revolute"),
    "weld": lambda: spatial_loop("weld"),
}


@pytest.mark.parametrize("name", list(SYSTEMS))
def test_compiled_primitives_equal_python_and_differentiation(name):
    """M, f, g, G, γ compiled = the Python methods to round-off (the same formulas, sums
    in another order: 1e-12 relative to the entries' scale), and independently G = ∂g/∂q
    and γ = −(∂(G v)/∂q) v by central differences (step 1e-6: truncation ~1e-12 times
    the third derivatives, round-off ~1e-10 relative; tolerance 1e-7 relative)."""
    system = SYSTEMS[name]()
    rng = np.random.default_rng(11)
    q0 = problems.ANDREWS_Q0 if name == "andrews" else np.zeros(system.nq)
    for _ in range(3):
        q = q0 + 0.3 * rng.normal(size=system.nq)
        v = (50.0 if name == "andrews" else 1.0) * rng.normal(size=system.nv)
        for c, p, what in zip(compiled(system, q, v), python(system, q, v),
                              ("M", "f", "g", "G", "gamma"), strict=True):
            np.testing.assert_allclose(c, p, rtol=1e-12, atol=1e-12 * np.abs(p).max(),
                                       err_msg=what)
        _, _, _, G, gam = compiled(system, q, v)
        h = 1e-6
        E = np.eye(system.nq)
        dg = np.array([(compiled(system, q + h * E[j], v)[2]
                        - compiled(system, q - h * E[j], v)[2]) / (2 * h)
                       for j in range(system.nq)]).T
        np.testing.assert_allclose(G, dg, atol=1e-7 * np.abs(G).max())
        dGv = (compiled(system, q + h * v, v)[3] - compiled(system, q - h * v, v)[3]) @ v
        np.testing.assert_allclose(gam, -dGv / (2 * h), atol=1e-7 * np.abs(gam).max())


def test_model_system_rows_compiled_equal_python_in_any_mix():
    """A ConstrainedSystem's own g, C = [G; A] and γ come from the compiled loop rows; with
    a user constraint between two loop closures and a velocity row after them, every row
    lands where the Python rows put it (equal to round-off), for one state and a batch."""
    model = kd.models.random_tree(4, seed=3, joint_types=("revolute",))
    rng = np.random.default_rng(2)
    loops = [LoopClosure(1, 3, "revolute", frame_a=(axis_angle(rng.normal(size=3), 0.4),
                                                    (0.1, 0.0, 0.2)), name="a"),
             LoopClosure(None, 2, "point", axes=(0, 2), name="b")]
    user = UserConstraint(lambda q: np.array([q[0] * q[3]]),
                          lambda q: np.array([[q[3], 0.0, 0.0, q[0]]]), 1,
                          lambda q, v: np.array([-2.0 * v[0] * v[3]]), name="u")
    vel = VelocityConstraint(lambda q: np.array([[1.0, np.cos(q[1]), 0.0, 0.0]]), 1,
                             gamma=lambda q, v: np.array([np.sin(q[1]) * v[1] * v[1]]),
                             name="w")
    comp = ConstrainedSystem(model, [loops[0], user, loops[1]], [vel])
    ref = ConstrainedSystem(model, [loops[0], user, loops[1]], [vel], compiled=False)
    Q, V = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    for q, v in ((Q[0], V[0]), (Q, V)):
        for what in ("constraint", "constraint_matrix"):
            np.testing.assert_allclose(getattr(comp, what)(0.0, q), getattr(ref, what)(0.0, q),
                                       rtol=1e-12, atol=1e-13, err_msg=what)
        np.testing.assert_allclose(comp.gamma(0.0, q, v), ref.gamma(0.0, q, v), rtol=1e-12,
                                   atol=1e-12)
    assert comp.compiled_form() is None  # velocity rows: radau5 takes the Python loop


def same_run(prob, formulation, tol, t_final):
    """Compiled radau5 on one problem, and the Python loop on the Python rows."""
    return [kd.simulate(system, prob.q0, prob.v0, t_final, method="radau5",
                        formulation=formulation, rtol=tol, atol=tol, compiled=c)
            for system, c in ((prob.system, True), (reference(prob.system), False))]


@pytest.mark.parametrize("case", [("andrews", "index3", 1e-8), ("andrews", "ggl", 1e-6),
                                  ("andrews", "baumgarte", 1e-6),
                                  ("four_bar", "index3", 1e-7)])
def test_compiled_radau5_takes_the_python_steps(case):
    """The compiled loop is the Python algorithm with the residual's sums and the LU in
    another order, so the two agree to the tolerances the algorithm itself leaves open:

    - Both Newton iterations stop once the estimated remaining error is below fnewt in
      the scaled norm of the error test (sc_i = atol + rtol |y_i|, divided by h and h²
      for index 2 and 3): one step's stage values differ by ≲ 2 fnewt·sc.
    - The error estimate is a linear map of the stage values of norm O(1) in that scaled
      norm, so it differs by Δerr = O(fnewt) too, and the next step size, h ∝ err^(-1/4),
      by a relative ¼ Δerr/err. Where the controller is not clamped at its growth limit
      8 (where both runs take the same h), err ≳ 1e-4, so at tol 1e-8 (fnewt = 1e-5) a
      step's size may differ by up to a few 1e-2; the controller contracts (err grows
      like h⁴: a longer step is followed by a shorter one), so this does not accumulate.
      Measured (Andrews, index 3, tol 1e-8): step times within 1.3e-3 relative with
      OpenBLAS's default threads, within 2.3e-2 with one BLAS thread (``make test``'s
      setting: the reference's LU and products round otherwise), at the first steps after
      the start, where err is smallest.
    - At t_final (reached exactly by both) the positions differ by the accumulated Newton
      differences, ≤ N·2 fnewt·sc over N steps of a non-expanding flow; the different
      step sizes change the local errors (∝ h⁶) by a relative 6·O(fnewt), far below that.

    Asserted: the same numbers of accepted and rejected steps and Newton failures, step
    times within 5e-2 relative (the "few 1e-2" above), positions at t_final within
    20 N fnewt (atol + rtol |q|) (a factor 10 to spare)."""
    from kanedyn.integrators.radau import _internal_tolerances

    name, formulation, tol = case
    prob = problems.andrews() if name == "andrews" else problems.four_bar()
    t_final = prob.t_final if name == "andrews" else 0.5
    comp, ref = same_run(prob, formulation, tol, t_final)
    for k in ("naccpt", "nrejct", "nnewton_fail", "nstep"):
        assert comp.stats[k][-1] == ref.stats[k][-1], k
    dae = kd.constraints.formulate(prob.system, formulation,
                                   **({"dt": t_final / 100} if formulation == "baumgarte"
                                      else {}))
    _, _, fnewt = _internal_tolerances(tol, tol, dae.n, dae.mass, dae.index)
    n_steps = comp.stats["naccpt"][-1]
    bound = 20 * n_steps * fnewt * (tol + tol * np.abs(ref.q[-1]))
    np.testing.assert_allclose(comp.t, ref.t, rtol=5e-2, atol=0)
    assert comp.t[-1] == ref.t[-1] == t_final
    assert np.all(np.abs(comp.q[-1] - ref.q[-1]) <= bound)


@pytest.mark.parametrize("tol", [1e-6, 1e-8, 1e-9])
def test_compiled_radau5_reaches_andrews_reference(tol):
    """The test set's reference at t = 0.03 (PSIDE at 1e-14): the index-3 positions
    within 10·tol in mixed error, as the Python loop (docs/benchmarks.md: mescd 5.64,
    8.14, 9.19 at 1e-6, 1e-8, 1e-9)."""
    prob = problems.andrews()
    traj = kd.simulate(prob.system, prob.q0, prob.v0, prob.t_final, method="radau5",
                       formulation="index3", rtol=tol, atol=tol, compiled=True)
    assert traj.t[-1] == pytest.approx(0.03)
    assert prob.mescd(traj.q[-1], rtol=tol, atol=tol) >= -np.log10(tol) - 1.0
    assert np.max(np.abs(traj.stats["residual_g"])) < tol


def test_compiled_radau5_newton_failure_names_time_step_and_component():
    """A parallelogram four-bar (l1 = l3, l2 = l0) driven into its change point θ1 = 0,
    where all links are collinear and G loses rank: both loops give up there, naming the
    step, the time and the component of the largest Newton correction. The change point's
    time t* comes from a run that stops short of it (θ1 + θ̇1 (t* − t) = 0, |θ̇1| ≈ 7.5
    rad/s); each loop must fail within 3e-4 s of it (the links within 0.13° of collinear;
    where exactly depends on round-off: measured 3e-6 s and 7e-5 s before t*)."""
    geom = dict(l1=0.2, l2=0.45, l3=0.2, l0=0.45)
    system = four_bar_system(**geom)
    q0 = four_bar_configuration(0.3, **geom)
    v0 = consistent_initial_values(system, q0, np.array([-3.0, 0.0, 0.0])).v
    short = kd.simulate(system, q0, v0, 0.049, method="radau5", rtol=1e-8, atol=1e-8)
    t_star = 0.049 - short.q[-1, 0] / short.v[-1, 0]
    msg = (r"radau5: step size collapsed to h = \S+ at t = (0\.049\d+); largest scaled "
           r"Newton correction \S+ in component \d+ \(\S+, index \d\)")
    for c in (True, False):
        with pytest.raises(SolverError, match=msg) as err:
            kd.simulate(system, q0, v0, 0.3, method="radau5", rtol=1e-8, atol=1e-8,
                        compiled=c)
        t_fail = float(str(err.value).split("at t = ")[1].split(";")[0])
        assert abs(t_fail - t_star) < 3e-4


def test_compiled_radau5_bad_input():
    """Redundant loop rows are named before the loop runs; compiled=True on a system
    without a compiled form says why; too few steps say where they stopped."""
    system = four_bar_system()
    q = four_bar_configuration(1.0)
    pin3d = ConstrainedSystem(system.model, [LoopClosure(
        "rocker", "coupler", "point", frame_a=(np.eye(3), (0.4, 0, 0)),
        frame_b=(np.eye(3), (0.5, 0, 0)), name="pin")])
    with pytest.raises(ConstraintError, match=r"rows \[2\] \(pin: point z\)"):
        kd.simulate(pin3d, q, np.zeros(3), 0.1, method="radau5", compiled=True)
    pend = problems.pendulum()
    with pytest.raises(SolverError, match="has no compiled form"):
        kd.simulate(pend.system, pend.q0, pend.v0, 0.1, method="radau5", compiled=True)
    prob = problems.andrews()
    with pytest.raises(SolverError, match=r"10 steps without reaching t = 0.03 \(stopped at t"):
        kd.simulate(prob.system, prob.q0, prob.v0, 0.03, method="radau5", max_steps=10,
                    compiled=True)
