"""Printing: a Lowered system → numpy, numba or C99 source (stage 2 of codegen).

Where it sits: frozen equations → lowering (``lowering.py``) → **printing** → building
(``build.py``) → compiled system (``runtime.py``).

This module fixes the interface of the generated code, the same in every language:
the functions of ``SIGNATURES`` (mass_matrix, forcing, dynamics, qdot, energy, the
eliminated constraints' dependent_speeds, residuals and configuration_jacobian; for
the index-3 form also those of ``INDEX3_SIGNATURES``, hamiltonian_terms and
constraint_rows; and a Cholesky forward_dynamics for numba and C), each writing into
output arrays named by ``OUTPUT_ARRAYS`` and returning a status (0; 1: an input is not
finite; 2 + k: quaternion group k is off unit norm by more than ``QUAT_TOL``; -1: M is not positive
definite). Each function loads the entries of q, u, tau it uses into locals, runs
the input checks (numba and C: inside the generated code; numpy: in the runtime),
evaluates the definitions its outputs need and stores the outputs; M is symmetric
when the lowering says so, and then its lower triangle is computed and mirrored.

C and numpy write every definition once (:func:`_segments`): grouped by the outputs
that need them (M alone, forcing alone, both, the energy too, ...) into segment
functions that mass_matrix, forcing, dynamics and energy call in turn, passing what
crosses a segment through a workspace; C cuts them further into short functions,
which gcc optimises in a fraction of the time one long straight line takes. numba
keeps one straight body per function, which it does not type statement by statement:
the definitions and stores are a *program* (:func:`_numba_program`) that the generated
module hands to ``numba_ir.straight_line``, an intrinsic building the LLVM IR directly
(numba's front end cost about a millisecond per operation, most of a large system's
compile time); the ``njit`` functions around it check the inputs and solve.

numpy code is vectorised over a leading batch axis (``q[..., k]``); numba code is
scalar and ``njit(cache=True)``; C is standalone C99 needing only ``<math.h>``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import sympy as sp
from sympy.printing.c import C99CodePrinter
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.pycode import PythonCodePrinter

from ...errors import SymbolicError
from .lowering import Lowered, free_symbols

__all__ = ["CHART_SIGNATURES", "INDEX3_SIGNATURES", "OUTPUT_ARRAYS", "QUAT_TOL", "SIGNATURES",
           "c_declarations", "c_source", "operation_counts", "python_source", "signatures"]

#: tolerance on the norm of a quaternion in q before it is an error (as the Model's joints)
QUAT_TOL = 1e-4


SIGNATURES = {
    # name: (inputs, outputs); forward_dynamics (numba and C) is written by hand below
    "mass_matrix": (("q", "t"), ("mass_matrix",)),
    "forcing": (("q", "u", "tau", "t"), ("forcing",)),
    "dynamics": (("q", "u", "tau", "t"), ("mass_matrix", "forcing")),
    "qdot": (("q", "u", "t"), ("qdot",)),
    "energy": (("q", "u", "t"), ("energy",)),
    # the eliminated constraints (empty for a system without them): u_dep(q, u); the
    # residuals g(q) and C(q) [u; u_dep] + D; ∂g/∂q_dep for the projection onto g = 0
    "dependent_speeds": (("q", "u", "t"), ("dependent_speeds",)),
    "residuals": (("q", "u", "t"), ("configuration_residual", "velocity_residual")),
    "configuration_jacobian": (("q", "t"), ("configuration_jacobian",)),
}
#: the functions of the index-3 form only (``eom.index3``, :func:`kanedyn.kane.index3_equations`):
#: ∂T/∂q at fixed u and ∂V/∂q; the full ∂g/∂q (l x nq, row-major) and γ of G u̇ = γ
INDEX3_SIGNATURES = {
    "hamiltonian_terms": (("q", "u", "t"), ("kinetic_gradient", "potential_gradient")),
    "constraint_rows": (("q", "u", "t"), ("constraint_jacobian", "constraint_bias")),
    # F_nc: Kane's F_r of the loads (and inputs) that are not in V
    "nonconservative_forces": (("q", "u", "tau", "t"), ("nonconservative_forces",)),
}
#: the functions of a tree whose chart is curved (quaternions, or speeds other than q̇:
#: :func:`~kanedyn.kane.codegen.lowering.chart_is_curved`), in a module of their own that
#: ChartCompiledSystem builds on first use (``lower(eom, chart=True)``): ∂q̇/∂q (nq x nq,
#: row-major), by which its chart_derivative differentiates the chart's velocity map,
#: and ∂T/∂q at fixed u (nq)
CHART_SIGNATURES = {"qdot_jacobian": (("q", "u", "t"), ("qdot_jacobian",)),
                    "kinetic_gradient": (("q", "u", "t"), ("kinetic_gradient",))}
OUTPUT_ARRAYS = {"mass_matrix": "M", "forcing": "F", "qdot": "qd", "energy": "E",
                 "dependent_speeds": "ud", "configuration_residual": "rg",
                 "velocity_residual": "rv", "configuration_jacobian": "Gq",
                 "kinetic_gradient": "dTq", "potential_gradient": "dVq",
                 "constraint_jacobian": "Gfull", "constraint_bias": "gb",
                 "nonconservative_forces": "Fnc", "qdot_jacobian": "Kq"}


def signatures(low: Lowered) -> dict:
    """The generated functions of ``low``: :data:`SIGNATURES`, and
    :data:`INDEX3_SIGNATURES` for the index-3 form, :data:`CHART_SIGNATURES` for the
    chart's lowering (``lower(eom, chart=True)``, whose other functions are empty)."""
    if getattr(low.eom, "index3", False):
        return {**SIGNATURES, **INDEX3_SIGNATURES}
    if "qdot_jacobian" in low.outputs:
        return {**SIGNATURES, **CHART_SIGNATURES}
    return SIGNATURES


