"""The closed-form Newton matrices of midpoint and gauss4 (jacobian="auto").

- ∂f/∂z of the stage equations against central differences of f itself, in the
  canonical (q, p) form (chain with a spring and a damper) and in the tangent (ξ, v)
  form (ball and free joints; exact at ξ = 0, where chart_rate_jacobian is exact).
- The trajectory equals the one of the difference-based Newton to what the Newton
  tolerance (1e-12 relative per step) lets accumulate, with fewer residual evaluations
  per step (counted, not timed).
- Fallbacks: a protocol-only system and a force without Jacobian use differences.
- A Newton failure still names the method, step, time and residual.
"""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.forces import ForceSet, JointDamper, JointSpring, JointTorque
from kanedyn.integrators.base import Problem, run_fixed
from kanedyn.integrators.gauss import Gauss4, Midpoint
from kanedyn.sim.system import ModelSystem


def _problem(model, forces=(), dt=1e-2, t_final=0.3, seed=0, system=None):
    s = system or ModelSystem(model)
    fs = ForceSet(s, list(forces))
    rng = np.random.default_rng(seed)
    q0 = kd.integrate_configuration(model, kd.neutral(model), 0.3 * rng.normal(size=model.nv), 1.0)
    v0 = rng.normal(size=model.nv)
    return Problem(system=s, q0=q0, v0=v0, t_final=t_final, dt=dt,
                   tau_cons=fs.tau_conservative if fs.conservative else None,
                   tau_nc=fs.tau_nonconservative if fs.nonconservative else None,
                   potential=fs.potential if fs.conservative else None,
                   force_jacobians=fs.jacobians)


def _fd_jf(meth, q0, z, eps=1e-6):
    E = np.eye(z.size)
    return np.column_stack([(meth._f(0.0, q0, z + eps * E[k])[0]
                             - meth._f(0.0, q0, z - eps * E[k])[0]) / (2 * eps)
                            for k in range(z.size)])


def _chain7():
    return kd.models.pendulum_chain(7)


def _ball_tree():
    return kd.models.random_tree(5, seed=1, floating_base=True,
                                 joint_types=("revolute", "spherical", "planar"))


def test_canonical_jacobian_matches_differences():
    model = _chain7()
    pr = _problem(model, [JointSpring("joint3", 500.0), JointDamper("joint2", 2.0)])
    meth = Midpoint(pr)
    assert meth.canonical and meth.analytic
    rng = np.random.default_rng(3)
    z = np.concatenate([0.05 * rng.normal(size=7), rng.normal(size=7)])
    Jf, FD = meth._jf(0.0, pr.q0, z), _fd_jf(meth, pr.q0, z)
    # central differences: ≈ 1e-10 relative (roundoff / ε), far below any wrong term
    assert np.abs(Jf - FD).max() <= 1e-7 * np.abs(FD).max()


def test_tangent_jacobian_matches_differences_at_the_chart_origin():
    model = _ball_tree()
    pr = _problem(model, [JointDamper("joint1", 0.5)])
    meth = Gauss4(pr)
    assert not meth.canonical and meth.analytic
    n = model.nv
    z = np.concatenate([np.zeros(n), np.random.default_rng(4).normal(size=n)])
    Jf, FD = meth._jf(0.0, pr.q0, z), _fd_jf(meth, pr.q0, z)
    assert np.abs(Jf - FD).max() <= 1e-7 * np.abs(FD).max()
    # away from ξ = 0 only the ∂ξ̇/∂ξ block is approximate, by O(|ξ||v|)
    z[:n] = 1e-3 * np.random.default_rng(5).normal(size=n)
    Jf, FD = meth._jf(0.0, pr.q0, z), _fd_jf(meth, pr.q0, z)
    assert np.abs(Jf[:, n:] - FD[:, n:]).max() <= 1e-7 * np.abs(FD).max()
    assert np.abs(Jf[n:, :n] - FD[n:, :n]).max() <= 1e-7 * np.abs(FD).max()
    assert np.abs(Jf[:n, :n] - FD[:n, :n]).max() <= 1e-2 * np.abs(z[n:]).max()


CASES = [
    pytest.param(_chain7, (), id="chain7"),
    pytest.param(_chain7, (("spring", "joint3", 500.0), ("damper", "joint2", 2.0)),
                 id="chain7_spring_damper"),
    pytest.param(lambda: kd.models.pendulum_chain(3, planar=False, joint="spherical"), (),
                 id="ball3"),
]


def _forces(spec):
    return [JointSpring(j, k) if kind == "spring" else JointDamper(j, k) for kind, j, k in spec]


