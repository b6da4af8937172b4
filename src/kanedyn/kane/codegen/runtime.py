"""The compiled system: generated code behind the system protocol (stage 4 of codegen).

Where it sits: frozen equations → lowering (``lowering.py``) → printing
(``printers.py``) → building (``build.py``) → **compiled system**.

:func:`compile_eom` (``EquationsOfMotion.compile``) lowers the equations, prints them
for one backend, builds or loads them from the cache, and wraps the result in a
:class:`CompiledSystem`: mass_matrix, forcing, nonlinear_effects, forward_dynamics,
energies, q_dot, integrate_configuration, on one state or a batch, with the input
checks of the Model's algorithms; for the index-3 form
(:func:`kanedyn.kane.index3_equations`) ``hamiltonian_terms``, ``constraint_rows`` and
``nonconservative_forces``, and for a system with configuration constraints
``index3_form()``, which derives and compiles that form; for a tree whose chart is curved
(quaternions, or speeds other than q̇) a :class:`ChartCompiledSystem`, with the chart's
derivatives (``chart_derivative``, ``chart_start_sensitivity``) and the tangent ∂T/∂q
(``hamiltonian_terms``) from ∂q̇/∂q and ∂T/∂q generated on first use. Integrators and
``kd.simulate`` take it as they take a Model.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...errors import SolverError, StateError, SymbolicError
from .build import find_c_compiler, load_c, load_python
from .lowering import Lowered, chart_is_curved, lower
from .printers import (
    CHART_SIGNATURES,
    QUAT_TOL,
    c_declarations,
    c_source,
    operation_counts,
    python_source,
    signatures,
    speeds_are_rates,
)

__all__ = ["BACKENDS", "ChartCompiledSystem", "CompiledSystem", "compile_eom"]

BACKENDS = ("numpy", "numba", "c")


def _check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise SymbolicError(f"compile: backend must be one of {BACKENDS}, got {backend!r}")


_F64 = np.dtype(np.float64)


def _build(low: Lowered, backend: str, funcs, names) -> tuple:
    """(source, module, {name: callable}) of the generated functions ``names`` of ``low``
    (``funcs``: their signatures, for C's declarations)."""
    if backend == "c":
        source = c_source(low)
        mod = load_c(source, c_declarations(functions=funcs))
        ffi, lib = mod.ffi, mod.lib

        def wrap(fn):
            buf = ffi.from_buffer

            def call(*args):
                return fn(*[a if isinstance(a, float) else buf("double[]", a)
                            for a in args])
            return call

        return source, mod, {f: wrap(getattr(lib, f)) for f in names}
    source = python_source(low, backend)
    mod = load_python(source, backend)
    return source, mod, {f: getattr(mod, f) for f in names}


class CompiledSystem:
    """Generated code for an EquationsOfMotion, with the system protocol of DESIGN.md.

    ``mass_matrix(q)``, ``forcing(q, v, tau)``, ``nonlinear_effects(q, v)`` (= -forcing at
    τ = 0), ``gravity_torques(q)``, ``forward_dynamics(q, v, tau)`` (Cholesky solve of
    ``M u̇ = forcing``), ``energy``, ``kinetic_energy``, ``potential_energy``, ``q_dot`` and
    ``integrate_configuration``. All take one state or a batch (leading axis; the numpy
    backend vectorises it, numba and C loop over it). The time ``t`` is a keyword
    (default 0) for equations that depend on it explicitly.

    Inputs are checked as the Model's algorithms check them: wrong shapes and non-finite
    entries raise StateError, and quaternions more than ``QUAT_TOL`` off unit norm too;
    closer ones are normalised. For numba and C the checks run inside the generated code,
    so a call costs little more than the arithmetic.
    """

    def __init__(self, low: Lowered, backend: str):
        _check_backend(backend)
        eom = low.eom
        self.backend = backend
        self.name = eom.name
        self.nq, self.nv, self.ninputs = len(eom.q), len(eom.u), len(eom.inputs)
        self.quaternions = [(list(a), list(b)) for a, b in eom.quaternions]
        self.parameters = dict(low.values)
        self._nE = {"split": 3, "total": 1, "none": 0}[low.energy_kind]
        self.counts = operation_counts(low)
        funcs = signatures(low)
        names = list(funcs) + (["forward_dynamics"] if backend != "numpy" else [])
        self.source, mod, self._k = _build(low, backend, funcs, names)
        if backend != "c":
            self._rk4_loop = getattr(mod, "rk4_run", None)
            self._module = mod
        self._work = np.empty(max(self.nv * self.nv, 1))
        self._scalar = backend != "numpy"
        self._zeros_tau = np.zeros(self.ninputs)
        self._zeros_v = np.zeros(self.nv)
        # the eliminated constraints: dependent speeds (their names, after the independent
        # ones in a full speed vector) and dependent coordinates (indices into q)
        self.dependent_speed_names = [str(x) for x in eom.dependent_speeds]
        self.speed_names = [str(x) for x in eom.u]
        self.coordinate_names = [str(x) for x in eom.q]
        self.input_names = [str(x) for x in eom.inputs]
        self.q_dependent = [list(eom.q).index(x) for x in eom.q_dependent]
        self.n_configuration_constraints = len(low.outputs["configuration_residual"])
        self.n_velocity_constraints = len(low.outputs["velocity_residual"])
        self.constraint_names = ([f"g{k}" for k in range(self.n_configuration_constraints)]
                                 + [f"v{k}" for k in range(self.n_velocity_constraints)])
        #: capabilities (sim/system.py): fewer independent speeds than coordinates, and
        #: constraints eliminated in the equations, which kd.simulate keeps by the methods
        #: of kanedyn.integrators.eliminated (q̇ = W(q) u stepped directly, q_dep projected)
        self.nonholonomic = (bool(self.dependent_speed_names)
                             or self.nq - len(self.quaternions) > self.nv)
        self.eliminated_constraints = bool(self.dependent_speed_names or self.q_dependent)
        #: capability (sim/system.py): q ⊕ ξ = q + ξ with v = ξ̇, i.e. q̇ = u exactly. Kane's
        #: speeds are freely chosen (u1 = 2 q̇1, body rates, ...): where q̇ ≠ u the
        #: integrators step in the chart of integrate_configuration with chart_jacobian
        #: (a square system with q̇ ≠ u was once taken as additive, which integrated
        #: q̇ = u: a wrong trajectory, silently)
        self.chart_is_additive = speeds_are_rates(eom)
        #: the index-3 form (kane.index3_equations): all speeds, g(q) = 0 kept beside the
        #: equations, with hamiltonian_terms and constraint_rows
        self.index3 = bool(getattr(eom, "index3", False))
        #: capability (sim/batch.run_rk4): kd.simulate's RK4 as one compiled loop, generated
        #: with the equations (numba backend, a holonomic system); None otherwise
        self.compiled_rk4 = (self._rk4 if backend == "numba" and not self.nonholonomic
                             and not self.eliminated_constraints and not self.index3
                             else None)
        #: capability (integrators/kane_compiled.py): the generated numba functions
        #: ``(mass_matrix, forcing, energy)`` that the compiled fixed-step loops call through
        #: their pointers, for a tree (holonomic, nothing eliminated, not the index-3 form)
        #: whose energy is split into T and V; None otherwise
        self.compiled_functions = (
            (self._k["mass_matrix"], self._k["forcing"], self._k["energy"])
            if backend == "numba" and self._nE == 3 and not self.nonholonomic
            and not self.eliminated_constraints and not self.index3 else None)
        #: capability (integrators/kane_compiled.run_rk4): the generated numba
        #: ``forward_dynamics(q, u, τ, t, u̇, work)`` (Cholesky of M u̇ = forcing) of such a
        #: tree, which the compiled RK4 with force elements calls with τ as its inputs
        #: (where the inputs are the nv generalized forces); None otherwise
        self.compiled_forward_dynamics = (self._k["forward_dynamics"]
                                          if self.compiled_functions is not None else None)
        #: capability (integrators/kane_compiled.run_gauss_chart, run_itoh_abe_chart,
        #: run_rk4): the
        #: generated numba ``chart_point(q0, ξ, q)`` and ``chart_jacobian(q0, ξ, J)`` (q0 ⊕ ξ
        #: and J(ξ) as integrate_configuration(q0, ξ, 1) and chart_jacobian compute them) of
        #: such a tree, by which the compiled loops step in the chart of its quaternions;
        #: None otherwise
        self.compiled_chart = ((mod.chart_point, mod.chart_jacobian)
                               if self.compiled_functions is not None else None)
        #: whether the chart's derivatives are known in closed form (a capability, True on
        #: a :class:`ChartCompiledSystem`), which integrators/chart.py's SystemChart takes
        #: for avf and verlet in the chart
        self.has_chart_derivative = False
        #: where the index-3 form of these equations comes from (kane.index3_equations):
        #: the KaneSystem they were derived from, and the parameter values folded in
        self.kane_system = getattr(eom, "kane_system", None)
        #: the Model of a tree's equations (``kane.tree.derive``), whose q and v these are:
        #: joint force elements (kanedyn.forces) bind to its joints' coordinates and
        #: speeds. None where the equations are not its tree's (constraints eliminated,
        #: the index-3 form) or were not derived from a Model
        model = getattr(eom, "source_model", None)
        self.source_model = (
            model if model is not None and not self.eliminated_constraints
            and not self.nonholonomic and not self.index3
            and (self.nq, self.nv) == (model.nq, model.nv) else None)

    def _rk4(self, q0: NDArray, v0: NDArray, t0: float, dt: float, steps: NDArray,
             every: int, blowup: float, Q: NDArray, V: NDArray, status: NDArray) -> int:
        """The generated ``rk4_run`` with no inputs (τ = 0): the steps of
        :class:`kanedyn.integrators.rk4.RK4` on these equations in one numba loop."""
        return self._rk4_loop(q0, v0, self._zeros_tau, float(t0), float(dt), steps,
                              int(every), float(blowup), Q, V, status)

    def __repr__(self) -> str:
        return (f"CompiledSystem({self.name!r}, backend={self.backend!r}, nq={self.nq}, "
                f"nv={self.nv}, ops={self.counts['dynamics']})")

    # --- argument handling -----------------------------------------------------------------
    def _inputs(self, tau) -> NDArray:
        if self.ninputs != self.nv and np.shape(tau)[-1:] == (self.nv,):
            if not np.any(tau):
                return self._zeros_tau
            raise StateError(
                f"{self.name}: got {self.nv} generalized forces, but this system's inputs are "
                f"{self.ninputs} specified quantities; derive it with generalized_forces=True "
                "to apply joint forces")
        return self._arr(tau, self.ninputs, "tau")

    def _arr(self, x, n: int, what: str) -> NDArray:
        # fast path: a C-contiguous, aligned, writeable float64 vector of the right size
        if type(x) is np.ndarray and x.dtype is _F64 and x.shape == (n,) and x.flags.carray:
            return x
        a = np.asarray(x, dtype=float)
        if a.shape[-1:] != (n,) or a.ndim > 2:
            raise StateError(f"{what} must have shape ({n},) or (N, {n}); got {a.shape} "
                             f"({self.name})")
        if not (a.flags.c_contiguous and a.flags.writeable):
            # numba compiles anew for read-only or strided arrays; C needs contiguous ones
            a = np.array(a, order="C")
        return a

    @staticmethod
    def _broadcast(arrays: list) -> tuple[tuple, list]:
        shape = np.broadcast_shapes(*[a.shape[:-1] for a in arrays])
        return shape, [a if a.shape[:-1] == shape else
                       np.array(np.broadcast_to(a, shape + a.shape[-1:]), order="C")
                       for a in arrays]

    def _status(self, status: int, q) -> None:
        if status == 1:
            raise StateError(f"{self.name}: an input contains NaN or infinity")
        if status >= 2:
            qi = self.quaternions[status - 2][0]
            nrm = float(np.linalg.norm(np.asarray(q)[..., qi]))
            raise StateError(
                f"{self.name}: q[{qi[0]}:{qi[-1] + 1}] is a quaternion of norm {nrm:.6g}, "
                f"not 1 (tolerance {QUAT_TOL}); normalise it or use integrate_configuration"
            )
        if status == -1:
            raise SolverError(f"{self.name}: M(q) is not positive definite at q = {q}")

    def _numpy_checks(self, *arrays) -> list:
        out = []
        for k, a in enumerate(arrays):
            if not np.isfinite(a).all():
                self._status(1, None)
            if k == 0 and self.quaternions:
                a = np.array(a)
                for g, (qi, _) in enumerate(self.quaternions):
                    nrm = np.linalg.norm(a[..., qi], axis=-1)
                    if not np.all(np.abs(nrm - 1.0) <= QUAT_TOL):
                        self._status(2 + g, a)
                    a[..., qi] /= nrm[..., None]
            out.append(a)
        return out

    def _eval(self, func: str, arrays: list, t: float, sizes: list) -> list:
        """Run one generated function on one state or a batch; outputs flat per state."""
        t = float(t)
        if self.backend == "numpy":
            arrays = self._numpy_checks(*arrays)
            shape = np.broadcast_shapes(*[a.shape[:-1] for a in arrays])
            outs = [np.empty(shape + (n,)) for n in sizes]
            self._k[func](*arrays, t, *outs)
            return outs
        fn = self._k[func]
        if all(a.ndim == 1 for a in arrays):
            outs = [np.empty(n) for n in sizes]
            st = fn(*arrays, t, *outs)
            if st:
                self._status(st, arrays[0])
            return outs
        shape, arrays = self._broadcast(arrays)
        outs = [np.empty(shape + (n,)) for n in sizes]
        for k in range(shape[0]):
            st = fn(*[a[k] for a in arrays], t, *[o[k] for o in outs])
            if st:
                self._status(st, arrays[0][k])
        return outs

    # --- the system protocol ---------------------------------------------------------------
    def mass_matrix(self, q: ArrayLike, t: float = 0.0) -> NDArray:
        """``M(q)``, nv x nv."""
        (M,) = self._eval("mass_matrix", [self._arr(q, self.nq, "q")], t, [self.nv ** 2])
        return M.reshape(M.shape[:-1] + (self.nv, self.nv))

    def forcing(self, q: ArrayLike, v: ArrayLike, tau: ArrayLike | None = None,
                t: float = 0.0) -> NDArray:
        """``forcing(q, v, τ)`` with ``M u̇ = forcing``."""
        T = self._zeros_tau if tau is None else self._arr(tau, self.ninputs, "tau")
        (F,) = self._eval("forcing", [self._arr(q, self.nq, "q"),
                                      self._arr(v, self.nv, "v"), T], t, [self.nv])
        return F

    def dynamics(self, q: ArrayLike, v: ArrayLike, tau: ArrayLike | None = None,
                 t: float = 0.0) -> tuple[NDArray, NDArray]:
        """``(M, forcing)`` together, sharing their common subexpressions."""
        T = self._zeros_tau if tau is None else self._arr(tau, self.ninputs, "tau")
        if self._scalar:  # one state, compiled kernel: the short path
            Q, Vv = self._arr(q, self.nq, "q"), self._arr(v, self.nv, "v")
            if Q.ndim == 1 and Vv.ndim == 1 and T.ndim == 1:
                M, F = np.empty((self.nv, self.nv)), np.empty(self.nv)
                st = self._k["dynamics"](Q, Vv, T, float(t), M.reshape(-1), F)
                if st:
                    self._status(st, Q)
                return M, F
        M, F = self._eval("dynamics", [self._arr(q, self.nq, "q"), self._arr(v, self.nv, "v"),
                                       T], t, [self.nv ** 2, self.nv])
        return M.reshape(M.shape[:-1] + (self.nv, self.nv)), F

    def nonlinear_effects(self, q: ArrayLike, v: ArrayLike, t: float = 0.0) -> NDArray:
        """``h(q, v) = -forcing(q, v, τ = 0)``."""
        return -self.forcing(q, v, None, t)

    def gravity_torques(self, q: ArrayLike, t: float = 0.0) -> NDArray:
        """``g(q) = h(q, 0)``: the inputs that hold the system still (when the forcing
        holds gravity and inputs only)."""
        return -self.forcing(q, self._zeros_v, None, t)

    def forward_dynamics(self, q: ArrayLike, v: ArrayLike, tau: ArrayLike | None = None,
                         t: float = 0.0) -> NDArray:
        """``u̇ = M(q)⁻¹ forcing(q, v, τ)``, by Cholesky.

        ``tau`` holds the inputs. Integrators pass generalized forces of length nv;
        where the inputs are not those (a general system), a zero vector of length nv
        means "no applied generalized force" and is taken as zero inputs; a non-zero one
        is an error (derive with ``generalized_forces=True`` to apply joint forces)."""
        Q, Vv = self._arr(q, self.nq, "q"), self._arr(v, self.nv, "v")
        T = self._zeros_tau if tau is None else self._inputs(tau)
        if self.backend == "numpy":
            M, F = self.dynamics(Q, Vv, T, t)
            try:
                L = np.linalg.cholesky(M)
            except np.linalg.LinAlgError:
                self._status(-1, Q)
            y = np.linalg.solve(L, F[..., None])
            return np.linalg.solve(np.swapaxes(L, -1, -2), y)[..., 0]
        fd = self._k["forward_dynamics"]
        if Q.ndim == 1 and Vv.ndim == 1 and T.ndim == 1:
            out = np.empty(self.nv)
            st = fd(Q, Vv, T, float(t), out, self._work)
            if st:
                self._status(st, Q)
            return out
        shape, (Q, Vv, T) = self._broadcast([Q, Vv, T])
        out = np.empty(shape + (self.nv,))
        for k in range(shape[0]):  # not _eval's generic loop: twice as fast per state
            st = fd(Q[k], Vv[k], T[k], float(t), out[k], self._work)
            if st:
                self._status(st, Q[k])
        return out

    def _energies(self, q, v, t, which: int):
        if not self._nE:
            raise SymbolicError(f"{self.name}: the equations carry no energy expression")
        if which and self._nE != 3:
            raise SymbolicError(f"{self.name}: kinetic and potential energy are not separated")
        (E,) = self._eval("energy", [self._arr(q, self.nq, "q"), self._arr(v, self.nv, "v")],
                          t, [self._nE])
        E = E[..., which]
        return float(E) if E.ndim == 0 else E

    def energy(self, q: ArrayLike, v: ArrayLike, t: float = 0.0):
        """Total mechanical energy ``T + V``."""
        return self._energies(q, v, t, 0)

    def kinetic_energy(self, q: ArrayLike, v: ArrayLike, t: float = 0.0):
        """``T``."""
        return self._energies(q, v, t, 1)

    def potential_energy(self, q: ArrayLike, t: float = 0.0):
        """``V``."""
        return self._energies(q, self._zeros_v, t, 2)

    def q_dot(self, q: ArrayLike, v: ArrayLike, t: float = 0.0) -> NDArray:
        """``q̇`` from the kinematic differential equations."""
        (qd,) = self._eval("qdot", [self._arr(q, self.nq, "q"), self._arr(v, self.nv, "v")],
                           t, [self.nq])
        return qd

    # --- the eliminated constraints ----------------------------------------------------------
    def dependent_speeds(self, q: ArrayLike, v: ArrayLike, t: float = 0.0) -> NDArray:
        """The dependent speeds ``u_dep(q, u)`` the velocity constraints give (in the order
        of ``dependent_speed_names``; empty for a holonomic system)."""
        (ud,) = self._eval("dependent_speeds", [self._arr(q, self.nq, "q"),
                                                self._arr(v, self.nv, "v")], t,
                           [len(self.dependent_speed_names)])
        return ud

    def constraint_residuals(self, q: ArrayLike, v: ArrayLike,
                             t: float = 0.0) -> tuple[NDArray, NDArray]:
        """``(g(q), C(q) [u; u_dep(q, u)] + D(q))``: the configuration constraints and the
        velocity constraints as given, at the dependent speeds of :meth:`dependent_speeds`
        (zero to round-off; the record of a simulation)."""
        rg, rv = self._eval("residuals", [self._arr(q, self.nq, "q"),
                                          self._arr(v, self.nv, "v")], t,
                            [self.n_configuration_constraints, self.n_velocity_constraints])
        return rg, rv

    def residuals(self, t, q, v, vdot=None) -> dict:
        """The residuals of a trajectory's states by level, as a constrained system gives
        them (``Trajectory.to_pandas`` columns ``g:<row>``, ``Gv:<row>``): rows ``g0 ...``
        of the configuration constraints (in "g"; their time derivatives are among the
        velocity constraints) and ``v0 ...`` of the velocity constraints (in "Gv")."""
        rg, rv = self.constraint_residuals(q, v, 0.0 if np.ndim(t) else float(t))
        return {"g": rg, "Gv": rv}

    def configuration_jacobian(self, q: ArrayLike, t: float = 0.0) -> NDArray:
        """``∂g/∂q_dep`` (l x l), the derivative of the configuration constraints with
        respect to the dependent coordinates."""
        n = self.n_configuration_constraints
        (G,) = self._eval("configuration_jacobian", [self._arr(q, self.nq, "q")], t, [n * n])
        return G.reshape(G.shape[:-1] + (n, n))

    # --- the index-3 form (kane.index3_equations) --------------------------------------------
    def index3_form(self) -> CompiledSystem:
        """The index-3 form of these equations (:func:`kanedyn.kane.index3_equations`): the
        KaneSystem they were derived from, derived again without eliminating its dependent
        speeds, compiled by the same backend with the same parameter values; made on first
        use and kept. A SymbolicError says why there is none (no KaneSystem behind these
        equations, nonholonomic rows, q̇ ≠ u, no potential energy)."""
        if self.index3:
            return self
        cached = self.__dict__.get("_index3")
        if cached is not None:
            return cached
        if self.kane_system is None:
            raise SymbolicError(
                f"{self.name}: these equations were not derived from a KaneSystem "
                "(KaneSystem.derive), so their index-3 form cannot be formed; derive it with "
                "kanedyn.kane.index3_equations(system).compile()")
        from ..equations import index3_equations

        eom = index3_equations(self.kane_system)
        names = {str(s) for s in eom.parameters}
        values = {k: v for k, v in self.parameters.items() if k in names}
        self._index3 = compile_eom(eom, self.backend, values)
        return self._index3

    def consistent_configuration(self, q: ArrayLike, tol: float = 1e-13, maxiter: int = 30,
                                 t: float = 0.0) -> NDArray:
        """q with its dependent coordinates solved from ``g(q) = 0`` by Newton, starting
        from the values in q (the independent ones are kept): the projection that
        ``kd.simulate`` applies after every step. Converged when the update is below
        ``tol`` (1 + |q_dep|). A singular ``∂g/∂q_dep`` or no convergence is a StateError
        naming the dependent coordinates."""
        q = np.array(self._arr(q, self.nq, "q"), dtype=float)
        if not self.q_dependent:
            return q
        idx = self.q_dependent
        names = ", ".join(self.coordinate_names[i] for i in idx)
        for _ in range(maxiter):
            rg = self.constraint_residuals(q, self._zeros_v, t)[0]
            G = self.configuration_jacobian(q, t)
            sv = np.linalg.svd(G, compute_uv=False)
            if not sv[-1] > 1e-12 * max(1.0, sv[0]):
                raise StateError(
                    f"{self.name}: the configuration constraints cannot be solved for the "
                    f"dependent coordinates {names} at q = {q}: ∂g/∂q_dep is singular "
                    f"(singular values {sv})")
            dq = np.linalg.solve(G, rg)
            q[idx] -= dq
            if np.abs(dq).max() <= tol * (1.0 + np.abs(q[idx]).max()):
                return q
        raise StateError(
            f"{self.name}: Newton on the configuration constraints did not converge for "
            f"{names} in {maxiter} iterations (residual {np.abs(rg).max():.3g}) from q = {q}")

    def rate_matrix(self, q: ArrayLike, t: float = 0.0) -> NDArray:
        """W(q) (nq × nv) with ``q̇ = W(q) v + q̇(q, 0)``: the kinematic differential
        equations are affine in the speeds, so column k is ``q_dot(q, e_k) − q_dot(q, 0)``."""
        return self._rate_matrices(self._arr(q, self.nq, "q")[None], t)[0]

    def _rate_matrices(self, Q: NDArray, t: float) -> NDArray:
        """W at each configuration of Q (m × nq), by one batched call of q_dot."""
        m, n = Q.shape[0], self.nv
        V = np.tile(np.vstack([self._zeros_v, np.eye(n)]), (m, 1))
        rates = self.q_dot(np.repeat(Q, n + 1, axis=0), V, t).reshape(m, n + 1, self.nq)
        return np.swapaxes(rates[:, 1:] - rates[:, :1], 1, 2)

    def chart_jacobian(self, q0: ArrayLike, xi: ArrayLike, t: float = 0.0) -> NDArray:
        """J(ξ) with ``v = J(ξ) ξ̇`` along the chart ``q = q0 ⊕ ξ`` of
        :meth:`integrate_configuration` (dt = 1), in closed form.

        The speeds along the chart curve solve ``W(q) v = (∂q/∂ξ) ξ̇`` (:meth:`rate_matrix`).
        Outside the quaternions the chart is the Euler step ``q0 + dt q̇(q0, ξ)``, so
        ``∂q/∂ξ = W(q0)`` there; a quaternion group moves by ``q0 ⊗ exp(ξ_ω)``, whose rate
        is ``½ q ⊗ (0, J_r(ξ_ω) ξ̇_ω)`` (J_r the right Jacobian of SO(3)'s exponential,
        Barfoot 2017, 7.1.5; :func:`kanedyn.spatial.lie.so3_right_jacobian`). For a
        holonomic system W(q) has full column rank nv and the equations are consistent,
        so the normal equations give the exact solution. Without this method the
        integrators would take J from central differences of the chart
        (:func:`kanedyn.integrators.base.chart_jacobian`'s fallback: ≈ 1e-10, and 2 nv
        chart evaluations a call).
        """
        _, _, D, W = self._chart_parts(q0, xi, t)
        return np.linalg.solve(W.T @ W, W.T @ D)

    def _chart_parts(self, q0, xi, t: float) -> tuple:
        """(q0, q = q0 ⊕ ξ, Φ = ∂q/∂ξ, W(q)) of :meth:`chart_jacobian`: Φ is W(q0) off the
        quaternions, ½ q_g ⊗ (0, J_r(ξ_g) ·) on group g."""
        from ...spatial.lie import quat_rate_matrix, so3_right_jacobian

        q0 = self._arr(q0, self.nq, "q0")
        xi = self._arr(xi, self.nv, "xi")
        q = self.integrate_configuration(q0, xi, 1.0, t)
        D, W = self._rate_matrices(np.vstack([q0, q]), t)
        for qi, ui in self.quaternions:
            D[qi, :] = 0.0
            D[np.ix_(qi, ui)] = quat_rate_matrix(q[qi]) @ so3_right_jacobian(xi[ui])
        return q0, q, D, W

    def integrate_configuration(self, q: ArrayLike, v: ArrayLike, dt: float,
                                t: float = 0.0) -> NDArray:
        """q after a step dt at constant speeds v.

        Each quaternion group moves on the unit sphere exactly,
        ``q ← q ⊗ exp(dt ω)`` (``kanedyn.spatial.quat_exp``, the flow of
        ``q̇ = ½ q ⊗ (0, ω)``) with ω its body angular velocity; every other
        coordinate takes the explicit Euler step ``q ← q + dt q̇(q, v)``. (For a
        Model's planar and free-joint positions this is first order in dt where
        the Model's own ``integrate_configuration`` is the exact group flow.)
        """
        Q, Vv = self._arr(q, self.nq, "q"), self._arr(v, self.nv, "v")
        out = Q + float(dt) * self.q_dot(Q, Vv, t)
        if self.quaternions:
            from ...spatial import quat_exp, quat_multiply

            if out.ndim == 1 and Vv.ndim == 1:  # one state: no broadcasting
                for qi, ui in self.quaternions:
                    out[qi] = quat_multiply(Q[qi] / np.linalg.norm(Q[qi]),
                                            quat_exp(float(dt) * Vv[ui]))
                return out
            shape = out.shape[:-1]
            Q2 = np.broadcast_to(Q, shape + (self.nq,)).reshape(-1, self.nq)
            V2 = np.broadcast_to(Vv, shape + (self.nv,)).reshape(-1, self.nv)
            out = out.reshape(-1, self.nq)
            for qi, ui in self.quaternions:
                for k in range(out.shape[0]):
                    qk = Q2[k, qi] / np.linalg.norm(Q2[k, qi])
                    out[k, qi] = quat_multiply(qk, quat_exp(float(dt) * V2[k, ui]))
            out = out.reshape(shape + (self.nq,))
        return out


class ChartCompiledSystem(CompiledSystem):
    """The compiled equations of a tree whose chart q0 ⊕ ξ is curved (quaternions, or
    speeds other than q̇; :func:`~kanedyn.kane.codegen.lowering.chart_is_curved`): a
    :class:`CompiledSystem` with the generated ∂q̇/∂q and ∂T/∂q besides (built on first
    use, :meth:`_chart_functions`), and from them
    the chart's derivatives in closed form (:meth:`chart_derivative`,
    :meth:`chart_start_sensitivity`: capability ``has_chart_derivative``, taken by
    :class:`kanedyn.integrators.chart.SystemChart`) and the tangent ∂T/∂q
    (:meth:`hamiltonian_terms`), which avf and verlet step with. A class of its own, as
    :class:`Index3CompiledSystem`: the integrators read ``hamiltonian_terms`` as a
    capability (``hasattr``)."""

    #: how many W(q) :meth:`_rate_matrices` keeps
    _KEEP = 16

    def __init__(self, low: Lowered, backend: str, cse: bool = True):
        super().__init__(low, backend)
        self.has_chart_derivative = True
        self._chart_of = (low.eom, cse)
        self._rates = getattr(self._module, "_rates", None) if backend == "numba" else None
        self._kept_rates: dict = {}
        self._kept_parts: tuple = (None, None)

    def _rate_matrices(self, Q: NDArray, t: float) -> NDArray:
        """W at each configuration of Q, the last ``_KEEP`` kept: a step's J(ξ), D(ξ, w)
        and tangent ∂T/∂q ask for W at the same few points (q_n and the iterate's q) many
        times. The same values as computed anew (a row of a batched q_dot is that state's
        call)."""
        out = np.empty((Q.shape[0], self.nq, self.nv))
        kept, miss = self._kept_rates, []
        for k in range(Q.shape[0]):
            W = kept.get((Q[k].tobytes(), t))
            if W is None:
                miss.append(k)
            else:
                out[k] = W
        if miss and self._rates is not None and t == 0.0:
            # numba: the generated _rates (the same columns q̇(q, e_k) − q̇(q, 0), in one
            # call per state instead of nv + 1)
            new = np.empty((len(miss), self.nq, self.nv))
            zero, e, rate0 = np.zeros(self.nv), np.empty(self.nv), np.empty(self.nq)
            for j, k in enumerate(miss):
                qk = np.ascontiguousarray(Q[k])
                st = self._rates(qk, 0.0, zero, e, rate0, new[j])
                if st:
                    self._status(st, qk)
        elif miss:
            new = super()._rate_matrices(np.ascontiguousarray(Q[miss]), t)
        if miss:
            for k, W in zip(miss, new, strict=True):
                out[k] = W
                kept[(Q[k].tobytes(), t)] = W
            while len(kept) > self._KEEP:
                del kept[next(iter(kept))]
        return out

    def _chart_parts(self, q0, xi, t: float) -> tuple:
        """:meth:`CompiledSystem._chart_parts`, the last point's kept (J and D at one point
        share them); read-only."""
        q0 = self._arr(q0, self.nq, "q0")
        xi = self._arr(xi, self.nv, "xi")
        key = (q0.tobytes(), xi.tobytes(), float(t))
        if self._kept_parts[0] != key:
            parts = super()._chart_parts(q0, xi, t)
            for a in parts:
                a.flags.writeable = False
            self._kept_parts = (key, parts)
        return self._kept_parts[1]

    def hamiltonian_terms(self, q: ArrayLike, v: ArrayLike,
                          t: float = 0.0) -> tuple[NDArray, NDArray]:
        """(∂T/∂q at fixed v, ∂V/∂q) in the tangent space, as the Model's: the derivatives
        along q ⊕ εe_k, ``W(q)ᵀ ∂T/∂q`` with the generated ∂T/∂q (the chart's rate at
        ε = 0 is W(q) e_k, also on a quaternion: ½ q ⊗ (0, e_k)), and
        :meth:`gravity_torques` (−forcing(q, 0), generated, as the protocol's default
        takes ∂V/∂q). Without them the integrators take ∂T/∂q by central differences of T
        (≈ 1e-10), which leaves avf's energy error at that level instead of Newton's."""
        Q, Vv = self._arr(q, self.nq, "q"), self._arr(v, self.nv, "v")
        if Q.ndim != 1 or Vv.ndim != 1:
            raise StateError(f"{self.name}: hamiltonian_terms takes one state")
        self._chart_functions()
        (dT,) = self._eval("kinetic_gradient", [Q, Vv], t, [self.nq])
        W = self.rate_matrix(Q, t)
        return W.T @ dT, self.gravity_torques(Q, t)

    def chart_point(self, q0: ArrayLike, xi: ArrayLike, t: float = 0.0) -> NDArray:
        """q0 ⊕ ξ: :meth:`integrate_configuration` (q0, ξ, 1), the one :meth:`chart_jacobian`
        and :meth:`chart_derivative` at (q0, ξ) form and keep."""
        return np.array(self._chart_parts(q0, xi, t)[1])

    def _chart_functions(self) -> None:
        """Generate and build ``qdot_jacobian`` and ``kinetic_gradient`` (the lowering
        with ``chart=True``: ∂q̇/∂q and ∂T/∂q through the definitions, CSE'd together), on
        first use: ∂T/∂q is most of a floating tree's dynamics in size (5213 operations
        against 7468 for M and forcing on an 8-body tree) and its lowering takes about as
        long as the equations' own (2.6 s against 2.2 s; docs/benchmarks.md), which a
        system never stepped by avf or verlet need not pay."""
        if "qdot_jacobian" in self._k:
            return
        eom, cse = self._chart_of
        low = lower(eom, self.parameters, cse=cse, chart=True)
        funcs = {f: signatures(low)[f] for f in CHART_SIGNATURES}
        self.chart_source, _, k = _build(low, self.backend, funcs, list(funcs))
        self.counts.update({f: operation_counts(low)[f] for f in funcs})
        self._k.update(k)

    def compiled_chart_derivative(self) -> tuple | None:
        """What the compiled avf loop in this chart takes besides ``compiled_chart``
        (:func:`kanedyn.integrators.kane_compiled.run_avf_chart`): the generated numba
        ``_rates(q, t, zero, e, rate0, W)`` (W(q)), the chart module's ``qdot_jacobian(q, u,
        t, Kq)`` and ``kinetic_gradient(q, u, t, dTq)`` (built on first use,
        :meth:`_chart_functions`), and the quaternion groups (ng x 4 coordinates, ng x 3
        speeds, int64); None off the numba backend or where the loops do not apply
        (``compiled_functions`` None)."""
        if self.compiled_functions is None or self._rates is None:
            return None
        self._chart_functions()
        qg = np.array([a for a, _ in self.quaternions], dtype=np.int64).reshape(-1, 4)
        ug = np.array([b for _, b in self.quaternions], dtype=np.int64).reshape(-1, 3)
        return (self._rates, self._k["qdot_jacobian"], self._k["kinetic_gradient"], qg, ug)

    def qdot_jacobian(self, q: ArrayLike, v: ArrayLike, t: float = 0.0) -> NDArray:
        """∂q̇/∂q (nq × nq) of the kinematic equations at (q, v), generated (on first use,
        :meth:`_chart_functions`): SymPy's derivative of q̇(q, u) through the definitions
        (``lowering.gradients``); on a quaternion the derivative of the expression
        ½ q ⊗ (0, ω) (q normalised first, as every generated function takes it)."""
        self._chart_functions()
        (K,) = self._eval("qdot_jacobian", [self._arr(q, self.nq, "q"),
                                            self._arr(v, self.nv, "v")], t, [self.nq ** 2])
        return K.reshape(K.shape[:-1] + (self.nq, self.nq))

    def chart_derivative(self, q0: ArrayLike, xi: ArrayLike, w: ArrayLike,
                         t: float = 0.0) -> NDArray:
        """D (nv × nv) with ``D δ = d/dε J(ξ + εδ) w``, J of :meth:`chart_jacobian` (the
        argument convention of :class:`kanedyn.integrators.chart.ModelChart`).

        J w = u solves ``W(q) u = Φ(ξ) w`` exactly (q = q0 ⊕ ξ, Φ = ∂q/∂ξ); its derivative
        along δ is ``W(q) D δ = (∂Φ/∂ξ · δ) w − (∂(W(q) u)/∂q) Φ δ``, solved by the normal
        equations as J is. ``∂(W u)/∂q = K(q, u) − K(q, 0)`` with K the generated
        :meth:`qdot_jacobian` (q̇ is affine in u); Φ is constant off the quaternions (the
        Euler step q0 + q̇(q0, ξ) is linear in ξ), and on group g, Φ_g = G(q_g) J_r(ξ_g)
        with G(q) y = ½ q ⊗ (0, y) and q_g moving by G(q_g) J_r δ_g, so that

            (∂Φ/∂ξ · δ) w = ¼ q_g ⊗ (0, J_r δ_g) ⊗ (0, J_r w_g) + G(q_g) D_r(ξ_g, w_g) δ_g

        (D_r: :func:`kanedyn.spatial.lie.so3_right_jacobian_derivative`)."""
        from ...spatial.lie import (
            quat_rate_matrix,
            skew3,
            so3_right_jacobian,
            so3_right_jacobian_derivative,
        )

        w = self._arr(w, self.nv, "w")
        q0, q, Phi, W = self._chart_parts(q0, xi, t)
        xi = np.asarray(xi, dtype=float)
        N = W.T @ W
        u = np.linalg.solve(N, W.T @ (Phi @ w))
        R = -(self.qdot_jacobian(q, u, t) - self.qdot_jacobian(q, self._zeros_v, t)) @ Phi
        for qi, ui in self.quaternions:
            qg, x, wg = q[qi], xi[ui], w[ui]
            Jr = so3_right_jacobian(x)
            y = Jr @ wg
            # ¼ q ⊗ (0, c) ⊗ (0, y) = ¼ q ⊗ (−c·y, c × y) = −¼ q (yᵀc) − ½ G(q) (y×) c
            # for c = J_r δ_g, G(q) = ½ q ⊗ (0, ·)
            G = quat_rate_matrix(qg)
            R[np.ix_(qi, ui)] += (G @ (so3_right_jacobian_derivative(x, wg) - 0.5 * skew3(y) @ Jr)
                                  - 0.25 * np.outer(qg, Jr.T @ y))
        return np.linalg.solve(N, W.T @ R)

    def chart_start_sensitivity(self, q0: ArrayLike, x: ArrayLike,
                                t: float = 0.0) -> NDArray:
        """K (nv × nv) with ``dx = K δ`` when the chart's centre moves by q0 ⊕ εδ (speeds δ)
        and the point q = q0 ⊕ x stays (:meth:`kanedyn.integrators.chart.ModelChart.
        start_sensitivity`'s convention): ``Φ(x) dx = −(∂q/∂q0) W(q0) δ``, where ∂q/∂q0
        is 1 + K(q0, x) off the quaternions (K the generated :meth:`qdot_jacobian`) and
        the right product by exp(x_g) on group g (q0_g ⊗ exp(x_g); the centre moves
        tangentially, so the normalisation of q0_g does not enter); solved by the normal
        equations (Φ has full column rank)."""
        from ...spatial import quat_exp, quat_multiply

        q0, _, Phi, _ = self._chart_parts(q0, x, t)
        x = np.asarray(x, dtype=float)
        W0 = self._rate_matrices(q0[None], t)[0]
        B = W0 + self.qdot_jacobian(q0, x, t) @ W0
        for qi, ui in self.quaternions:
            e = quat_exp(x[ui])
            B[qi, :] = np.array([quat_multiply(W0[qi, k], e) for k in range(self.nv)]).T
        return -np.linalg.solve(Phi.T @ Phi, Phi.T @ B)



class Index3CompiledSystem(CompiledSystem):
    """The compiled index-3 form of a Kane system (:func:`kanedyn.kane.index3_equations`):
    a :class:`CompiledSystem` with the generated ``hamiltonian_terms``,
    ``constraint_rows`` and ``nonconservative_forces`` besides. A class of its own, since
    the integrators read ``hamiltonian_terms`` as a capability (``hasattr``): a system
    without them takes their other paths."""

    def __init__(self, low: Lowered, backend: str):
        super().__init__(low, backend)
        #: F_nc is not identically zero: some load is outside V (a damper, a motor, an
        #: input) or there are generalized forces τ
        self.has_nonconservative_forces = any(
            e != 0 for e in low.outputs["nonconservative_forces"])

    def hamiltonian_terms(self, q: ArrayLike, v: ArrayLike,
                          t: float = 0.0) -> tuple[NDArray, NDArray]:
        """(∂T/∂q at fixed u, ∂V/∂q): the symbolic derivatives of the kinetic and the
        potential energy, generated."""
        dT, dV = self._eval("hamiltonian_terms", [self._arr(q, self.nq, "q"),
                                                  self._arr(v, self.nv, "v")], t,
                            [self.nq, self.nq])
        return dT, dV

    def constraint_rows(self, q: ArrayLike, v: ArrayLike,
                        t: float = 0.0) -> tuple[NDArray, NDArray]:
        """(G = ∂g/∂q, l x nq; γ = −(∂(G u)/∂q) u, the right side of G u̇ = γ) of the
        configuration constraints."""
        n = self.n_configuration_constraints
        G, gam = self._eval("constraint_rows", [self._arr(q, self.nq, "q"),
                                                self._arr(v, self.nv, "v")], t,
                            [n * self.nq, n])
        return G.reshape(G.shape[:-1] + (n, self.nq)), gam

    def nonconservative_forces(self, q: ArrayLike, v: ArrayLike, tau: ArrayLike | None = None,
                               t: float = 0.0) -> NDArray:
        """F_nc(q, u, τ, t): Kane's generalized active forces F_r of the loads that are not
        in V (those in the speeds, the time or the inputs: dampers, motors) and the
        generalized forces τ, generated, so that
        ``forcing = ∂T/∂q − (∂(M u)/∂q) u − ∂V/∂q + F_nc``."""
        T = self._zeros_tau if tau is None else self._arr(tau, self.ninputs, "tau")
        (F,) = self._eval("nonconservative_forces", [self._arr(q, self.nq, "q"),
                                                     self._arr(v, self.nv, "v"), T], t,
                          [self.nv])
        return F


def compile_eom(eom, backend: str = "numba", parameters: dict | None = None,
                cse: bool = True) -> CompiledSystem:
    """Generated code for ``eom`` (see :class:`CompiledSystem`)."""
    _check_backend(backend)
    if backend == "c":
        find_c_compiler()  # fail before the (slow) lowering
    low = lower(eom, parameters, cse=cse)
    if getattr(eom, "index3", False):
        return Index3CompiledSystem(low, backend)
    if chart_is_curved(eom):
        return ChartCompiledSystem(low, backend, cse)
    return CompiledSystem(low, backend)

