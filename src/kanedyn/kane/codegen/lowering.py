"""Lowering: frozen EquationsOfMotion → straight-line definitions (stage 1 of codegen).

Where it sits: data → pure functions → frozen equations (``kane/eom.py``) →
**lowering** → printing (``printers.py``) → building (``build.py``) → compiled
system (``runtime.py``).

:func:`lower` turns the SymPy equations into a :class:`Lowered`: an ordered list of
definitions (symbol = expression in q, u, inputs, t and earlier definitions) and the
flat outputs M (lower triangle when it is symmetric), forcing, q̇, the energies and,
for a system with eliminated constraints, the dependent speeds and the constraint
residuals (:func:`_constraint_outputs`); for the index-3 form (``eom.index3``,
:func:`kanedyn.kane.index3_equations`) also ∂T/∂q, ∂V/∂q (:func:`gradients`, the chain rule
through the definitions), ∂g/∂q, γ and the non-conservative forces F_nc
(:func:`_index3_outputs`); with ``chart=True``, for a tree whose chart is curved, only ∂q̇/∂q
and ∂T/∂q (:func:`_chart_outputs`).
It does, in order:

1. substitute the parameter values and propagate them through the intermediates
   (constant folding: an intermediate that becomes a number is inlined, so nothing
   is computed at run time that the model fixes);
2. run ``sympy.cse`` once over the intermediates and all outputs together, so what
   they share is computed once; the copies it leaves (``a = b``) are propagated,
   integral floats written as integers (``1.0*x → x``) and single-use definitions
   inlined (fewer statements for the same operations);
3. order the definitions so each follows all it uses, deterministically (the hash of
   the generated source names its cache entry, so it must not depend on Python's
   hash seed); :meth:`Lowered.needed` then gives one function's definitions.

Nothing here knows a target language.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from ...errors import SymbolicError

__all__ = ["Lowered", "chart_is_curved", "free_symbols", "gradients", "lower",
           "operation_count"]


@dataclass
class Lowered:
    """Straight-line form of an EquationsOfMotion: ``definitions`` (symbol -> expression,
    each using only earlier ones and q, u, inputs, t) and the flat output lists."""

    eom: object
    definitions: dict
    order: list
    outputs: dict
    symmetric: bool
    energy_kind: str  # "split" (T, V, T+V), "total" (T+V only) or "none"
    values: dict

    def needed(self, names) -> list:
        """The definitions the outputs ``names`` depend on, in evaluation order."""
        need = set()
        stack = [s for n in names for e in self.outputs[n] for s in free_symbols(e)]
        while stack:
            s = stack.pop()
            if s in need or s not in self.definitions:
                continue
            need.add(s)
            stack.extend(free_symbols(self.definitions[s]))
        return [s for s in self.order if s in need]

    def ops(self, s: sp.Symbol) -> int:
        """``count_ops`` of one definition (memoised: counting is slow on big systems)."""
        memo = self.__dict__.setdefault("_ops", {})
        if s not in memo:
            memo[s] = int(sp.count_ops(self.definitions[s]))
        return memo[s]

    def operation_count(self, names=("mass_matrix", "forcing")) -> int:
        """``sympy.count_ops`` of the CSE'd code that computes the outputs ``names``."""
        n = sum(self.ops(s) for s in self.needed(names))
        memo = self.__dict__.setdefault("_output_ops", {})
        for k in names:
            if k not in memo:
                memo[k] = sum(int(sp.count_ops(e)) for e in self.outputs[k])
        return int(n + sum(memo[k] for k in names))


def free_symbols(e) -> set:
    """The free symbols of an expression (none for a plain number)."""
    return e.free_symbols if isinstance(e, sp.Basic) else set()


def _parameter_values(eom, parameters) -> dict:
    """Values of every parameter; a missing one is an error that names it."""
    values = dict(eom.parameters)
    by_name = {s.name: s for s in values}
    for key, val in (parameters or {}).items():
        sym = key if isinstance(key, sp.Symbol) else by_name.get(str(key))
        if sym is None:
            raise SymbolicError(
                f"compile: {key!r} is not a parameter of {eom.name!r} "
                f"(parameters: {sorted(by_name)})"
            )
        values[sym] = val
    missing = sorted(s.name for s, v in values.items() if v is None)
    if missing:
        raise SymbolicError(
            f"compile: parameter{'s' if len(missing) > 1 else ''} {', '.join(missing)} of "
            f"{eom.name!r} ha{'ve' if len(missing) > 1 else 's'} no value; pass "
            f"compile(parameters={{{missing[0]!r}: ...}})"
        )
    out = {}
    for s, v in values.items():
        try:
            x = float(v)
        except (TypeError, ValueError) as exc:
            raise SymbolicError(f"compile: parameter {s.name} = {v!r} is not a number") from exc
        if not np.isfinite(x):
            raise SymbolicError(f"compile: parameter {s.name} = {v!r} is not finite")
        out[s] = sp.Integer(int(x)) if x == int(x) and abs(x) < 2**53 else sp.Float(x)
    return out


