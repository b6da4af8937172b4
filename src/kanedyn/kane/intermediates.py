"""Straight-line symbolic programs: expressions bound to symbols, in evaluation order.

The general Kane derivation (:mod:`kanedyn.kane.equations`) never forms whole
expressions: every velocity, partial velocity, acceleration, mass-matrix entry and
constraint coefficient is expanded *locally* and bound to a symbol, as the tree
derivation (:mod:`kanedyn.kane.tree`) does. This module holds what that needs:

- :class:`Recorder` binds expressions to fresh symbols (hash-consed, never two
  expressions for one name, never a name the system already uses);
- :func:`solve_by_adjugate` solves a small linear system ``K x = b`` whose entries
  are symbols, ``x = adj(K) b / det K`` (Cramer's rule), with the determinant and
  each product bound: no division by a pivot that may vanish at special
  configurations (the upright bicycle), and no growth;
- :func:`evaluate` runs a program numerically (floats), for the generic-rank and
  does-no-work checks at random points;
- :func:`jacobian_at` differentiates outputs with respect to leaf variables by the
  chain rule through the program (forward mode, sparse), at an operating point:
  ``ds_k/dx = ∂e_k/∂x + Σ_j ∂e_k/∂s_j ds_j/dx``, never expanding the program.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import sympy as sp
from sympy.printing.pycode import PythonCodePrinter

from ..errors import SymbolicError

__all__ = ["Recorder", "evaluate", "jacobian_at", "program", "solve_by_adjugate"]


class Recorder:
    """Binds expressions to symbols in evaluation order (the program's intermediates).

    Each expression is expanded before it is bound (local simplification: terms of one
    entry combine and cancel; nothing larger is ever expanded), except that a sum inside
    a product or power is bound first and not multiplied out (``EXPAND_LIMIT``):
    distributing ``c (a + b)`` costs operations and the code generator's CSE cannot
    take them back. Numbers, bare symbols
    and ``c*x`` are returned unbound. Identical expressions (or negatives) share one
    symbol. ``reserved`` are names the system already uses (coordinates, speeds,
    parameters, inputs): a fresh symbol never takes one, so none can merge with it.
    """

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self.intermediates: list[tuple[sp.Symbol, sp.Expr]] = []
        self._seen: dict[sp.Expr, sp.Symbol] = {}
        self._names: set[str] = set(reserved)
        self.definitions: dict[sp.Symbol, sp.Expr] = {}
        #: local rewrites applied after each expansion, e.g. cos(q)² → 1 − sin(q)²
        self.pythagoras: dict = {}
        self._rates: dict = {}
        self._atomized: dict = {}

    def fresh(self, name: str) -> sp.Symbol:
        while name in self._names:
            name += "_"
        self._names.add(name)
        return sp.Symbol(name)

    def define(self, symbol: sp.Symbol, expr) -> None:
        """Bind ``expr`` to a given (reserved) symbol, e.g. a dependent speed."""
        expr = sp.expand(sp.sympify(expr))
        self.intermediates.append((symbol, expr))
        self.definitions[symbol] = expr

    def _atomize(self, e, name: str):
        """Bind every non-polynomial node over a sum — ``sqrt(a + b)``, ``1/(a + b)`` —
        bottom up, so that the expansion that follows is of a polynomial in symbols and
        never multiplies such a node out (a normalised vector, a constraint solution)."""
        if not isinstance(e, sp.Basic) or e.is_Atom or not e.args:
            return e
        hit = self._atomized.get(e)
        if hit is None:
            # memoised: the kinematics' trees repeat their subtrees many times
            hit = self._atomized[e] = self._atomize_node(e, name)
        return hit

    def _atomize_node(self, e, name: str):
        args = [self._atomize(x, name) for x in e.args]
        if any(x is not y for x, y in zip(args, e.args, strict=True)):
            e = e.func(*args)
        if e.is_Pow and e.base.is_Add:
            if not (e.exp.is_Integer and e.exp > 0):
                base = self(e.base, f"{name}_b")
                return self._bind(sp.Pow(base, e.exp), f"{name}_p")
            if len(e.base.args) ** int(e.exp) > self.EXPAND_LIMIT:
                return sp.Pow(self(e.base, f"{name}_b"), e.exp)
        if e.is_Mul:
            sums = [a for a in e.args if a.is_Add]
            size = 1
            for a in sums:
                size *= len(a.args)
            if size > self.EXPAND_LIMIT:
                # multiplying these sums out would swell: bind them, keep the product
                return sp.Mul(*[self(a, f"{name}_f") if a.is_Add else a for a in e.args])
        return e

    #: products of sums with more terms than this when multiplied out are bound factor by
    #: factor instead of expanded. 1: a sum is never multiplied out (``c (a + b)`` stays a
    #: product of c and a bound sum): fewer operations than distributing (the Whipple
    #: bicycle's M and forcing after CSE: 2525 against 3810 at 4), cancellation still
    #: happens among the terms of each bound sum
    EXPAND_LIMIT = 1

    def __call__(self, expr, name: str) -> sp.Expr:
        expr = self._atomize(sp.sympify(expr), name)
        expr = sp.expand(expr)
        if self.pythagoras:
            replaced = expr.xreplace(self.pythagoras)
            if replaced is not expr:
                expr = sp.expand(replaced)
        return self._bind(expr, name)

    def _bind(self, expr, name: str) -> sp.Expr:
        if expr.is_Number or expr.is_Symbol:
            return expr
        if expr.is_Mul and len(expr.args) == 2 and expr.args[0].is_Number \
                and expr.args[1].is_Symbol:
            return expr
        hit = self._seen.get(expr)
        if hit is not None:
            return hit
        hit = self._seen.get(-expr)
        if hit is not None:
            return -hit
        s = self.fresh(name)
        self._seen[expr] = s
        self.intermediates.append((s, expr))
        self.definitions[s] = expr
        return s

    def seed_rates(self, rates: Mapping, known: Mapping) -> None:
        """Give intermediates their rate (for ``rates``) instead of deriving it."""
        self._rates.setdefault(id(rates), {}).update(known)

    def rate(self, expr, rates: Mapping):
        """``d expr/dt`` by the chain rule through the intermediates, each rate bound
        (memoised per intermediate): ``ṡ = Σ ∂e/∂x ẋ`` over the symbols x of its
        definition e, ``ẋ = rates[x]`` for a leaf (0 if not given: a parameter) and
        the intermediate's own rate otherwise. ``rates`` must be the same mapping
        object for every call that shares the memo (one per kind of rate)."""
        memo = self._rates.setdefault(id(rates), {})

        def symbol_rate(x):
            if x in self.definitions:
                if x not in memo:
                    memo[x] = self(walk(self.definitions[x]), f"{x.name}_dt")
                return memo[x]
            return rates.get(x, 0)

        def walk(e):
            # one pass over the tree (product rule term by term), not one derivative
            # per symbol: the definitions are expanded sums of products
            if e.is_Symbol:
                return symbol_rate(e)
            if e.is_Number:
                return 0
            if e.is_Add:
                return sp.Add(*[walk(a) for a in e.args])
            if e.is_Mul:
                terms = []
                for i, a in enumerate(e.args):
                    d = walk(a)
                    if d != 0:
                        terms.append(sp.Mul(*e.args[:i], d, *e.args[i + 1:]))
                return sp.Add(*terms)
            if e.is_Pow and e.exp.is_Number:
                d = walk(e.base)
                return 0 if d == 0 else e.exp * e.base ** (e.exp - 1) * d
            if isinstance(e, sp.sin):
                d = walk(e.args[0])
                return 0 if d == 0 else sp.cos(e.args[0]) * d
            if isinstance(e, sp.cos):
                d = walk(e.args[0])
                return 0 if d == 0 else -sp.sin(e.args[0]) * d
            return sp.Add(*[sp.diff(e, x) * symbol_rate(x) for x in e.free_symbols])

        return walk(sp.sympify(expr))

    def vec(self, v: Sequence, name: str) -> list:
        return [self(x, f"{name}_{'xyz'[k]}") for k, x in enumerate(v)]


def solve_by_adjugate(K: sp.Matrix, rhs: sp.Matrix, rec: Recorder, name: str,
                      det: sp.Expr | None = None):
    """``K⁻¹ rhs = adj(K) rhs / det K`` with the determinant and every entry bound.

    ``K`` is small (constraints, reactions) with symbol entries; the adjugate of such
    a matrix is a short polynomial in them. Returns ``(solution matrix, det symbol,
    adjugate)``; pass ``det`` (and reuse the adjugate through :func:`apply_adjugate`)
    to solve again with the same K."""
    m = K.rows
    if m == 1:
        adj = sp.Matrix([[1]])
        d = K[0, 0]
    else:
        adj = K.adjugate(method="berkowitz")
        d = (K[0, :] * adj[:, 0])[0, 0]
    adj = adj.applyfunc(lambda e: rec(e, f"{name}_adj"))
    d = rec(d, f"{name}_det") if det is None else det
    return apply_adjugate(adj, d, rhs, rec, name), d, adj


def apply_adjugate(adj: sp.Matrix, det, rhs: sp.Matrix, rec: Recorder, name: str) -> sp.Matrix:
    inv_det = rec(1 / det, f"{name}_inv") if not det.is_Number else 1 / det
    out = adj * rhs
    return out.applyfunc(lambda e: rec(e * inv_det, name))


# ----------------------------------------------------------------------------- numbers


class _FloatPrinter(PythonCodePrinter):
    def _print_Symbol(self, expr):
        return f"_v[{expr.name!r}]"


def _program(intermediates: Sequence, outputs: Sequence):
    """Python source of a straight-line program over ``_v`` (a dict by name)."""
    pr = _FloatPrinter({"fully_qualified_modules": True})
    lines = ["def _run(_v):"]
    for s, e in intermediates:
        lines.append(f"    _v[{s.name!r}] = {pr.doprint(e)}")
    lines.append("    return [" + ", ".join(pr.doprint(e) for e in outputs) + "]")
    return "\n".join(lines)


def program(intermediates: Sequence, outputs: Sequence):
    """A Python function ``f(values) -> array`` of the outputs, ``values`` a mapping
    {symbol: float}: the intermediates run in order, in plain floats (``math``). For
    checks and tests; compiled code is :meth:`EquationsOfMotion.compile`."""
    ns = {"math": math}
    exec(_program(intermediates, outputs), ns)  # noqa: S102 - our own generated code
    run = ns["_run"]

    def f(values: Mapping) -> np.ndarray:
        env = {k.name: float(v) for k, v in values.items()}
        return np.array([complex(x).real if isinstance(x, complex) else float(x)
                         for x in run(env)], dtype=float)
    return f


def evaluate(intermediates: Sequence, outputs: Sequence, values: Mapping) -> np.ndarray:
    """The outputs at ``values`` ({symbol: float}), the intermediates run in order.
    Raises ValueError or ZeroDivisionError outside the domain (callers draw again)."""
    return program(intermediates, outputs)(values)


def random_evaluate(intermediates: Sequence, outputs: Sequence, leaves: Iterable,
                    seed: int = 20261203, fixed: Mapping | None = None) -> np.ndarray:
    """The outputs at a random point of the leaves (drawn in shrinking ranges until the
    program is real and finite there)."""
    rng = np.random.default_rng(seed)
    leaves = sorted(set(leaves), key=str)
    for low, high in ((0.3, 1.3), (0.05, 0.6), (0.01, 0.1), (0.001, 0.01)):
        vals = {s: float(rng.uniform(low, high)) for s in leaves}
        vals.update(fixed or {})
        try:
            out = evaluate(intermediates, outputs, vals)
        except (ValueError, ZeroDivisionError, OverflowError, TypeError):
            continue
        if np.all(np.isfinite(out)):
            return out
    raise SymbolicError("cannot evaluate the equations at random real points (complex or "
                        "infinite everywhere tried)")


# ----------------------------------------------------------------------------- derivatives


def jacobian_at(intermediates: Sequence, outputs: Sequence, variables: Sequence,
                point: Mapping):
    """``(values, J)``: the outputs and ``J[i, k] = d output_i / d variables_k`` at
    ``point`` ({symbol: value}, values numbers or expressions), by the chain rule
    through the intermediates (forward mode; gradients kept sparse).

    Symbols not in ``point`` stay symbolic. Each intermediate is differentiated
    locally (it is short) and the derivative evaluated at the point at once, so no
    expression larger than one intermediate is ever differentiated."""
    var_index = {v: k for k, v in enumerate(variables)}
    defined = {s for s, _ in intermediates}
    leaves = set()
    for _s, e in intermediates:
        leaves |= e.free_symbols
    for e in outputs:
        leaves |= sp.sympify(e).free_symbols
    leaves -= defined
    if all(x in point and sp.sympify(point[x]).is_number for x in leaves):
        return _jacobian_floats(intermediates, outputs, var_index, point)
    env = dict(point)                 # symbol -> value at the point
    grad: dict = {}                   # intermediate symbol -> {k: d/dx_k}

    def local(e):
        """value and sparse gradient of an expression in leaves and intermediates"""
        e = sp.sympify(e)
        g: dict = {}
        for f in e.free_symbols:
            if f in var_index or f in grad:
                d = sp.diff(e, f).xreplace(env)
                if d == 0:
                    continue
                if f in var_index:
                    k = var_index[f]
                    g[k] = g.get(k, 0) + d
                else:
                    for k, dk in grad[f].items():
                        g[k] = g.get(k, 0) + d * dk
        return e.xreplace(env), g

    for s, e in intermediates:
        val, g = local(e)
        env[s] = val
        grad[s] = g
    values, J = [], sp.zeros(len(outputs), len(variables))
    for i, e in enumerate(outputs):
        val, g = local(e)
        values.append(val)
        for k, d in g.items():
            J[i, k] = d
    return values, J


def _jacobian_floats(intermediates, outputs, var_index, point):
    """:func:`jacobian_at` at a numeric point: forward mode in floats on the expression
    trees (value and sparse gradient per node), no symbolic derivative formed."""
    val: dict = {}
    grad: dict = {}
    for x, v in point.items():
        x = sp.sympify(x)
        val[x] = complex(sp.N(v)).real
        if x in var_index:
            grad[x] = {var_index[x]: 1.0}

    def add_into(g, h, c=1.0):
        for k, d in h.items():
            g[k] = g.get(k, 0.0) + c * d

    def ev(e):
        if e.is_Symbol:
            return val[e], grad.get(e, {})
        if e.is_Number:
            return float(e), {}
        if e.is_Add:
            v, g = 0.0, {}
            for a in e.args:
                va, ga = ev(a)
                v += va
                add_into(g, ga)
            return v, g
        if e.is_Mul:
            parts = [ev(a) for a in e.args]
            vals = [p[0] for p in parts]
            n = len(vals)
            prefix = [1.0] * (n + 1)
            for i in range(n):
                prefix[i + 1] = prefix[i] * vals[i]
            suffix = 1.0
            g: dict = {}
            for i in range(n - 1, -1, -1):
                if parts[i][1]:
                    add_into(g, parts[i][1], prefix[i] * suffix)
                suffix *= vals[i]
            return prefix[n], g
        if e.is_Pow and e.exp.is_Number:
            vb, gb = ev(e.base)
            n = float(e.exp)
            v = vb ** n
            return v, ({k: n * vb ** (n - 1) * d for k, d in gb.items()} if gb else {})
        if isinstance(e, (sp.sin, sp.cos)):
            va, ga = ev(e.args[0])
            if isinstance(e, sp.sin):
                return math.sin(va), {k: math.cos(va) * d for k, d in ga.items()}
            return math.cos(va), {k: -math.sin(va) * d for k, d in ga.items()}
        # anything else: its local symbolic derivatives, evaluated
        subs = {x: sp.Float(val[x]) for x in e.free_symbols}
        v = float(e.xreplace(subs))
        g: dict = {}
        for x in e.free_symbols:
            if grad.get(x):
                add_into(g, grad[x], float(sp.diff(e, x).xreplace(subs)))
        return v, g

    for s, e in intermediates:
        val[s], grad[s] = ev(e)
    values, J = [], np.zeros((len(outputs), len(var_index)))
    for i, e in enumerate(outputs):
        v, g = ev(sp.sympify(e))
        values.append(sp.Float(v))
        for k, d in g.items():
            J[i, k] = d
    return values, sp.Matrix(J)