def operation_counts(low: Lowered) -> dict[str, int]:
    """``sympy.count_ops`` of each generated function (the definitions it evaluates and
    its outputs), as the header of the generated source and ``CompiledSystem.counts``
    give them."""
    memo = low.__dict__.setdefault("_counts", {})  # the header and CompiledSystem ask alike
    if not memo:
        memo.update({f: low.operation_count(outs) for f, (_, outs) in signatures(low).items()})
    return dict(memo)


# --- the languages: a SymPy printer for the expressions, and the statements around them
class _Language:
    """The statements around the printed expressions (loads, definitions, stores, input
    checks, the header comment); this base writes scalar Python, the numba backend's.
    A mixin before the SymPy printer, so that its ``_print_Float`` wins."""

    checks_inputs = True  # the input checks are statements of the generated function

    def _print_Float(self, expr):
        return repr(float(expr))  # repr round-trips: the printed constant is the same double

    def element(self, arr: str, k: int) -> str:
        return f"{arr}[{k}]"

    def define(self, name: str, code: str) -> str:
        return f"{name} = {code}"

    def store(self, arr: str, k: int, code: str) -> str:
        return self.assign(self.element(arr, k), code)

    def assign(self, target: str, code: str) -> str:
        return f"{target} = {code}"

    def finite_check(self, arr: str, n: int) -> list[str]:
        return [f"for i in range({n}):", f"    if not math.isfinite({arr}[i]):",
                "        return 1"]

    def norm_check(self, g: int, norm: str) -> list[str]:
        return [f"nrm{g} = math.sqrt({norm})", f"if not abs(nrm{g} - 1.0) <= {QUAT_TOL!r}:",
                f"    return {2 + g}"]

    def comment(self, lines: list[str]) -> str:
        return "\n".join(f"# {x}".rstrip() for x in lines) + "\n"


class _ScalarPythonPrinter(_Language, PythonCodePrinter):
    """Scalar Python with ``math`` functions: the body of the numba backend's functions."""


class _NumpyPrinter(_Language, NumPyPrinter):
    """Vectorised over a leading batch axis; the runtime checks the inputs (numpy)."""

    checks_inputs = False

    def element(self, arr: str, k: int) -> str:
        return f"{arr}[..., {k}]"


class _CPrinter(_Language, C99CodePrinter):
    """C99 on plain double arrays, the checks as early returns of the status."""

    def define(self, name: str, code: str) -> str:
        return f"const double {name} = {code};"

    def assign(self, target: str, code: str) -> str:
        return f"{target} = {code};"

    def finite_check(self, arr: str, n: int) -> list[str]:
        return [f"for (int i = 0; i < {n}; ++i) if (!isfinite({arr}[i])) return 1;"]

    def norm_check(self, g: int, norm: str) -> list[str]:
        return [f"const double nrm{g} = sqrt({norm});",
                f"if (!(fabs(nrm{g} - 1.0) <= {QUAT_TOL!r})) return {2 + g};"]

    def comment(self, lines: list[str]) -> str:
        return "/*\n" + "\n".join(f" * {x}".rstrip() for x in lines) + "\n */\n"

    def _print_Pow(self, expr):
        b, e = expr.args
        if e.is_Integer and 2 <= int(e) <= 4:  # x*x beats pow() without -ffast-math
            return "(" + "*".join([self.parenthesize(b, 100)] * int(e)) + ")"
        return super()._print_Pow(expr)


def _input_checks(low: Lowered, printer, ins) -> tuple[list[str], dict]:
    """The input checks of one function (numba and C; none for numpy, whose runtime checks):
    status 1 if an entry of the inputs ``ins`` is not finite, 2 + k if quaternion group k is
    off unit norm by more than QUAT_TOL. Returns the lines and, per index of q in a
    quaternion, the division that normalises it (as the Model's joints do)."""
    eom = low.eom
    lines, quat_of = [], {}
    if not printer.checks_inputs:
        return lines, quat_of
    sizes = {"q": len(eom.q), "u": len(eom.u), "tau": len(eom.inputs)}
    for a in ins:
        if a in sizes and sizes[a]:
            lines += printer.finite_check(a, sizes[a])
    for g, (qi, _) in enumerate(eom.quaternions):  # every group, used or not
        lines += printer.norm_check(g, " + ".join(f"q[{k}] * q[{k}]" for k in qi))
        for k in qi:
            quat_of[k] = f" / nrm{g}"
    return lines, quat_of


def _leaf_loads(low: Lowered, used: set, printer, ins, checks: bool = True) -> list[str]:
    """Loads of q, u, tau entries into named locals, preceded by the input checks of
    :func:`_input_checks` (unless ``checks`` is false: q is then already normalised)."""
    eom = low.eom
    lines, quat_of = _input_checks(low, printer, ins) if checks else ([], {})
    for arr, syms in (("q", eom.q), ("u", eom.u), ("tau", eom.inputs)):
        for k, s in enumerate(syms):
            if s in used:
                scale = quat_of.get(k, "") if arr == "q" else ""
                lines.append(printer.define(_name(s), printer.element(arr, k) + scale))
    return lines


def _name(s: sp.Symbol) -> str:
    """A C/Python identifier for a symbol (intermediate names may hold any character)."""
    n = s.name
    if n.isidentifier() and n not in ("t", "q", "u", "tau", "out", *OUTPUT_ARRAYS.values()):
        return "k_" + n if n in _RESERVED else n
    return "s_" + hashlib.sha1(n.encode()).hexdigest()[:10]


_RESERVED = {"math", "numpy", "numba", "lambda", "if", "else", "for", "in", "is", "not",
             "and", "or", "def", "return", "double", "int", "const", "void", "float", "sin",
             "cos", "sqrt", "pow", "exp", "log", "abs", "fabs", "tan"}


def _rename(low: Lowered) -> dict:
    ren = {}
    for s in list(low.definitions) + list(low.eom.q) + list(low.eom.u) + list(low.eom.inputs):
        nm = _name(s)
        if nm != s.name:
            ren[s] = sp.Symbol(nm)
    if low.eom.t.name != "t":
        ren[low.eom.t] = sp.Symbol("t")
    return ren