def lower(eom, parameters: dict | None = None, cse: bool = True, fold: bool = True,
          chart: bool = False) -> Lowered:
    """Fold parameters, run CSE over all outputs together, and order the definitions.

    ``fold=False`` keeps the parameters as symbols (to count operations as SymPy does;
    such a lowering is not compiled). ``chart=True`` (a tree whose chart is curved,
    :func:`chart_is_curved`): the chart's outputs of :func:`_chart_outputs` only, every
    other output empty — the module that ``ChartCompiledSystem`` builds on first use."""
    subs = _parameter_values(eom, parameters) if fold else {}
    values = {s.name: float(v) for s, v in subs.items()}
    # constant propagation through the intermediates, in their order
    defs: list[tuple[sp.Symbol, sp.Expr]] = []
    for s, e in eom.intermediates:
        e = _exact_integers(sp.sympify(e).xreplace(subs))
        if e.is_Number or e.is_Symbol:
            subs[s] = e
        else:
            defs.append((s, e))
    M = eom.mass_matrix.xreplace(subs).applyfunc(_exact_integers)
    n = M.shape[0]
    symmetric = all(M[r, c] == M[c, r] for r in range(n) for c in range(r))
    outputs = {
        "mass_matrix": [M[r, c] for r in range(n) for c in range(n) if c <= r or not symmetric],
        "forcing": [_exact_integers(e) for e in eom.forcing.xreplace(subs)],
        "qdot": [_exact_integers(e) for e in eom.qdot.xreplace(subs)],
        **_constraint_outputs(eom, subs),
    }
    T = getattr(eom, "kinetic_energy", None)
    V = getattr(eom, "potential_energy", None)
    if T is not None and V is not None:
        energy_kind = "split"
        outputs["energy"] = [sp.sympify(x).xreplace(subs) for x in (T + V, T, V)]
    elif eom.energy is not None:
        energy_kind = "total"
        outputs["energy"] = [sp.sympify(eom.energy).xreplace(subs)]
    else:
        energy_kind = "none"
        outputs["energy"] = []
    if getattr(eom, "index3", False):
        defs = defs + _index3_outputs(eom, defs, subs, outputs)
    elif chart:
        if not chart_is_curved(eom):
            raise SymbolicError(f"{eom.name!r}: the chart's outputs are for a tree whose "
                                "chart is curved (quaternions, or speeds other than q̇)")
        defs = defs + _chart_outputs(eom, defs, outputs)
        for k in outputs:
            if k not in ("qdot_jacobian", "kinetic_gradient"):
                outputs[k] = []
    defs = _reachable(defs, outputs)
    _check_symbols(eom, defs, outputs, () if fold else tuple(eom.parameters))
    _check_shapes(eom, outputs)
    names = list(outputs)
    flat = [e for _, e in defs] + [e for k in names for e in outputs[k]]
    if cse and flat:
        repl, flat = sp.cse(flat, symbols=sp.numbered_symbols("cse"), order="none",
                            optimizations=None)
    else:
        repl = []
    red_defs = [(s, flat[k]) for k, (s, _) in enumerate(defs)]
    pos = len(defs)
    for k in names:
        m = len(outputs[k])
        outputs[k] = flat[pos:pos + m]
        pos += m
    definitions = dict(repl)
    definitions.update(red_defs)
    order = _topological(definitions)
    _propagate_copies(definitions, order, outputs)
    _inline_single_use(definitions, order, outputs)
    return Lowered(eom, definitions, [s for s in order if s in definitions], outputs,
                   symmetric, energy_kind, values)


