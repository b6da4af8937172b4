"""Printing: a Lowered system → numpy, numba or C99 source (stage 2 of codegen).

Where it sits: frozen equations → lowering (``lower.py``) → **printing** → building
(``build.py``) → compiled system (``runtime.py``).

This module fixes the interface of the generated code, the same in every language:
the functions of ``SIGNATURES`` (mass_matrix, forcing, dynamics, qdot, energy; and a
Cholesky forward_dynamics for numba and C), each writing into output arrays named by
``OUTPUT_ARRAYS`` and returning a status (0; 1: an input is not finite; 2 + k:
quaternion group k is off unit norm by more than ``QUAT_TOL``; -1: M is not positive
definite). Each function loads the entries of q, u, tau it uses into locals, runs
the input checks (numba and C: inside the generated code; numpy: in the runtime),
evaluates the definitions its outputs need and stores the outputs; M is symmetric
when the lowering says so, and then its lower triangle is computed and mirrored.

numpy code is vectorised over a leading batch axis (``q[..., k]``); numba code is
scalar and ``njit(cache=True)``; C is standalone C99 needing only ``<math.h>``.
"""

from __future__ import annotations

import hashlib

import sympy as sp
from sympy.printing.c import C99CodePrinter
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.pycode import PythonCodePrinter

from .lower import Lowered, free_symbols

__all__ = ["OUTPUT_ARRAYS", "QUAT_TOL", "SIGNATURES", "c_declarations", "c_source",
           "python_source"]

#: tolerance on the norm of a quaternion in q before it is an error (as the Model's joints)
QUAT_TOL = 1e-4


class _Py(PythonCodePrinter):
    def _print_Float(self, expr):
        return repr(float(expr))


class _Np(NumPyPrinter):
    def _print_Float(self, expr):
        return repr(float(expr))


class _C(C99CodePrinter):
    def _print_Float(self, expr):
        return repr(float(expr))

    def _print_Pow(self, expr):
        b, e = expr.args
        if e.is_Integer and 2 <= int(e) <= 4:  # x*x beats pow() without -ffast-math
            return "(" + "*".join([self.parenthesize(b, 100)] * int(e)) + ")"
        return super()._print_Pow(expr)


SIGNATURES = {
    # name: (inputs, outputs)
    "mass_matrix": (("q", "t"), ("mass_matrix",)),
    "forcing": (("q", "u", "tau", "t"), ("forcing",)),
    "dynamics": (("q", "u", "tau", "t"), ("mass_matrix", "forcing")),
    "qdot": (("q", "u", "t"), ("qdot",)),
    "energy": (("q", "u", "t"), ("energy",)),
}
OUTPUT_ARRAYS = {"mass_matrix": "M", "forcing": "F", "qdot": "qd", "energy": "E"}


def _leaf_loads(low: Lowered, used: set, style: str, ins) -> list[str]:
    """Loads of q, u, tau entries into named locals. In numba and C code they are
    preceded by the input checks (status 1: an entry is not finite; 2 + k: quaternion
    group k is off unit norm by more than QUAT_TOL) and quaternions are normalised, as
    the Model's joints do."""
    eom = low.eom
    lines = []
    sizes = {"q": len(eom.q), "u": len(eom.u), "tau": len(eom.inputs)}
    quat_of = {}
    if style != "numpy":
        for a in ins:
            if a in sizes and sizes[a]:
                if style == "c":
                    lines.append(f"for (int i = 0; i < {sizes[a]}; ++i) "
                                 f"if (!isfinite({a}[i])) return 1;")
                else:
                    lines += [f"for i in range({sizes[a]}):",
                              f"    if not math.isfinite({a}[i]):", "        return 1"]
        for g, (qi, _) in enumerate(eom.quaternions):  # every group, used or not
            norm = " + ".join(f"q[{k}] * q[{k}]" for k in qi)
            if style == "c":
                lines += [f"const double nrm{g} = sqrt({norm});",
                          f"if (!(fabs(nrm{g} - 1.0) <= {QUAT_TOL!r})) return {2 + g};"]
            else:
                lines += [f"nrm{g} = math.sqrt({norm})",
                          f"if not abs(nrm{g} - 1.0) <= {QUAT_TOL!r}:", f"    return {2 + g}"]
            for k in qi:
                quat_of[k] = f" / nrm{g}"
    for arr, syms in (("q", eom.q), ("u", eom.u), ("tau", eom.inputs)):
        for k, s in enumerate(syms):
            if s in used:
                idx = f"[..., {k}]" if style == "numpy" else f"[{k}]"
                scale = quat_of.get(k, "") if arr == "q" else ""
                decl = "const double " if style == "c" else ""
                end = ";" if style == "c" else ""
                lines.append(f"{decl}{_name(s)} = {arr}{idx}{scale}{end}")
    return lines