def _stores(low: Lowered, key: str, printer, arr: str, ren: dict, which=None) -> list[str]:
    """The stores of the output ``key`` (its entries ``which``, default all) into the array
    ``arr``; a symmetric M has its lower triangle computed and mirrored."""
    n = len(low.eom.u)
    packed = [(r, c) for r in range(n) for c in range(r + 1)]
    lines = []
    for j in range(len(low.outputs[key])) if which is None else which:
        e = low.outputs[key][j]
        code = printer.doprint(e.xreplace(ren) if ren else e)
        if key == "mass_matrix" and low.symmetric:
            r, c = packed[j]
            lines.append(printer.store(arr, r * n + c, code))
            if r != c:
                lines.append(printer.store(arr, c * n + r, printer.element(arr, r * n + c)))
        else:
            lines.append(printer.store(arr, j, code))
    return lines


def _header(low: Lowered) -> list[str]:
    """The lines of the comment that opens every generated source."""
    eom = low.eom
    lines = [
        f"Generated by kanedyn from the equations of motion {eom.name!r}.",
        f"nq = {len(eom.q)}, nu = {len(eom.u)}, inputs = {len(eom.inputs)}; "
        "mass matrix: full nu x nu, row-major"
        + (" (symmetric: lower triangle computed, mirrored)." if low.symmetric else "."),
        "Operation counts (sympy.count_ops after common-subexpression elimination):",
    ]
    lines += [f"  {k}: {v}" for k, v in operation_counts(low).items()]
    if low.values:
        lines.append("Parameter values folded in: " + ", ".join(
            f"{k} = {v!r}" for k, v in sorted(low.values.items())))
    return lines


def python_source(low: Lowered, style: str) -> str:
    """A Python module with mass_matrix, forcing, dynamics, qdot, energy (and for numba a
    Cholesky forward_dynamics)."""
    if style == "numba":
        return _numba_source(low)
    printer = _NumpyPrinter()
    funcs = []
    # numpy: every definition once, in the blocks of _segments (uncut: a Python function's
    # length costs nothing), that mass_matrix, forcing, dynamics and energy share; the
    # runtime has checked and normalised the inputs
    segs, slots = _segments(low, 1 << 30)
    ren = _rename(low)
    for i, seg in enumerate(segs):
        lines = _segment_body(low, seg, slots, printer, ren) or ["pass"]
        funcs.append(f"def _segment{i}(q, u, tau, t, w, o):\n"
                     + "".join(f"    {x}\n" for x in lines))
    for f, (ins, outs) in signatures(low).items():
        calls = _calls(segs, outs)
        lines = [f"w = [None] * {len(slots)}"] if calls else []
        lines += [f"_segment{i}(q, {'u' if 'u' in ins else 'None'}, "
                  f"{'tau' if 'tau' in ins else 'None'}, t, w, "
                  f"{OUTPUT_ARRAYS[seg.key] if seg.key else 'None'})" for i, seg in calls]
        args = ", ".join(list(ins) + [OUTPUT_ARRAYS[k] for k in outs])
        funcs.append(f"def {f}({args}):\n" + "".join(f"    {x}\n" for x in lines)
                     + "    return 0\n")
    head = printer.comment(_header(low))
    # functools: SymPy's NumPy printer writes Max and Min as functools.reduce
    return head + "import functools\nimport math\n\nimport numpy\n\n\n" + "\n\n".join(funcs)


def _numba_source(low: Lowered) -> str:
    """The numba module: each function of ``SIGNATURES`` is ``njit(cache=True)`` code
    that checks its inputs, normalises the quaternions of q into a copy and calls one
    intrinsic (``numba_ir.straight_line``) built from the program of its definitions and
    stores (:func:`_numba_program`): numba types that as one call, and the arithmetic
    goes to LLVM without numba's per-statement front end (see ``numba_ir``)."""
    printer = _ScalarPythonPrinter()
    nq = len(low.eom.q)
    progs, funcs, bodies = [], [], {}
    for f, (ins, outs) in signatures(low).items():
        program = _numba_program(low, f)
        progs.append(f"_{f}_body = numba_ir.straight_line((\n"
                     + "".join(f"    {x!r},\n" for x in program) + "))\n")
        lines, quat_of = _input_checks(low, printer, ins)
        qa = "q"
        if quat_of and program:
            lines.append(f"qn = numpy.empty({nq})")
            lines += [f"qn[{k}] = q[{k}]{quat_of.get(k, '')}" for k in range(nq)]
            qa = "qn"
        if program:
            # every intrinsic takes (q, u, tau, t, o1, o2): an absent array is given q
            call = [qa] + [a if a in ins else qa for a in ("u", "tau")] + ["t"]
            call += [f"{{{OUTPUT_ARRAYS[k]}}}" for k in outs] + [qa] * (2 - len(outs))
            lines.append(f"_{f}_body({', '.join(call)})")
        bodies[f] = lines
        names = {OUTPUT_ARRAYS[k]: OUTPUT_ARRAYS[k] for k in outs}
        args = ", ".join(list(ins) + [OUTPUT_ARRAYS[k] for k in outs])
        funcs.append(f"@numba.njit(cache=True)\ndef {f}({args}):\n"
                     + "".join(f"    {x.format(**names)}\n" for x in lines) + "    return 0\n")
    # forward_dynamics evaluates dynamics' body itself (into M and udot) rather than calling
    # dynamics(): a call links the callee's LLVM module in and compiles it all over again
    fd = "".join(f"    {x.format(M='M', F='udot')}\n" for x in bodies["dynamics"])
    # the emitter's digest is part of the source, so of the module's cache name: a change
    # of numba_ir.py gives new modules instead of numba's cached code of the old emitter
    head = printer.comment(_header(low) + [f"numba_ir.py digest: {_numba_ir_digest()}"])
    imports = ("import math\n\nimport numpy\nimport numba\n\n"
               "from kanedyn.kane.codegen import numba_ir\n")
    eom = low.eom
    rk4 = (_NUMBA_RK4.replace("{QG}", repr([list(a) for a, _ in eom.quaternions]))
           .replace("{UG}", repr([list(b) for _, b in eom.quaternions]))
           .replace("{ADDITIVE}", repr(speeds_are_rates(eom))))
    return (head + imports + "\n\n" + "\n\n".join(progs + funcs) + "\n\n"
            + _NUMBA_FD.replace("{N}", str(len(low.eom.u))).replace("{DYNAMICS}\n", fd)
            + "\n" + rk4)