def chart_is_curved(eom) -> bool:
    """The chart q0 ⊕ ξ of these equations is not additive (quaternions, or speeds other
    than q̇) and they are a tree's: as many speeds as coordinates off the quaternions,
    nothing eliminated, not the index-3 form, the kinetic and the potential energy apart.
    Its velocity map W(q) v = (∂(q0 ⊕ ξ)/∂ξ) ξ̇ is then an exact square system, whose
    derivative needs ∂q̇/∂q, and the Hamiltonian methods ∂T/∂q (:func:`_chart_outputs`;
    :class:`~kanedyn.kane.codegen.runtime.ChartCompiledSystem`)."""
    if getattr(eom, "index3", False):
        return False
    if not eom.quaternions and list(eom.qdot) == list(eom.u):
        return False
    return (not eom.dependent_speeds and not getattr(eom, "q_dependent", [])
            and len(eom.q) - len(eom.quaternions) == len(eom.u)
            and getattr(eom, "kinetic_energy", None) is not None
            and getattr(eom, "potential_energy", None) is not None)


def _chart_outputs(eom, defs: list, outputs: dict) -> list:
    """The outputs of a tree whose chart is curved (:func:`chart_is_curved`) added to
    ``outputs``, and the definitions they need beyond ``defs``, both by the chain rule
    through the definitions (:func:`gradients`): ``qdot_jacobian`` ∂q̇/∂q (nq x nq,
    row-major), by which the chart's derivative is formed, and ``kinetic_gradient``
    ∂T/∂q at fixed u (nq; the index-3 form's output of that name), which the tangent
    ∂T/∂q = W(q)ᵀ ∂T/∂q of the Hamiltonian methods takes."""
    q = list(eom.q)
    new, K = gradients(defs, outputs["qdot"], q, prefix="dk")
    outputs["qdot_jacobian"] = [_exact_integers(e) for row in K for e in row]
    more, (dT,) = gradients(defs + new, [outputs["energy"][1]], q, prefix="dt")
    outputs["kinetic_gradient"] = [_exact_integers(e) for e in dT]
    return new + more


def _constraint_outputs(eom, subs: dict) -> dict:
    """The outputs of the eliminated constraints (empty lists for a system without them):
    the dependent speeds ``u_dep(q, u)``; the residuals ``g(q)`` of the configuration
    constraints and of the velocity constraints at those speeds; and ``∂g/∂q_dep``
    (l x l, row-major), the Newton matrix of the projection onto g(q) = 0, differentiated
    here since g is a plain expression in q (no intermediates)."""
    g = [sp.sympify(c) for c in getattr(eom, "configuration_constraints", [])]
    inter = {s for s, _ in eom.intermediates}
    for i, c in enumerate(g):
        if c.free_symbols & inter:
            raise SymbolicError(f"{eom.name!r}: configuration constraint {i} refers to "
                                "intermediates; it must be an expression in q and t")
    qdep = list(getattr(eom, "q_dependent", []))
    G = [c.diff(x) for c in g for x in qdep]

    def fold(exprs):
        return [_exact_integers(sp.sympify(e).xreplace(subs)) for e in exprs]

    return {
        "dependent_speeds": fold(eom.dependent_speeds.values()),
        "configuration_residual": fold(g),
        "velocity_residual": fold(getattr(eom, "velocity_constraints", [])),
        "configuration_jacobian": fold(G),
    }


