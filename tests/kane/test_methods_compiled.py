"""kd.simulate(method="verlet", "midpoint", "gauss4", "avf", "energy_momentum" or
"itoh_abe") on a compiled Kane system runs the compiled loops of
integrators/kane_compiled.py (one loop per method for every system, the generated functions
passed in as first-class functions), which must equal the Python steps of
integrators/verlet.py, gauss.py, discrete_gradient.py and energy_momentum.py (their readable
references) step for step."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.integrators import kane_compiled
from kanedyn.kane import tree


@pytest.fixture(scope="module")
def branched():
    """A branched tree of hinge, slider and screw joints (additive coordinates: q̇ = u),
    its Kane equations compiled by numba; a state that swings every joint."""
    model = kd.models.random_tree(4, seed=2, joint_types=("revolute", "prismatic", "helical"))
    system = tree.derive(model).compile(backend="numba")
    rng = np.random.default_rng(3)
    return model, system, rng.uniform(-0.8, 0.8, model.nq), rng.normal(0.0, 0.8, model.nv)


@pytest.mark.parametrize("method", ["verlet", "midpoint", "gauss4", "avf", "energy_momentum",
                                    "itoh_abe", "itoh_abe symmetric"])
def test_compiled_loops_equal_the_python_steps(branched, monkeypatch, method):
    model, system, q0, v0 = branched
    assert system.chart_is_additive and system.ninputs > 0
    runs = []

    def counted(*args):
        runs.append(1)
        return run(*args)

    method, *variant = method.split()
    options = {"variant": variant[0]} if variant else {}
    entry = {"verlet": "run_verlet", "avf": "run_avf", "energy_momentum": "run_gonzalez",
             "itoh_abe": "run_itoh_abe"}.get(method, "run_gauss")
    run = getattr(kane_compiled, entry)
    monkeypatch.setattr(kane_compiled, entry, counted)
    fast = kd.simulate(system, q0, v0, 0.3, method=method, dt=2e-3, **options)
    assert runs == [1] and fast.stats["newton_iterations"].size == 150  # the loop's run
    ref = kd.simulate(system, q0, v0, 0.3, method=method, dt=2e-3, compiled=False, **options)
    # the same arithmetic in the same order (bit for bit here); M v, LU solves and M⁻¹ by
    # numba's BLAS and LAPACK against numpy's may differ by ulps, which Newton's stopping
    # point (tol 1e-12 to 1e-14 of the step) can carry: 1.5e-11 after 200 steps of gauss4
    # on a 7-link chain (bench/kane_methods.py); 1e-10 is far below any method error
    scale = 1.0 + np.abs(ref.q).max() + np.abs(ref.v).max()
    assert np.abs(fast.q - ref.q).max() <= 1e-10 * scale
    assert np.abs(fast.v - ref.v).max() <= 1e-10 * scale
    np.testing.assert_array_equal(fast.stats["newton_iterations"],
                                  ref.stats["newton_iterations"])
    # and it is the model's motion: the energy error of these symplectic methods stays
    # O(h²) (midpoint, verlet) or O(h⁴) (gauss4), bounded; the discrete gradients keep it
    # (AVF to the round-off of its central differences of T)
    E = np.array([kd.kinetic_energy(model, q, v) + kd.potential_energy(model, q)
                  for q, v in zip(fast.q, fast.v, strict=True)])
    exact = method in ("avf", "energy_momentum", "itoh_abe")
    assert np.abs(E - E[0]).max() <= (1e-11 if exact else 1e-3) * (1.0 + abs(E[0]))


def test_where_the_loop_does_not_apply_the_python_steps_run(branched):
    model, system, q0, v0 = branched
    numpy_system = tree.derive(model).compile(backend="numpy")
    tr = kd.simulate(numpy_system, q0, v0, 0.01, method="verlet", dt=2e-3)
    fast = kd.simulate(system, q0, v0, 0.01, method="verlet", dt=2e-3)
    np.testing.assert_allclose(tr.q, fast.q, rtol=0, atol=1e-12)
    bare = SimpleNamespace(tau_cons=None, tau_nc=None, potential=None, progress=None)
    assert kane_compiled.applicable(SimpleNamespace(**vars(bare), system=system))
    assert not kane_compiled.applicable(SimpleNamespace(**vars(bare), system=numpy_system))