def _name(s: sp.Symbol) -> str:
    """A C/Python identifier for a symbol (intermediate names may hold any character)."""
    n = s.name
    if n.isidentifier() and n not in ("t", "q", "u", "tau", "M", "F", "qd", "E", "out"):
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


def _body(low: Lowered, func: str, style: str, printer) -> tuple[list[str], int]:
    """Statements of one generated function (loads, definitions, stores) and its op count."""
    outs = SIGNATURES[func][1]
    defs = low.needed(outs)
    ren = _rename(low)
    used = set()
    for s in defs:
        used |= free_symbols(low.definitions[s])
    for k in outs:
        for e in low.outputs[k]:
            used |= free_symbols(e)
    lines = _leaf_loads(low, used, style, SIGNATURES[func][0])
    ops = 0
    for s in defs:
        e = low.definitions[s]
        ops += low.ops(s)
        code = printer.doprint(e.xreplace(ren) if ren else e)
        if style == "c":
            lines.append(f"const double {_name(s)} = {code};")
        else:
            lines.append(f"{_name(s)} = {code}")
    n = len(low.eom.u)
    packed = [(r, c) for r in range(n) for c in range(r + 1)]
    for k in outs:
        arr = OUTPUT_ARRAYS[k]
        for j, e in enumerate(low.outputs[k]):
            ops += sp.count_ops(e)
            code = printer.doprint(e.xreplace(ren) if ren else e)
            targets = [j]
            if k == "mass_matrix" and low.symmetric:  # lower triangle computed, mirrored
                r, c = packed[j]
                targets = [r * n + c] + ([c * n + r] if r != c else [])
            for m, jj in enumerate(targets):
                rhs = code if m == 0 else (f"{arr}[..., {targets[0]}]" if style == "numpy"
                                           else f"{arr}[{targets[0]}]")
                if style == "c":
                    lines.append(f"{arr}[{jj}] = {rhs};")
                elif style == "numpy":
                    lines.append(f"{arr}[..., {jj}] = {rhs}")
                else:
                    lines.append(f"{arr}[{jj}] = {rhs}")
    return lines, int(ops)


def _header(low: Lowered, counts: dict, lang: str) -> str:
    eom = low.eom
    c = "#" if lang == "py" else " *"
    lines = [
        f"Generated by kanedyn from the equations of motion {eom.name!r}.",
        f"nq = {len(eom.q)}, nu = {len(eom.u)}, inputs = {len(eom.inputs)}; "
        "mass matrix: full nu x nu, row-major"
        + (" (symmetric: lower triangle computed, mirrored)." if low.symmetric else "."),
        "Operation counts (sympy.count_ops after common-subexpression elimination):",
    ]
    lines += [f"  {k}: {v}" for k, v in counts.items()]
    if low.values:
        lines.append("Parameter values folded in: " + ", ".join(
            f"{k} = {v!r}" for k, v in sorted(low.values.items())))
    if lang == "py":
        return "\n".join(f"# {x}".rstrip() for x in lines) + "\n"
    return "/*\n" + "\n".join(f"{c} {x}".rstrip() for x in lines) + "\n */\n"


