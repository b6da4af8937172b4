"""Linearization of Kane's equations about an operating point.

The equations ``q̇ = f_q(q, u)``, ``M(q) u̇ = f_u(q, u, r)`` (u the independent
speeds: dependent speeds are already eliminated by :func:`kanes_equations`)
give, for the state ``x = [q; u]`` and inputs r, ``δẋ = A δx + B δr`` with

    A = [ ∂f_q/∂q                        ∂f_q/∂u      ]
        [ M⁻¹ (∂f_u/∂q − ∂(M w)/∂q)       M⁻¹ ∂f_u/∂u  ],   w = M⁻¹ f_u (fixed),
    B = [ 0 ; M⁻¹ ∂f_u/∂r ],

all evaluated at the operating point. The term ``∂(M w)/∂q`` with ``w = u̇₀``
held fixed is the derivative of M⁻¹ (∂M⁻¹ = −M⁻¹ ∂M M⁻¹); it vanishes at an
equilibrium but not on a steady motion with u̇₀ ≠ 0. This is the form of
``sympy.physics.mechanics`` ``KanesMethod.linearize(A_and_B=True)``: the state
is ``[q_ind; u_ind]``.
"""

from __future__ import annotations

from collections.abc import Mapping

import sympy as sp
from sympy.core.function import AppliedUndef

from ..errors import SymbolicError
from .eom import EquationsOfMotion

__all__ = ["linearize"]


def _through(eom: EquationsOfMotion, expr) -> sp.Expr:
    """``expr`` with the intermediates it uses substituted (a single quantity)."""
    defs = dict(eom.intermediates)
    stack = [x for x in sp.sympify(expr).free_symbols if x in defs]
    seen = set()
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        stack.extend(y for y in defs[x].free_symbols if y in defs)
    env: dict = {}
    for s, e in eom.intermediates:
        if s in seen:
            env[s] = e.xreplace(env)
    return sp.sympify(expr).xreplace(env)


def _plain(key):
    if isinstance(key, AppliedUndef):
        return sp.Symbol(key.func.__name__)
    return key


def linearize(
    eom: EquationsOfMotion,
    op_point: Mapping,
    *,
    A_and_B: bool = True,
    simplify: bool = False,
):
    """Linearize ``eom`` about ``op_point`` ({q, u, input or parameter symbol: value}).

    Values may be numbers or expressions; symbols not given stay symbolic.
    Keys may be the plain symbols of ``eom`` or the dynamicsymbols they came
    from. Dependent speeds may be given too; they must satisfy the velocity
    constraints (SymPy's linearizer takes them), and are otherwise implied.
    Returns ``(A, B)`` for ``δẋ = A δx + B δr``, x = [q; u], r = ``eom.inputs``;
    with ``A_and_B=False`` the implicit form ``(M_x, A_x, B_x)``
    with ``M_x δẋ = A_x δx + B_x δr`` and ``M_x = diag(1, M)``.
    """
    op = {_plain(k): sp.sympify(v) for k, v in op_point.items()}
    states = list(eom.q) + list(eom.u)
    known = set(states) | set(eom.inputs) | set(eom.parameters)
    dependent = {k: op.pop(k) for k in list(op) if k in eom.dependent_speeds}
    for k in op:
        if k not in known:
            raise SymbolicError(
                f"operating point names {k}, which is not a coordinate, speed, input or "
                f"parameter of {eom.name!r}"
            )
    # dependent speeds follow from the others; a value given for one (as SymPy's
    # linearizer wants them) must agree with the velocity constraints
    for k, given in dependent.items():
        implied = _through(eom, eom.dependent_speeds[k]).xreplace(op)
        gap = sp.N(implied - given)
        if gap.is_number and abs(complex(gap)) > 1e-9 * (1 + abs(complex(sp.N(given)))):
            raise SymbolicError(
                f"operating point gives {k} = {given}, but the velocity constraints imply "
                f"{k} = {sp.N(implied, 12)}"
            )
    if eom.intermediates or eom.q_dependent:
        return _linearize_chain_rule(eom, op, A_and_B=A_and_B, simplify=simplify)
    nq, nu = len(eom.q), len(eom.u)
    M, f, fq = eom.mass_matrix, eom.forcing, eom.qdot
    # intermediates are in evaluation order: substituting the last first leaves
    # only earlier ones behind, so one reverse pass removes them all
    for sym, expr in reversed(eom.intermediates):
        M, f, fq = (m.subs(sym, expr) for m in (M, f, fq))

    M0 = M.subs(op)
    f0 = f.subs(op)
    udot0 = sp.Matrix(sp.symbols(f"_w0:{nu}"))
    Mw = M * udot0
    Jf_x = f.jacobian(states).subs(op)
    JMw_x = Mw.jacobian(states).subs(op)
    w_value = M0.LUsolve(f0)
    JMw_x = JMw_x.subs(dict(zip(udot0, w_value, strict=True)))
    A_u = Jf_x - JMw_x
    A_q = fq.jacobian(states).subs(op)
    r = list(eom.inputs)
    B_u = f.jacobian(r).subs(op) if r else sp.zeros(nu, 0)

    return _state_space(M0, A_q, A_u, B_u, nq, A_and_B=A_and_B, simplify=simplify)