def _index3_outputs(eom, defs: list, subs: dict, outputs: dict) -> list:
    """The outputs of the index-3 form (``eom.index3``; :func:`kanedyn.kane.index3_equations`)
    added to ``outputs``, and the definitions they need beyond ``defs``:

    - ``kinetic_gradient`` ∂T/∂q at fixed u and ``potential_gradient`` ∂V/∂q, by the chain
      rule through the definitions (forward mode, :func:`gradients`: each derivative of a
      definition bound to a new one, nothing expanded);
    - ``constraint_jacobian`` ∂g/∂q (l x nq, row-major) and ``constraint_bias``
      γ = −(∂(G u)/∂q) u, the right side of G u̇ = γ (g is a plain expression in q);
    - ``nonconservative_forces`` F_nc (``eom.nonconservative_forces``): Kane's F_r of the
      loads that are not in V (dampers, motors, inputs), so that
      forcing = ∂T/∂q − (∂(M u)/∂q) u − ∂V/∂q + F_nc."""
    if outputs["energy"] == [] or len(outputs["energy"]) != 3:
        raise SymbolicError(f"{eom.name!r}: the index-3 form needs the kinetic and the "
                            "potential energy separately")
    _, T, V = outputs["energy"]
    q = list(eom.q)
    new, (dT, dV) = gradients(defs, [T, V], q)
    g = [_exact_integers(sp.sympify(c).xreplace(subs)) for c in eom.configuration_constraints]
    G = [[c.diff(x) for x in q] for c in g]
    u = list(eom.u)
    gam = []
    for row in G:
        Gu = sum((a * b for a, b in zip(row, u, strict=True)), sp.S.Zero)
        gam.append(_exact_integers(sp.expand(-sum((Gu.diff(x) * w for x, w
                                                   in zip(q, u, strict=True)), sp.S.Zero))))
    outputs["kinetic_gradient"] = dT
    outputs["potential_gradient"] = dV
    outputs["constraint_jacobian"] = [_exact_integers(e) for row in G for e in row]
    outputs["constraint_bias"] = gam
    Fnc = getattr(eom, "nonconservative_forces", None)
    if Fnc is None:
        raise SymbolicError(f"{eom.name!r}: the index-3 form needs its non-conservative "
                            "forces (kane.index3_equations keeps them)")
    outputs["nonconservative_forces"] = [_exact_integers(sp.sympify(f).xreplace(subs))
                                         for f in Fnc]
    return new


def gradients(defs: list, exprs: list, variables: list, prefix: str = "d") -> tuple:
    """∂e/∂x of each expression e of ``exprs`` for each of ``variables``, through the
    straight-line ``defs`` [(symbol, expression), ...] in evaluation order (forward mode:
    ``ds/dx = ∂e_s/∂x + Σ_y ∂e_s/∂y · dy/dx`` over the definitions y that e_s uses). The
    derivative of a definition is bound to a new symbol (``d_<x>_<s>``) unless it is a
    number or a symbol; returns (the new definitions in order, [[∂e/∂x for x] for e])."""
    need = {s for s, _ in _reachable(defs, {"exprs": exprs})}
    taken = {str(s) for s, _ in defs} | {str(x) for x in variables}
    rates: dict = {}          # definition -> {variable index: derivative}
    new = []

    def derivative(e, k):
        fs = free_symbols(e)
        parts = [e.diff(variables[k])] if variables[k] in fs else []
        parts += [e.diff(y) * rates[y][k] for y in sorted(fs, key=str)
                  if y in rates and k in rates[y]]
        return sp.Add(*parts) if parts else sp.S.Zero

    for s, e in defs:
        if s not in need:
            continue
        row = {}
        for k, x in enumerate(variables):
            d = derivative(e, k)
            if d == 0:
                continue
            if not (d.is_Symbol or d.is_Number):
                name = f"{prefix}_{x}_{s}"
                while name in taken:
                    name += "_"
                taken.add(name)
                sym = sp.Symbol(name)
                new.append((sym, d))
                d = sym
            row[k] = d
        if row:
            rates[s] = row
    return new, [[derivative(e, k) for k in range(len(variables))] for e in exprs]


def _reachable(defs: list, outputs: dict) -> list:
    """The definitions the outputs use (an intermediate kept for another purpose, e.g. a
    reaction in u̇ exposed through an auxiliary speed, is not compiled)."""
    by_symbol = dict(defs)
    need: set = set()
    stack = [s for exprs in outputs.values() for e in exprs for s in free_symbols(e)]
    while stack:
        s = stack.pop()
        if s in need or s not in by_symbol:
            continue
        need.add(s)
        stack.extend(free_symbols(by_symbol[s]))
    return [(s, e) for s, e in defs if s in need]


def _exact_integers(e):
    """Floats with integral values as integers: ``1.0*x`` is then ``x``, one operation less."""
    if not isinstance(e, sp.Basic):
        return e
    f = {x: sp.Integer(int(x)) for x in e.atoms(sp.Float) if float(x).is_integer()}
    return e.xreplace(f) if f else e


def _propagate_copies(definitions: dict, order: list, outputs: dict) -> None:
    """Remove definitions that CSE left as a bare symbol or number (``a = b``), replacing
    them where used; like terms then combine (``x a + x b → 2 x b``)."""
    alias: dict = {}
    for s in order:
        e = definitions[s]
        if alias and free_symbols(e) & alias.keys():
            e = definitions[s] = _exact_integers(e.xreplace(alias))
        if e.is_Symbol or e.is_Number:
            alias[s] = e
            del definitions[s]
    if alias:
        for k, exprs in outputs.items():
            outputs[k] = [_exact_integers(e.xreplace(alias)) if isinstance(e, sp.Basic) else e
                          for e in exprs]