def python_source(low: Lowered, style: str) -> str:
    """A Python module with mass_matrix, forcing, dynamics, qdot, energy (and for numba a
    Cholesky forward_dynamics)."""
    printer = _Np() if style == "numpy" else _Py()
    deco = "@numba.njit(cache=True)\n" if style == "numba" else ""
    funcs, counts = [], {}
    for f, (ins, outs) in SIGNATURES.items():
        lines, counts[f] = _body(low, f, style, printer)
        args = ", ".join(list(ins) + [OUTPUT_ARRAYS[k] for k in outs])
        funcs.append(f"{deco}def {f}({args}):\n" + "".join(f"    {x}\n" for x in lines)
                     + "    return 0\n")
    head = _header(low, counts, "py")
    imports = "import math\n\nimport numpy\n" + ("import numba\n" if style == "numba" else "")
    src = head + imports + "\n\n" + "\n\n".join(funcs)
    if style == "numba":
        src += "\n\n" + _NUMBA_FD.replace("{N}", str(len(low.eom.u)))
    return src


_NUMBA_FD = '''@numba.njit(cache=True)
def forward_dynamics(q, u, tau, t, udot, work):
    """Solve M udot = F by Cholesky (M = L L^T). Returns -1 if M is not positive definite,
    or the status of dynamics()."""
    n = {N}
    M = work[: n * n]
    status = dynamics(q, u, tau, t, M, udot)
    if status:
        return status
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

_C_FD = '''
/* Solve M udot = F by Cholesky (M = L L^T, lower triangle used in place).
   work holds nu*nu doubles. Returns -1 if M is not positive definite, or the
   status of dynamics(). */
int {P}forward_dynamics(const double *q, const double *u, const double *tau, double t,
                      double *udot, double *work) {
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


def c_declarations(prefix: str = "") -> str:
    decl = []
    for f, (ins, outs) in SIGNATURES.items():
        args = ", ".join([_C_ARGS[a] for a in ins] + [f"double *{OUTPUT_ARRAYS[k]}" for k in outs])
        decl.append(f"int {prefix}{f}({args});")
    decl.append(f"int {prefix}forward_dynamics(const double *q, const double *u, "
                "const double *tau, double t, double *udot, double *work);")
    return "\n".join(decl) + "\n"


def c_source(low: Lowered, prefix: str = "") -> str:
    """Standalone C99: ``mass_matrix``, ``forcing``, ``dynamics``, ``qdot``, ``energy`` and a
    Cholesky ``forward_dynamics``, on plain double arrays (see the header comment)."""
    printer = _C()
    funcs, counts = [], {}
    for f, (ins, outs) in SIGNATURES.items():
        lines, counts[f] = _body(low, f, "c", printer)
        args = ", ".join([_C_ARGS[a] for a in ins] + [f"double *{OUTPUT_ARRAYS[k]}" for k in outs])
        unused = "".join(f"    (void){a};\n" for a in ins)  # not every input is used
        funcs.append(f"int {prefix}{f}({args}) {{\n" + unused
                     + "".join(f"    {x}\n" for x in lines) + "    return 0;\n}\n")
    eom = low.eom
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
        "Every function returns 0, or 1 if an input is not finite, 2 + k if quaternion k",
        "is off unit norm by more than " + repr(QUAT_TOL) + " (quaternions are normalised),",
        "-1 (forward_dynamics) if M is not positive definite.",
        "Coordinates: " + ", ".join(s.name for s in eom.q),
        "Speeds: " + ", ".join(s.name for s in eom.u),
        "Inputs: " + (", ".join(s.name for s in eom.inputs) or "none"),
        "Compile: cc -O2 -c this.c (C99, needs only <math.h>).",
    ]
    head = _header(low, counts, "c")
    head = head[: -len(" */\n")] + "\n".join(f" * {x}".rstrip() for x in doc) + "\n */\n"
    src = head + "#include <math.h>\n\n" + "\n".join(funcs)
    src += _C_FD.replace("{P}", prefix).replace("{N}", str(len(eom.u)))
    return src