def _linearize_chain_rule(eom: EquationsOfMotion, op: dict, *, A_and_B: bool, simplify: bool):
    """The same linearisation, with every derivative taken by the chain rule through
    ``eom.intermediates`` (:func:`~kanedyn.kane.intermediates.jacobian_at`): no
    expression is expanded. With configuration constraints g(q) = 0 the dependent
    coordinates are eliminated, ``δq_dep = P δq_ind`` with
    ``P = −(∂g/∂q_dep)⁻¹ ∂g/∂q_ind``, and the state is ``[q_ind; u]`` (as SymPy's
    ``KanesMethod.linearize``)."""
    from .intermediates import jacobian_at

    nq, nu = len(eom.q), len(eom.u)
    qdep = list(eom.q_dependent)
    qind = [x for x in eom.q if x not in qdep]
    g = sp.Matrix(eom.configuration_constraints)
    if qdep:
        _consistent_dependent_coordinates(eom, op, qind, qdep, g)
    states = list(eom.q) + list(eom.u)
    r = list(eom.inputs)
    variables = states + r
    M_flat = list(eom.mass_matrix)
    outputs = [*eom.forcing, *M_flat, *eom.qdot]
    values, J = jacobian_at(eom.intermediates, outputs, variables, op)
    f0 = sp.Matrix(values[:nu])
    M0 = sp.Matrix(nu, nu, values[nu:nu + nu * nu])
    Jf = J[:nu, :]
    JM = J[nu:nu + nu * nu, :]
    w = M0.LUsolve(f0)
    # ∂(M w)/∂x with w = M⁻¹ f held fixed
    JMw = sp.zeros(nu, len(variables))
    for i in range(nu):
        for j in range(nu):
            if w[j] != 0:
                JMw[i, :] += JM[i * nu + j, :] * w[j]
    Jx = Jf - JMw
    A_u = Jx[:, :nq + nu]
    B_u = Jx[:, nq + nu:]
    A_q = J[nu + nu * nu:, :nq + nu]
    if qdep:
        # δq_dep = P δq_ind: fold the dependent columns into the independent ones, drop
        # the dependent rows
        iq = [eom.q.index(x) for x in qind]
        idq = [eom.q.index(x) for x in qdep]
        Gq = g.jacobian(eom.q).xreplace(op)
        Gd, Gi = Gq[:, idq], Gq[:, iq]
        P = -Gd.LUsolve(Gi)
        cols_u = list(range(nq, nq + nu))

        def fold(Amat):
            return Amat[:, iq] + Amat[:, idq] * P, Amat[:, cols_u]

        aq, au = fold(A_q)
        A_q = aq.row_join(au)[iq, :]
        aq, au = fold(A_u)
        A_u = aq.row_join(au)
    return _state_space(M0, A_q, A_u, B_u, len(qind), A_and_B=A_and_B, simplify=simplify)


def _state_space(M0, A_q, A_u, B_u, nq: int, *, A_and_B: bool, simplify: bool):
    """The linearised equations of the state x = [q; u] (nq coordinates) from the rows
    ``q̇ = A_q x`` and ``M0 u̇ = A_u x + B_u r``: the implicit form
    ``(M_x, A_x, B_x)`` with ``M_x = diag(1, M0)``, or explicit ``(A, B)`` with ``M0``
    solved (SymPy's ``KanesMethod.linearize`` returns the same two forms)."""
    nr = B_u.shape[1]
    if not A_and_B:
        return (sp.diag(sp.eye(nq), M0), A_q.col_join(A_u),
                sp.zeros(nq, nr).col_join(B_u))
    A = A_q.col_join(M0.LUsolve(A_u))
    B = sp.zeros(nq, nr).col_join(M0.LUsolve(B_u)) if nr else sp.zeros(nq + M0.shape[0], 0)
    if simplify:
        A, B = A.applyfunc(sp.simplify), B.applyfunc(sp.simplify)
    return A, B


def _consistent_dependent_coordinates(eom, op: dict, qind, qdep, g) -> None:
    """The dependent coordinates at the operating point: given ones must satisfy
    g(q) = 0; missing ones are solved for (Newton, from 0) when the rest is numeric."""
    missing = [x for x in qdep if x not in op]
    if missing:
        rest = g.xreplace(op)
        if not rest.free_symbols <= set(missing):
            raise SymbolicError(
                f"operating point: the dependent coordinates {', '.join(map(str, missing))} "
                "are not given and cannot be solved for: the configuration constraints "
                f"still contain {', '.join(sorted(map(str, rest.free_symbols - set(missing))))}")
        sol = sp.nsolve(list(rest), missing, [0.0] * len(missing))
        op.update({x: sp.Float(v) for x, v in zip(missing, sol, strict=True)})
    gap = g.xreplace(op)
    if all(x.is_number for x in gap):
        res = max(abs(complex(sp.N(x))) for x in gap)
        if res > 1e-9:
            raise SymbolicError(
                f"operating point violates the configuration constraints by {res:.3g} "
                f"(|g(q)|; dependent coordinates {', '.join(map(str, qdep))}): give "
                "consistent coordinates, or leave the dependent ones out to have them solved")