def speeds_are_rates(eom) -> bool:
    """q̇ = u exactly (no quaternions, speed i the rate of coordinate i): the chart is then
    q ⊕ ξ = q + ξ with v = ξ̇. Kane's speeds are freely chosen, so this is checked on the
    kinematic equations, not assumed from nq = nv."""
    return not eom.quaternions and list(eom.qdot) == list(eom.u)


def _numba_ir_digest() -> str:
    return hashlib.sha256(Path(__file__).with_name("numba_ir.py").read_bytes()).hexdigest()[:16]


def _numba_program(low: Lowered, func: str) -> list:
    """The instructions (``numba_ir``'s format) of the generated function ``func``: loads of
    the inputs it uses, its definitions, the stores of its outputs (a symmetric M: the
    lower triangle computed and stored on both sides). Arithmetic in the order the
    Python printer writes it (sums left to right, a product's denominator divided last)."""
    eom = low.eom
    ins, outs = signatures(low)[func]
    prog: list = []
    memo: dict = {}

    def emit(*ins_):
        prog.append(ins_)
        return len(prog) - 1

    leaves = {}
    for a, syms in ((0, eom.q), (1, eom.u), (2, eom.inputs)):
        leaves.update({s: ("ld", a, k) for k, s in enumerate(syms)})
    leaves[eom.t] = ("arg", 3)

    def product(factors):
        v = None
        for f in factors:
            x = value(f)
            v = x if v is None else emit("mul", v, x)
        return v

    def power(b, n: int):
        v = None
        for _ in range(n):  # as x*x*x: the C printer's order too (exponents 2-4)
            v = b if v is None else emit("mul", v, b)
        return v

    def value(e) -> int:
        r = memo.get(e)
        if r is not None:
            return r
        if e in leaves:
            r = emit(*leaves[e])
        elif e.is_Symbol:
            raise SymbolicError(f"numba program of {func}: {e} is neither an input nor a "
                                "definition")
        elif e.is_Number and e.is_finite:
            r = emit("c", float(e))
        elif e.is_Add:
            r = value(e.args[0])
            for term in e.args[1:]:
                c = term.as_coeff_Mul()[0]
                r = emit("sub", r, value(-term)) if c.is_negative else emit("add", r, value(term))
        elif e.is_Mul:
            c, rest = e.as_coeff_Mul()
            num, den = [], []
            for f in sp.Mul.make_args(rest):
                if f.is_Pow and f.exp.is_Integer and f.exp < 0:
                    den.append(f.base ** -f.exp)
                else:
                    num.append(f)
            if c not in (1, -1):
                num.insert(0, c)
            r = product(num) if num else emit("c", 1.0)
            if den:
                r = emit("div", r, product(den))
            if c == -1:
                r = emit("neg", r)
        elif e.is_Pow and e.exp.is_Integer and int(e.exp) > 0 and int(e.exp) <= 64:
            r = power(value(e.base), int(e.exp))
        elif e.is_Pow and e.exp.is_Integer and int(e.exp) < 0:
            r = emit("div", value(sp.Integer(1)), value(e.base ** -e.exp))
        elif e.is_Pow and e.exp == sp.S.Half:
            r = emit("fn", "sqrt", value(e.base))
        elif e.is_Pow and e.exp == -sp.S.Half:
            r = emit("div", value(sp.Integer(1)), emit("fn", "sqrt", value(e.base)))
        elif e.is_Pow:
            r = emit("pow", value(e.base), value(e.exp))
        elif e.func in _LLVM_UNARY:
            r = emit("fn", _LLVM_UNARY[e.func], value(e.args[0]))
        else:  # any other function: numba compiles its scalar Python (the old backend's code)
            syms = sorted(free_symbols(e), key=str)
            args = [sp.Symbol(f"a{k}") for k in range(len(syms))]
            code = _ScalarPythonPrinter().doprint(e.xreplace(dict(zip(syms, args, strict=True))))
            lam = f"lambda {', '.join(map(str, args))}: {code}"
            r = emit("py", lam, tuple(value(s) for s in syms))
        memo[e] = r
        return r

    for s in low.needed(outs):
        memo[s] = value(low.definitions[s])
    n = len(eom.u)
    packed = [(r, c) for r in range(n) for c in range(r + 1)]
    for a, key in zip((4, 5)[:len(outs)], outs, strict=True):
        for j, e in enumerate(low.outputs[key]):
            v = value(e)
            if key == "mass_matrix" and low.symmetric:
                r, c = packed[j]
                emit("st", a, r * n + c, v)
                if r != c:
                    emit("st", a, c * n + r, v)
            else:
                emit("st", a, j, v)
    return prog


_LLVM_UNARY = {sp.sin: "sin", sp.cos: "cos", sp.exp: "exp", sp.log: "log", sp.Abs: "fabs"}


_NUMBA_FD = '''@numba.njit(cache=True)
def forward_dynamics(q, u, tau, t, udot, work):
    """Solve M udot = F by Cholesky (M = L L^T). Returns -1 if M is not positive definite,
    or the status of dynamics()."""
    n = {N}
    M = work[: n * n]
{DYNAMICS}
    for j in range(n):
        d = M[j * n + j]
        for k in range(j):
            d -= M[j * n + k] * M[j * n + k]
        if not d > 0.0:
            return -1
        d = math.sqrt(d)
        M[j * n + j] = d
        for i in range(j + 1, n):
            s = M[i * n + j]
            for k in range(j):
                s -= M[i * n + k] * M[j * n + k]
            M[i * n + j] = s / d
    for i in range(n):
        s = udot[i]
        for k in range(i):
            s -= M[i * n + k] * udot[k]
        udot[i] = s / M[i * n + i]
    for i in range(n - 1, -1, -1):
        s = udot[i]
        for k in range(i + 1, n):
            s -= M[k * n + i] * udot[k]
        udot[i] = s / M[i * n + i]
    return 0
'''

