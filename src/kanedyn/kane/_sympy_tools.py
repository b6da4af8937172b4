"""SymPy utilities of the general Kane derivation (private).

The measure numbers of :mod:`sympy.physics.vector` are trees in which one
subexpression recurs many times; the functions here visit each distinct
subexpression once (leaves, exact-node replacement, float evaluation). The
:class:`_Sampler` evaluates matrices at random real points, which the kinematics
use to check generic rank and affinity without symbolic determinants;
:func:`_linear_coefficients` splits expressions linear in some variables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import sympy as sp
from sympy.core.function import AppliedUndef
from sympy.physics.vector import Vector, dynamicsymbols

from ..errors import SymbolicError

t = dynamicsymbols._t


def _is_dynamicsymbol(s) -> bool:
    return isinstance(s, AppliedUndef) and s.args == (t,)


def _name(s) -> str:
    return s.func.__name__ if isinstance(s, AppliedUndef) else str(s)


def _leaves(exprs, types=(sp.Symbol, AppliedUndef, sp.Derivative)) -> set:
    """The subexpressions of ``exprs`` of ``types`` (not entered), each distinct
    subexpression visited once (``atoms`` walks every occurrence of a shared one)."""
    out: set = set()
    seen: set = set()
    stack = [sp.sympify(e) for e in exprs]
    while stack:
        e = stack.pop()
        if e in seen:
            continue
        seen.add(e)
        if isinstance(e, types):
            out.add(e)
        else:
            stack.extend(e.args)
    return out


def _free_dynamicsymbols(expr) -> set:
    return _leaves([expr], AppliedUndef)


def _vector_free_dynamicsymbols(vec: Vector) -> set:
    return _leaves([x for measures, _frame in vec.args for x in measures], AppliedUndef)


def _vector_map(vec: Vector, fn) -> Vector:
    """Apply ``fn`` to every measure number of ``vec`` (kept in its frames)."""
    return Vector([(measures.applyfunc(fn), frame) for measures, frame in vec.args])


def _xreplace_shared(e, rule: Mapping, memo: dict):
    """``e.xreplace(rule)`` visiting each distinct subexpression once.

    The measure numbers of sympy.physics.vector are trees in which one subexpression
    (a leg's length, a normalised direction) recurs many times; ``xreplace`` walks every
    occurrence, this walks the distinct ones (``memo``: node → result, shared by all
    the expressions replaced with the same rule)."""
    hit = rule.get(e)
    if hit is not None:
        return hit
    if not e.args:
        return e
    hit = memo.get(e)
    if hit is None:
        args = [_xreplace_shared(a, rule, memo) for a in e.args]
        hit = e.func(*args) if any(a is not b for a, b in zip(args, e.args, strict=True)) \
            else e
        memo[e] = hit
    return hit


def _vector_xreplace(vec: Vector, rule: dict) -> Vector:
    """Exact-node replacement on the measure numbers. ``subs`` is far slower and
    is not needed: q̇ and u̇ appear as ``Derivative(q(t), t)`` nodes."""
    memo: dict = {}
    return _vector_map(vec, lambda e: _xreplace_shared(e, rule, memo))


#: math functions for the float evaluation of sampled expressions
_FLOAT_FUNCTIONS = {sp.sin: math.sin, sp.cos: math.cos, sp.tan: math.tan, sp.exp: math.exp,
                    sp.log: math.log, sp.asin: math.asin, sp.acos: math.acos,
                    sp.atan: math.atan, sp.sinh: math.sinh, sp.cosh: math.cosh,
                    sp.tanh: math.tanh, sp.Abs: abs, sp.atan2: math.atan2}


def _float_value(e, values: Mapping, memo: dict) -> float:
    """``e`` at ``values`` ({symbol, q(t) or q'(t): float}) in floats, each distinct
    subexpression once. Outside the real domain (a negative base to a fractional
    power, a division by zero) it raises ValueError or ZeroDivisionError."""
    hit = values.get(e)              # a symbol, q(t) or a derivative q'(t) (not entered)
    if hit is not None:
        return hit
    hit = memo.get(e)
    if hit is not None:
        return hit
    if e.is_Number:
        x = float(e)
    elif e.is_Add:
        x = math.fsum(_float_value(a, values, memo) for a in e.args)
    elif e.is_Mul:
        x = 1.0
        for a in e.args:
            x *= _float_value(a, values, memo)
    elif e.is_Pow:
        x = math.pow(_float_value(e.base, values, memo), _float_value(e.exp, values, memo))
    elif e.func in _FLOAT_FUNCTIONS:
        x = _FLOAT_FUNCTIONS[e.func](*[_float_value(a, values, memo) for a in e.args])
    elif e.is_NumberSymbol:
        x = float(e)
    else:                            # anything else: SymPy's own evaluation of this node
        sub = {a: _float_value(a, values, memo) for a in e.args}
        x = complex(e.xreplace(sub).evalf())
        if x.imag != 0:
            raise ValueError("complex value")
        x = x.real
    memo[e] = x
    return x


class _Sampler:
    """Random numeric values for every symbol of an expression, to test
    generic rank (singular Y, dependent constraints) without symbolic
    determinants, which swell."""

    def __init__(self, seed: int = 20261201) -> None:
        self.rng = np.random.default_rng(seed)
        self.values: dict = {}

    def evaluate(self, matrix: sp.Matrix) -> np.ndarray:
        atoms = _leaves(matrix)
        for low, high in ((0.3, 1.3), (0.05, 0.6), (0.01, 0.1), (0.001, 0.01)):
            for a in sorted(atoms, key=str):
                if a not in self.values:
                    self.values[a] = float(self.rng.uniform(low, high))
            # in floats, each distinct subexpression once (a derivative q'(t) is looked up
            # as a whole, so q(t) inside it is not replaced first)
            memo: dict = {}
            try:
                out = np.array([_float_value(e, self.values, memo) for e in matrix],
                               dtype=float).reshape(matrix.shape)
            except (TypeError, ValueError, ZeroDivisionError, OverflowError):
                out = None                        # complex or infinite: outside the domain
            if out is not None and np.all(np.isfinite(out)):
                return out
            # e.g. sqrt(1 − q²) or acos(q): draw again, nearer the origin
            self.values = {}
        raise SymbolicError(
            "cannot evaluate an expression at random real points to check its rank or "
            f"linearity (complex or infinite everywhere tried): {sp.sstr(matrix)[:200]}"
        )


def _linear_coefficients(exprs: Sequence, variables: Sequence, what: str, label: str):
    """``exprs = K · variables + rest``; error naming ``what`` if not linear."""
    exprs = sp.Matrix(list(exprs))
    dummies = [sp.Dummy(_name(v)) for v in variables]
    to_dummy = dict(zip(variables, dummies, strict=True))
    e = exprs.xreplace(to_dummy)
    K = e.jacobian(dummies)
    for i in range(K.rows):
        bad = [v for v, d in zip(variables, dummies, strict=True) if K[i, :].has(d)]
        if bad:
            raise SymbolicError(
                f"{what} {i} ({sp.sstr(exprs[i])}) is not linear in {label}: "
                f"its coefficients contain {', '.join(map(str, bad))}"
            )
    rest = e.xreplace({d: 0 for d in dummies})
    back = {d: v for v, d in to_dummy.items()}
    return K.xreplace(back), rest.xreplace(back)