def _inline_single_use(definitions: dict, order: list, outputs: dict) -> None:
    """Substitute every definition used exactly once into its user.

    The operation count is (up to sympy distributing a number over an inlined sum)
    unchanged, but there are fewer statements: numba's compile time grows with the
    number of statements."""
    order = [s for s in order if s in definitions]
    uses: dict = {}
    for s in order:
        for d in free_symbols(definitions[s]):
            if d in definitions:
                uses[d] = uses.get(d, 0) + 1
    for exprs in outputs.values():
        for e in exprs:
            for d in free_symbols(e):
                if d in definitions:
                    uses[d] = uses.get(d, 0) + 1
    single = {d for d, n in uses.items() if n == 1}
    # in evaluation order, so a chain of single uses folds into its last user
    for s in order:
        e = definitions[s]
        sub = {d: definitions.pop(d) for d in free_symbols(e) & single if d in definitions}
        if sub:
            definitions[s] = e.xreplace(sub)
    for k, exprs in outputs.items():
        outputs[k] = [e.xreplace({d: definitions.pop(d) for d in free_symbols(e) & single
                                  if d in definitions}) if isinstance(e, sp.Basic) else e
                      for e in exprs]


def _check_symbols(eom, defs, outputs, extra=()) -> None:
    known = set(eom.q) | set(eom.u) | set(eom.inputs) | {eom.t} | {s for s, _ in defs}
    known |= set(extra)
    for k, exprs in [("intermediates", [e for _, e in defs])] + list(outputs.items()):
        for e in exprs:
            bad = free_symbols(e) - known
            if bad:
                raise SymbolicError(
                    f"compile: {k} of {eom.name!r} contain{'s' if k != 'intermediates' else ''} "
                    f"{', '.join(sorted(s.name for s in bad))}, which is no coordinate, speed, "
                    "input, time or parameter (add it to eom.parameters with a value)"
                )


def _check_shapes(eom, outputs) -> None:
    nu = len(eom.u)
    if eom.mass_matrix.shape != (nu, nu) or eom.forcing.shape != (nu, 1):
        raise SymbolicError(
            f"{eom.name!r}: mass_matrix is {eom.mass_matrix.shape} and forcing "
            f"{eom.forcing.shape}, expected ({nu}, {nu}) and ({nu}, 1)"
        )
    if eom.qdot.shape != (len(eom.q), 1):
        raise SymbolicError(f"{eom.name!r}: qdot is {eom.qdot.shape}, expected ({len(eom.q)}, 1)")
    speedy = set(eom.u) | set(eom.inputs)
    for s in _deps(outputs["mass_matrix"], {s: e for s, e in eom.intermediates}):
        if s in speedy:
            raise SymbolicError(
                f"{eom.name!r}: the mass matrix depends on {s.name}; M must be a function of "
                "q and t only"
            )


def _deps(exprs, defs) -> set:
    """Leaf symbols the expressions depend on through the definitions."""
    seen, leaves = set(), set()
    stack = [s for e in exprs for s in free_symbols(e)]
    while stack:
        s = stack.pop()
        if s in seen:
            continue
        seen.add(s)
        if s in defs:
            stack.extend(free_symbols(defs[s]))
        else:
            leaves.add(s)
    return leaves


def _topological(definitions: dict) -> list:
    """Definitions in an order where each follows all it uses (iterative depth first).

    Dependencies are visited sorted by name, so the order — and the generated source,
    whose hash names the cached module — does not depend on Python's hash seed."""
    def deps(s):
        return iter(sorted((d for d in free_symbols(definitions[s]) if d in definitions), key=str))

    order, seen = [], set()
    for root in definitions:
        if root in seen:
            continue
        stack = [(root, deps(root))]
        seen.add(root)
        while stack:
            s, it = stack[-1]
            for d in it:
                if d not in seen:
                    seen.add(d)
                    stack.append((d, deps(d)))
                    break
            else:
                stack.pop()
                order.append(s)
    return order


def operation_count(eom, which=("mass_matrix", "forcing"), parameters=None) -> int:
    """Operations (``sympy.count_ops``) of the CSE'd code computing ``which``."""
    return lower(eom, parameters).operation_count(which)