_NUMBA_RK4 = '''
# kd.simulate's RK4 for this system (kanedyn.integrators.rk4.RK4 is the readable
# reference; the loop is the same steps without the Python around them). The quaternion
# groups (q indices, their body-rate speeds) and whether q ⊕ ξ = q + ξ:
_QG = numpy.array({QG}, dtype=numpy.int64).reshape(-1, 4)
_UG = numpy.array({UG}, dtype=numpy.int64).reshape(-1, 3)
_ADDITIVE = {ADDITIVE}


@numba.njit(cache=True)
def _chart_point(q0, xi, t, q):
    """q = q0 ⊕ ξ as CompiledSystem.integrate_configuration(q0, ξ, 1): the Euler step
    q0 + q̇(q0, ξ) off the quaternions, q0_g/|q0_g| ⊗ exp(ξ_g) on group g."""
    if _ADDITIVE:
        for i in range(q.shape[0]):
            q[i] = q0[i] + xi[i]
        return 0
    st = qdot(q0, xi, t, q)
    for i in range(q.shape[0]):
        q[i] = q0[i] + q[i]
    for g in range(_QG.shape[0]):
        a, b = _QG[g], _UG[g]
        nrm = math.sqrt(q0[a[0]] ** 2 + q0[a[1]] ** 2 + q0[a[2]] ** 2 + q0[a[3]] ** 2)
        pw, px, py, pz = q0[a[0]] / nrm, q0[a[1]] / nrm, q0[a[2]] / nrm, q0[a[3]] / nrm
        w0, w1, w2 = xi[b[0]], xi[b[1]], xi[b[2]]
        th = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
        k = 0.5 - th * th / 48.0 if th < 1e-6 else math.sin(0.5 * th) / th
        ew, ex, ey, ez = math.cos(0.5 * th), k * w0, k * w1, k * w2
        q[a[0]] = pw * ew - px * ex - py * ey - pz * ez
        q[a[1]] = pw * ex + px * ew + py * ez - pz * ey
        q[a[2]] = pw * ey - px * ez + py * ew + pz * ex
        q[a[3]] = pw * ez + px * ey - py * ex + pz * ew
    return st


@numba.njit(cache=True)
def _so3_ab(th):
    """a = (1 − cos θ)/θ², b = (θ − sin θ)/θ³ of J_r = 1 − a x× + b (x×)² (their series
    below θ = 1, as kanedyn.spatial.lie.so3_coefficients)."""
    if th < 1.0:
        t2 = th * th
        a = b = 0.0
        f2, f3, pw, sg = 2.0, 6.0, 1.0, 1.0
        for k in range(12):
            a += sg * pw / f2
            b += sg * pw / f3
            f2 *= (2 * k + 3) * (2 * k + 4)
            f3 *= (2 * k + 4) * (2 * k + 5)
            pw *= t2
            sg = -sg
        return a, b
    return (1.0 - math.cos(th)) / th ** 2, (th - math.sin(th)) / th ** 3


@numba.njit(cache=True)
def _rates(q, t, zero, e, rate0, W):
    """W(q) (nq × nv): column k = q̇(q, e_k) − q̇(q, 0) (the kinematic equations are affine
    in u). rate0, e: scratch."""
    st = qdot(q, zero, t, rate0)
    col = numpy.empty(W.shape[0])
    for k in range(W.shape[1]):
        e[:] = 0.0
        e[k] = 1.0
        if st == 0:
            st = qdot(q, e, t, col)
        for i in range(W.shape[0]):
            W[i, k] = col[i] - rate0[i]
    return st


@numba.njit(cache=True)
def _quaternion_rows(q, xi, D):
    """D's rows of each quaternion group g ← ½ q_g ⊗ (0, J_r(ξ_g) ·): ∂(q0 ⊕ ξ)/∂ξ there
    (CompiledSystem.chart_jacobian's quat_rate_matrix(q_g) @ so3_right_jacobian(ξ_g))."""
    for g in range(_QG.shape[0]):
        a, b = _QG[g], _UG[g]
        x0, x1, x2 = xi[b[0]], xi[b[1]], xi[b[2]]
        ca, cb = _so3_ab(math.sqrt(x0 * x0 + x1 * x1 + x2 * x2))
        # J_r = 1 − a X + b X², X = x×
        X = numpy.array([[0.0, -x2, x1], [x2, 0.0, -x0], [-x1, x0, 0.0]])
        Jr = numpy.eye(3) - ca * X + cb * (X @ X)
        qw, qx, qy, qz = q[a[0]], q[a[1]], q[a[2]], q[a[3]]
        G = 0.5 * numpy.array([[-qx, -qy, -qz], [qw, -qz, qy], [qz, qw, -qx],
                               [-qy, qx, qw]])
        GJ = G @ Jr
        for i in range(4):
            for c in range(D.shape[1]):
                D[a[i], c] = 0.0
            for c in range(3):
                D[a[i], b[c]] = GJ[i, c]


@numba.njit(cache=True)
def _chart_rate(q, xi, v, D0, D, W, t, zero, e, rate0, N, r):
    """ξ̇ = J(ξ)⁻¹ v: W(q) v = D(ξ) ξ̇ with D = W(q0) off the quaternions (D0) and
    ½ q_g ⊗ (0, J_r(ξ_g) ·) on group g (CompiledSystem.chart_jacobian); least squares
    by the normal equations DᵀD ξ̇ = Dᵀ W v, exact as the equations are consistent.
    Overwrites r (nv) with ξ̇."""
    st = _rates(q, t, zero, e, rate0, W)
    D[:, :] = D0
    _quaternion_rows(q, xi, D)
    rhs = D.T @ (W @ v)
    N[:, :] = D.T @ D
    r[:] = numpy.linalg.solve(N, rhs)
    return st


@numba.njit(cache=True)
def chart_point(q0, xi, q):
    """q ← q0 ⊕ ξ (:func:`_chart_point` at t = 0, as the integrators call
    integrate_configuration): the fixed signature by which the compiled loops of
    kanedyn.integrators.kane_compiled take the chart; returns the status of qdot."""
    return _chart_point(q0, xi, 0.0, q)


@numba.njit(cache=True)
def chart_jacobian(q0, xi, J):
    """J (nv × nv, flat, row-major) ← J(ξ) with v = J ξ̇ along q0 ⊕ ξ, in
    CompiledSystem.chart_jacobian's arithmetic: D = W(q0) off the quaternions and
    ½ q_g ⊗ (0, J_r(ξ_g) ·) on group g, J = (WᵀW)⁻¹ WᵀD with W = W(q0 ⊕ ξ) (the normal
    equations, exact as W has full column rank); returns the status of qdot."""
    nq, nv = q0.shape[0], xi.shape[0]
    q, rate0 = numpy.empty(nq), numpy.empty(nq)
    zero, e = numpy.zeros(nv), numpy.empty(nv)
    D, W = numpy.empty((nq, nv)), numpy.empty((nq, nv))
    st = _chart_point(q0, xi, 0.0, q)
    if st == 0:
        st = _rates(q0, 0.0, zero, e, rate0, D)
    if st == 0:
        st = _rates(q, 0.0, zero, e, rate0, W)
    if st:
        return st
    _quaternion_rows(q, xi, D)
    X = numpy.linalg.solve(W.T @ W, W.T @ D)  # (Fortran order: copied by rows)
    for i in range(nv):
        for j in range(nv):
            J[i * nv + j] = X[i, j]
    return 0


@numba.njit(cache=True)
def _stage(t, q0, xi, v, tau, D0, S, out_xi, out_a):
    """(ξ̇, v̇) at q0 ⊕ ξ (RK4._f); S: the scratch arrays."""
    q, D, W, zero, e, rate0, N, work = S
    # the chart at t = 0, as CompiledSystem.integrate_configuration and chart_jacobian
    # are called by the reference (time enters the dynamics only)
    st = _chart_point(q0, xi, 0.0, q)
    if st == 0:
        st = forward_dynamics(q, v, tau, t, out_a, work)
    if _ADDITIVE:
        out_xi[:] = v
    elif st == 0:
        st = _chart_rate(q, xi, v, D0, D, W, 0.0, zero, e, rate0, N, out_xi)
    return st


@numba.njit(cache=True)
def rk4_run(q0, v0, tau, t0, dt, steps, every, blowup, Q, V, status):
    """RK4 from (q0, v0) over the step sizes ``steps`` (t_n = t0 + n dt, the last step
    shortened as kd.simulate's): the stages of RK4.step in the chart q = q_n ⊕ ξ with
    ξ̇ = J(ξ)⁻¹ v. Q, V: row 0 the start, then every ``every``-th step and the last.
    status: (0, ·) or a stop (1: a state not finite, 2: a speed beyond blowup (1 + max|v0|),
    3: a generated function's status in status[2]) and its step. Returns the rows filled."""
    nq, nv = q0.shape[0], v0.shape[0]
    S = (numpy.empty(nq), numpy.empty((nq, nv)), numpy.empty((nq, nv)), numpy.zeros(nv),
         numpy.empty(nv), numpy.empty(nq), numpy.empty((nv, nv)), numpy.empty(nv * nv))
    D0 = numpy.empty((nq, nv))
    kx = numpy.empty((4, nv))
    kv = numpy.empty((4, nv))
    xi = numpy.empty(nv)
    vs = numpy.empty(nv)
    q, v = q0.copy(), v0.copy()
    Q[0], V[0] = q, v
    vmax0 = numpy.abs(v0).max() if nv else 0.0
    k_out = 1
    n_steps = steps.shape[0]
    t = t0
    for n in range(n_steps):
        h = steps[n]
        st = 0 if _ADDITIVE else _rates(q, 0.0, S[3], S[4], S[5], D0)
        xi[:] = 0.0
        if st == 0:
            st = _stage(t, q, xi, v, tau, D0, S, kx[0], kv[0])
        for s in range(1, 4):
            c = 1.0 if s == 3 else 0.5
            for i in range(nv):
                xi[i] = c * h * kx[s - 1, i]
                vs[i] = v[i] + c * h * kv[s - 1, i]
            if st == 0:
                st = _stage(t + c * h, q, xi, vs, tau, D0, S, kx[s], kv[s])
        if st:
            status[0], status[1], status[2] = 3, n, st
            return k_out
        for i in range(nv):
            xi[i] = (h / 6) * (kx[0, i] + 2 * kx[1, i] + 2 * kx[2, i] + kx[3, i])
            v[i] = v[i] + (h / 6) * (kv[0, i] + 2 * kv[1, i] + 2 * kv[2, i] + kv[3, i])
        _chart_point(q, xi, 0.0, S[0])
        q[:] = S[0]
        t = t0 + (n + 1) * dt
        if not (numpy.all(numpy.isfinite(q)) and numpy.all(numpy.isfinite(v))):
            status[0], status[1] = 1, n + 1
            return k_out
        if nv and numpy.abs(v).max() > blowup * (1.0 + vmax0):
            status[0], status[1] = 2, n + 1
            return k_out
        if (n + 1) % every == 0 or n == n_steps - 1:
            Q[k_out], V[k_out] = q, v
            k_out += 1
    return k_out
'''