@pytest.mark.parametrize("cls", [Midpoint, Gauss4])
@pytest.mark.parametrize(("make", "spec"), CASES)
def test_same_trajectory_with_fewer_residual_evaluations(make, spec, cls):
    model = make()
    runs = {}
    for mode in ("differences", "auto"):
        pr = _problem(model, _forces(spec))
        meth = cls(pr, jacobian=mode)
        sol = run_fixed(meth, pr)
        runs[mode] = (sol, meth.residual_evaluations / (len(sol.t) - 1), meth)
    (s_fd, n_fd, m_fd), (s_an, n_an, m_an) = runs["differences"], runs["auto"]
    assert m_an.analytic and m_an.jacobian_evaluations > 0
    assert not m_fd.analytic and m_fd.jacobian_evaluations == 0
    # 30 steps, each solved to 1e-12 relative: the runs agree to ≈ 1e-11 (measured
    # ≤ 1.6e-10 in v with the spring); 1e-8 of the state's scale
    scale = max(1.0, float(np.abs(s_fd.v).max()))
    assert np.abs(s_an.q - s_fd.q).max() <= 1e-8 * scale
    assert np.abs(s_an.v - s_fd.v).max() <= 1e-8 * scale
    # measured: 4.5–6.5 residuals per step against 7.3–14 (ratio 0.43–0.62)
    assert n_an <= 0.75 * n_fd, (n_an, n_fd)


def test_protocol_only_system_and_force_without_jacobian_fall_back_to_differences():
    model = _chain7()

    class Bare:
        def __init__(self):
            self._s = ModelSystem(model)
            self.nq, self.nv = model.nq, model.nv

        def __getattr__(self, name):
            if name in ("mass_matrix", "nonlinear_effects", "forward_dynamics", "energy",
                        "q_dot", "integrate_configuration"):
                return getattr(self._s, name)
            raise AttributeError(name)

    pr = _problem(model, system=Bare(), t_final=0.05)
    # its ∂T/∂q is by differences (≈ 1e-10), so the stage residual has that noise floor
    meth = Midpoint(pr, tol=1e-8)
    assert not meth.analytic
    run_fixed(meth, pr)
    assert meth.jacobian_evaluations == 0

    torque = JointTorque(lambda t, q, v: -0.3 * np.sin(q), joints=None)
    pr = _problem(model, [torque], t_final=0.05)
    assert pr.force_jacobians(0.0, pr.q0, pr.v0) is None
    meth = Midpoint(pr)
    sol = run_fixed(meth, pr)
    assert meth.jacobian_evaluations == 0  # every attempt went to differences
    pr2 = _problem(model, [torque], t_final=0.05)
    ref = run_fixed(Midpoint(pr2, jacobian="differences"), pr2)
    assert np.abs(sol.q - ref.q).max() <= 1e-10


def test_newton_failure_with_closed_form_matrix_names_step_time_residual_method():
    pend = kd.models.pendulum_chain(2)
    stiff = [JointSpring("joint1", 1e9), JointSpring("joint2", 1e9)]
    for method in ("midpoint", "gauss4"):
        with pytest.raises(kd.SolverError) as e:
            kd.simulate(pend, [0.5, -0.5], [0, 0], 1.0, method=method, dt=0.1, forces=stiff,
                        maxiter=2)
        msg = str(e.value)
        for part in (method, "step 0", "t = 0", "residual", "Reduce dt"):
            assert part in msg, msg


def test_unknown_jacobian_option():
    with pytest.raises(kd.SolverError, match="differences"):
        kd.simulate(kd.models.pendulum_chain(2), [0.1, 0], [0, 0], 0.1, method="midpoint",
                    dt=0.01, jacobian="exact")


def test_simulate_hands_the_force_jacobians_to_newton():
    """Through kd.simulate (ForceSet.jacobians -> Problem.force_jacobians): fewer Newton
    iterations with the closed form, same trajectory."""
    chain = kd.models.pendulum_chain(4)
    forces = [JointSpring("joint2", 300.0), JointDamper("joint1", 1.0)]
    run = {mode: kd.simulate(chain, [0.3, -0.2, 0.1, 0.4], [1, 0, -1, 0], 0.2,
                             method="midpoint", dt=0.01, forces=forces, jacobian=mode)
           for mode in ("auto", "differences")}
    assert np.abs(run["auto"].q - run["differences"].q).max() <= 1e-9
    assert (run["auto"].stats["newton_iterations"].mean()
            < 0.8 * run["differences"].stats["newton_iterations"].mean())