_C_FD = '''
/* Solve M udot = F by Cholesky (M = L L^T, lower triangle used in place).
   work holds nu*nu doubles. Returns -1 if M is not positive definite, or the
   status of dynamics(). */
{SIGNATURE} {
    const int n = {N};
    double *M = work;
    const int status = {P}dynamics(q, u, tau, t, M, udot);
    if (status) return status;
    for (int j = 0; j < n; ++j) {
        double d = M[j * n + j];
        for (int k = 0; k < j; ++k) d -= M[j * n + k] * M[j * n + k];
        if (!(d > 0.0)) return -1;
        d = sqrt(d);
        M[j * n + j] = d;
        for (int i = j + 1; i < n; ++i) {
            double s = M[i * n + j];
            for (int k = 0; k < j; ++k) s -= M[i * n + k] * M[j * n + k];
            M[i * n + j] = s / d;
        }
    }
    for (int i = 0; i < n; ++i) {
        double s = udot[i];
        for (int k = 0; k < i; ++k) s -= M[i * n + k] * udot[k];
        udot[i] = s / M[i * n + i];
    }
    for (int i = n - 1; i >= 0; --i) {
        double s = udot[i];
        for (int k = i + 1; k < n; ++k) s -= M[k * n + i] * udot[k];
        udot[i] = s / M[i * n + i];
    }
    return 0;
}
'''

_C_ARGS = {"q": "const double *q", "u": "const double *u", "tau": "const double *tau",
           "t": "double t"}


def _c_signature(func: str, prefix: str = "") -> str:
    """``int name(arguments)`` of a generated C function: the definitions in
    :func:`c_source` and the declarations cffi is given come from here alike."""
    if func == "forward_dynamics":
        args = [_C_ARGS[a] for a in ("q", "u", "tau", "t")] + ["double *udot", "double *work"]
    else:
        ins, outs = {**SIGNATURES, **INDEX3_SIGNATURES, **CHART_SIGNATURES}[func]
        args = [_C_ARGS[a] for a in ins] + [f"double *{OUTPUT_ARRAYS[k]}" for k in outs]
    return f"int {prefix}{func}({', '.join(args)})"


def c_declarations(prefix: str = "", functions=None) -> str:
    """The C prototypes of the generated functions (what cffi's ``cdef`` is given):
    ``functions`` (default those of :data:`SIGNATURES`) and forward_dynamics."""
    return "".join(f"{_c_signature(f, prefix)};\n"
                   for f in [*(SIGNATURES if functions is None else functions),
                             "forward_dynamics"])


#: most statements in one generated C function: :func:`c_source` cuts the definitions
#: into static functions of at most this many statements, passing what crosses a cut
#: through a stack workspace. On the massive-leg Stewart platform (docs/benchmarks.md,
#: issue 18) gcc took the same time for every cut from 25 statements to none (each block
#: whole, up to ~1,500 statements), and the code cut at 25-100 ran as fast as or faster
#: than longer pieces; the cut bounds the length of any one function for larger systems,
#: where register allocation and scheduling on long straight lines grow faster than the
#: length.
C_SEGMENT_STATEMENTS = 50


@dataclass
class _Segment:
    """One segment function of a generated program (C or numpy): the definitions
    ``defs`` (in evaluation order) and the entries ``stores`` of the output ``key`` it
    computes, the definitions it reads from the workspace (``loads``) and those it
    writes there (``saves``)."""

    defs: list
    keys: frozenset  # the outputs that need its definitions (whose functions call it)
    key: str | None = None  # the output it stores (one per segment)
    stores: list = field(default_factory=list)
    used: set = field(default_factory=set)  # the symbols its statements read
    loads: list = field(default_factory=list)
    saves: list = field(default_factory=list)


def _segments(low: Lowered, max_statements: int) -> tuple[list, dict]:
    """The definitions and output stores of every generated function, each once.

    A definition belongs to the block of the outputs that need it (``mass_matrix`` only,
    ``forcing`` only, both, the energy too, ...): ``dynamics`` runs the blocks of M and of
    forcing, ``mass_matrix`` those of M alone, and no definition is written twice. If a
    definition needs another, every output that needs the first needs the second, so
    blocks taken by decreasing number of outputs follow all they use. Each block is cut
    into segments of at most ``max_statements`` statements; a definition used by a later
    segment is saved to a workspace slot there. Returns the segments in evaluation order
    and the slot of every saved definition."""
    keys = [k for k in OUTPUT_ARRAYS if k in low.outputs]
    need = {k: set(low.needed([k])) for k in keys}
    blocks: dict = {}
    for s in low.order:
        ks = frozenset(k for k in keys if s in need[k])
        if ks:
            blocks.setdefault(ks, []).append(s)
    for k in keys:
        if low.outputs[k]:
            blocks.setdefault(frozenset([k]), [])
    segs = []
    for ks in sorted(blocks, key=lambda ks: (-len(ks), sorted(keys.index(k) for k in ks))):
        defs = blocks[ks]
        key = next(iter(ks)) if len(ks) == 1 else None
        n_out = len(low.outputs[key]) if key else 0
        items = [("d", s) for s in defs] + [("o", j) for j in range(n_out)]
        for a in range(0, len(items), max_statements):
            part = items[a:a + max_statements]
            segs.append(_Segment([x for t, x in part if t == "d"], ks, key if n_out else None,
                                 [x for t, x in part if t == "o"]))
    # what each segment reads that an earlier one defined: those crossings use the workspace
    home = {s: i for i, seg in enumerate(segs) for s in seg.defs}
    position = {s: i for i, s in enumerate(low.order)}
    slots: dict = {}
    for i, seg in enumerate(segs):
        for s in seg.defs:
            seg.used |= free_symbols(low.definitions[s])
        for j in seg.stores:
            seg.used |= free_symbols(low.outputs[seg.key][j])
        seg.loads = sorted((s for s in seg.used if s in home and home[s] != i),
                           key=lambda s: position[s])
        for s in seg.loads:
            slots.setdefault(s, len(slots))
    for s in slots:
        segs[home[s]].saves.append(s)
    return segs, slots


def _segment_body(low: Lowered, seg: _Segment, slots: dict, printer, ren: dict) -> list[str]:
    """Statements of one segment: loads of the leaves (q already normalised) and of the
    workspace slots it reads, its definitions, the slots it saves, its output stores
    (into the array ``o``)."""
    lines = _leaf_loads(low, seg.used, printer, (), checks=False)
    lines += [printer.define(_name(s), f"w[{slots[s]}]") for s in seg.loads]
    for s in seg.defs:
        e = low.definitions[s]
        lines.append(printer.define(_name(s), printer.doprint(e.xreplace(ren) if ren else e)))
    lines += [printer.assign(f"w[{slots[s]}]", _name(s)) for s in seg.saves]
    if seg.key:
        lines += _stores(low, seg.key, printer, "o", ren, seg.stores)
    return lines


def _calls(segs: list, outs) -> list:
    """The segments a function of the outputs ``outs`` runs, in order."""
    return [(i, seg) for i, seg in enumerate(segs) if seg.keys & set(outs)]


def c_source(low: Lowered, prefix: str = "", max_statements: int | None = None) -> str:
    """Standalone C99: ``mass_matrix``, ``forcing``, ``dynamics``, ``qdot``, ``energy`` and a
    Cholesky ``forward_dynamics``, on plain double arrays (see the header comment).

    Every definition is written once, in the static segment functions of
    :func:`_segments` (at most ``max_statements`` statements each, default
    ``C_SEGMENT_STATEMENTS``); each public function checks its inputs, normalises the
    quaternions and calls the segments of its outputs in order."""
    # order="none": terms in SymPy's canonical argument order (deterministic) instead of
    # sorted again for display, a third of the printing time
    printer = _CPrinter({"order": "none"})
    segs, slots = _segments(low, max_statements or C_SEGMENT_STATEMENTS)
    ren = _rename(low)
    eom = low.eom
    # restrict: the workspace, the output and the inputs never overlap
    args = ("const double *restrict q, const double *restrict u, const double *restrict tau, "
            "double t, double *restrict w, double *restrict o")
    funcs = ["#if defined(__GNUC__)\n#define KD_NOINLINE __attribute__((noinline))\n#else\n"
             "#define KD_NOINLINE\n#endif\n"
             "/* the segments stay functions of their own: inlined back into one, they would\n"
             "   cost the compiler as much as the whole straight line did */\n"]
    for i, seg in enumerate(segs):
        lines = [f"(void){a};" for a in ("q", "u", "tau", "t", "w", "o")]
        lines += _segment_body(low, seg, slots, printer, ren)
        funcs.append(f"static KD_NOINLINE void {prefix}kd_segment{i}({args}) {{\n"
                     + "".join(f"    {x}\n" for x in lines) + "}\n")
    for f, (ins, outs) in signatures(low).items():
        checks, quat_of = _input_checks(low, printer, ins)
        lines = [f"(void){a};" for a in ins] + checks  # not every input is used
        calls = _calls(segs, outs)
        qa = "qn" if quat_of else "q"  # the segments read q normalised
        if calls and quat_of:
            lines.append(f"double qn[{len(eom.q)}];")
            lines += [f"qn[{k}] = q[{k}]{quat_of.get(k, '')};" for k in range(len(eom.q))]
        if calls:
            lines.append(f"double w[{max(len(slots), 1)}];")
        for i, seg in calls:
            o = OUTPUT_ARRAYS[seg.key] if seg.key else "0"
            call = [qa] + [a if a in ins else "0" for a in ("u", "tau")]
            lines.append(f"{prefix}kd_segment{i}({', '.join(call)}, t, w, {o});")
        lines.append("return 0;")
        funcs.append(f"{_c_signature(f, prefix)} {{\n" + "".join(f"    {x}\n" for x in lines)
                     + "}\n")
    doc = [
        "",
        "Functions (all arrays are plain doubles; q has nq entries, u nu, tau one per input):",
        "  mass_matrix(q, t, M)        M: nu*nu (row-major; symmetric)" if low.symmetric else
        "  mass_matrix(q, t, M)        M: nu*nu (row-major)",
        "  forcing(q, u, tau, t, F)    F: nu, with M(q) du/dt = F",
        "  dynamics(q, u, tau, t, M, F) both, sharing common subexpressions",
        "  qdot(q, u, t, qd)           qd: nq, the kinematic differential equations",
        "  energy(q, u, t, E)          E: " + {"split": "3: T + V, T, V", "total": "1: T + V",
                                              "none": "0 (no energy expression)"}[
                                                  low.energy_kind],
        "  forward_dynamics(q, u, tau, t, udot, work)  Cholesky solve; work: nu*nu doubles",
        "  dependent_speeds(q, u, t, ud)  ud: the dependent speeds (velocity constraints)",
        "  residuals(q, u, t, rg, rv)  rg: g(q), rv: the velocity constraints at ud",
        "  configuration_jacobian(q, t, Gq)  Gq: dg/dq_dep (row-major), for a projection",
        *(["  hamiltonian_terms(q, u, t, dTq, dVq)  dT/dq at fixed u, dV/dq (index-3 form)",
           "  constraint_rows(q, u, t, Gfull, gb)  dg/dq (l*nq, row-major), gamma of "
           "G du/dt = gamma",
           "  nonconservative_forces(q, u, tau, t, Fnc)  Fnc: nu, F_r of the loads not in V "
           "(dampers, motors, inputs)"] if getattr(eom, "index3", False) else []),
        *(["  qdot_jacobian(q, u, t, Kq)  Kq: d(qdot)/dq (nq*nq, row-major), for the chart",
           "  kinetic_gradient(q, u, t, dTq)  dT/dq at fixed u (a curved chart)"]
          if "qdot_jacobian" in low.outputs else []),
        "Every function returns 0, or 1 if an input is not finite, 2 + k if quaternion k",
        "is off unit norm by more than " + repr(QUAT_TOL) + " (quaternions are normalised),",
        "-1 (forward_dynamics) if M is not positive definite.",
        "Coordinates: " + ", ".join(s.name for s in eom.q),
        "Speeds: " + ", ".join(s.name for s in eom.u),
        "Inputs: " + (", ".join(s.name for s in eom.inputs) or "none"),
        "Compile: cc -O2 -c this.c (C99, needs only <math.h>).",
    ]
    head = printer.comment(_header(low) + doc)
    src = head + "#include <math.h>\n\n" + "\n".join(funcs)
    src += (_C_FD.replace("{SIGNATURE}", _c_signature("forward_dynamics", prefix))
            .replace("{P}", prefix).replace("{N}", str(len(eom.u))))
    return src
