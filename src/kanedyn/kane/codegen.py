"""Code generation for :class:`~kanedyn.kane.EquationsOfMotion`: numpy, numba and C.

The equations are lowered to straight-line code in four steps:

1. parameter values are substituted and propagated through the
   intermediates (constant folding: an intermediate that becomes a number is
   inlined, so nothing is computed at run time that the model fixes);
2. ``sympy.cse`` runs once over the intermediates and all outputs together
   (M, forcing, q̇ and the energies), so what they share is computed once;
   copies it leaves behind are propagated and single-use definitions inlined;
3. every generated function keeps only the definitions its outputs need, in
   dependency order (deterministic, so that the source hash names the cache);
4. the definitions are printed as Python (numpy: vectorised over a leading
   batch axis; numba: scalar, ``njit(cache=True)``) or C99.

The compiled object, :class:`CompiledSystem`, implements the system protocol
of DESIGN.md. Generated sources and built extensions are cached in
``$KANEDYN_CACHE`` (default ``~/.cache/kanedyn``), keyed by a hash of the
source, and are written atomically.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray
from sympy.printing.c import C99CodePrinter
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.pycode import PythonCodePrinter

from ..errors import CompilerError, SolverError, StateError, SymbolicError

__all__ = ["CompiledSystem", "compile_eom", "lower", "to_c", "to_latex", "operation_count"]

#: tolerance on the norm of a quaternion in q before it is an error (as the Model's joints)
QUAT_TOL = 1e-4
BACKENDS = ("numpy", "numba", "c")


# --- lowering -----------------------------------------------------------------------------
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
        stack = [s for n in names for e in self.outputs[n] for s in _free(e)]
        while stack:
            s = stack.pop()
            if s in need or s not in self.definitions:
                continue
            need.add(s)
            stack.extend(_free(self.definitions[s]))
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
        return int(n + sum(sp.count_ops(e) for k in names for e in self.outputs[k]))


def _free(e) -> set:
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


def lower(eom, parameters: dict | None = None, cse: bool = True, fold: bool = True) -> Lowered:
    """Fold parameters, run CSE over all outputs together, and order the definitions.

    ``fold=False`` keeps the parameters as symbols (to count operations as SymPy does;
    such a lowering is not compiled)."""
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
        if alias and _free(e) & alias.keys():
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
        for d in _free(definitions[s]):
            if d in definitions:
                uses[d] = uses.get(d, 0) + 1
    for exprs in outputs.values():
        for e in exprs:
            for d in _free(e):
                if d in definitions:
                    uses[d] = uses.get(d, 0) + 1
    single = {d for d, n in uses.items() if n == 1}
    # in evaluation order, so a chain of single uses folds into its last user
    for s in order:
        e = definitions[s]
        sub = {d: definitions.pop(d) for d in _free(e) & single if d in definitions}
        if sub:
            definitions[s] = e.xreplace(sub)
    for k, exprs in outputs.items():
        outputs[k] = [e.xreplace({d: definitions.pop(d) for d in _free(e) & single
                                  if d in definitions}) if isinstance(e, sp.Basic) else e
                      for e in exprs]


def _check_symbols(eom, defs, outputs, extra=()) -> None:
    known = set(eom.q) | set(eom.u) | set(eom.inputs) | {eom.t} | {s for s, _ in defs}
    known |= set(extra)
    for k, exprs in [("intermediates", [e for _, e in defs])] + list(outputs.items()):
        for e in exprs:
            bad = _free(e) - known
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
    stack = [s for e in exprs for s in _free(e)]
    while stack:
        s = stack.pop()
        if s in seen:
            continue
        seen.add(s)
        if s in defs:
            stack.extend(_free(defs[s]))
        else:
            leaves.add(s)
    return leaves


def _topological(definitions: dict) -> list:
    """Definitions in an order where each follows all it uses (iterative depth first).

    Dependencies are visited sorted by name, so the order — and the generated source,
    whose hash names the cached module — does not depend on Python's hash seed."""
    def deps(s):
        return iter(sorted((d for d in _free(definitions[s]) if d in definitions), key=str))

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


# --- printing -----------------------------------------------------------------------------
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


_SIGNATURES = {
    # name: (inputs, outputs)
    "mass_matrix": (("q", "t"), ("mass_matrix",)),
    "forcing": (("q", "u", "tau", "t"), ("forcing",)),
    "dynamics": (("q", "u", "tau", "t"), ("mass_matrix", "forcing")),
    "qdot": (("q", "u", "t"), ("qdot",)),
    "energy": (("q", "u", "t"), ("energy",)),
}
_OUT_NAMES = {"mass_matrix": "M", "forcing": "F", "qdot": "qd", "energy": "E"}


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
    outs = _SIGNATURES[func][1]
    defs = low.needed(outs)
    ren = _rename(low)
    used = set()
    for s in defs:
        used |= _free(low.definitions[s])
    for k in outs:
        for e in low.outputs[k]:
            used |= _free(e)
    lines = _leaf_loads(low, used, style, _SIGNATURES[func][0])
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
        arr = _OUT_NAMES[k]
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
    for f, (ins, outs) in _SIGNATURES.items():
        lines, counts[f] = _body(low, f, style, printer)
        args = ", ".join(list(ins) + [_OUT_NAMES[k] for k in outs])
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
    for f, (ins, outs) in _SIGNATURES.items():
        args = ", ".join([_C_ARGS[a] for a in ins] + [f"double *{_OUT_NAMES[k]}" for k in outs])
        decl.append(f"int {prefix}{f}({args});")
    decl.append(f"int {prefix}forward_dynamics(const double *q, const double *u, "
                "const double *tau, double t, double *udot, double *work);")
    return "\n".join(decl) + "\n"


def c_source(low: Lowered, prefix: str = "") -> str:
    """Standalone C99: ``mass_matrix``, ``forcing``, ``dynamics``, ``qdot``, ``energy`` and a
    Cholesky ``forward_dynamics``, on plain double arrays (see the header comment)."""
    printer = _C()
    funcs, counts = [], {}
    for f, (ins, outs) in _SIGNATURES.items():
        lines, counts[f] = _body(low, f, "c", printer)
        args = ", ".join([_C_ARGS[a] for a in ins] + [f"double *{_OUT_NAMES[k]}" for k in outs])
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


def to_c(eom, path, parameters=None, prefix: str = "") -> Path:
    """Write standalone C source of the equations to ``path`` (atomically); return the path."""
    low = lower(eom, parameters)
    src = c_source(low, prefix)
    path = Path(path)
    _atomic_write(path, src)
    return path


# --- building and loading ---------------------------------------------------------------------
def cache_dir() -> Path:
    d = Path(os.environ.get("KANEDYN_CACHE", Path.home() / ".cache" / "kanedyn")) / "codegen"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _load_python(src: str, style: str):
    key = hashlib.sha256((style + src).encode()).hexdigest()[:16]
    modname = f"kanedyn_gen_{style}_{key}"
    if modname in sys.modules:
        return sys.modules[modname]
    path = cache_dir() / f"{modname}.py"
    if not path.exists():
        _atomic_write(path, src)
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules[modname] = mod
    return mod


def find_c_compiler() -> str:
    """The system C compiler (``$CC``, else cc, gcc or clang), or a CompilerError."""
    for cand in [os.environ.get("CC")] + ["cc", "gcc", "clang"]:
        if cand and shutil.which(cand.split()[0]):
            return cand
    raise CompilerError(
        "backend='c' needs a C compiler, and none was found (looked for $CC, cc, gcc, clang "
        "on PATH); install one (e.g. apt-get install gcc) or use backend='numba' or 'numpy'"
    )


def _load_c(src: str):
    try:
        import cffi
    except ImportError as exc:  # pragma: no cover - cffi is a test/extra dependency
        raise CompilerError("backend='c' needs cffi (pip install cffi)") from exc
    cc = find_c_compiler()
    key = hashlib.sha256(src.encode()).hexdigest()[:16]
    modname = f"kanedyn_gen_c_{key}"
    if modname in sys.modules:
        return sys.modules[modname]
    d = cache_dir()
    built = sorted(d.glob(f"{modname}*.so"))
    if not built:
        ffi = cffi.FFI()
        ffi.cdef(c_declarations())
        ffi.set_source(modname, src, extra_compile_args=["-O2", "-std=c99"])
        work = Path(tempfile.mkdtemp(prefix=modname, dir=d))
        env_cc = os.environ.get("CC")
        os.environ["CC"] = cc
        try:
            so = Path(ffi.compile(tmpdir=str(work), verbose=False))
        except Exception as exc:
            raise CompilerError(f"backend='c': compiling the generated C with {cc!r} failed: "
                                f"{exc}") from exc
        finally:
            if env_cc is None:
                os.environ.pop("CC", None)
            else:
                os.environ["CC"] = env_cc
        target = d / so.name
        os.replace(so, target)  # atomic: a half-built library never has the final name
        shutil.rmtree(work, ignore_errors=True)
        built = [target]
    spec = importlib.util.spec_from_file_location(modname, built[0])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules[modname] = mod
    return mod


# --- the compiled system ----------------------------------------------------------------------
_F64 = np.dtype(np.float64)


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
        eom = low.eom
        self.backend = backend
        self.name = eom.name
        self.nq, self.nv, self.ninputs = len(eom.q), len(eom.u), len(eom.inputs)
        self.quaternions = [(list(a), list(b)) for a, b in eom.quaternions]
        self.parameters = dict(low.values)
        self._nE = {"split": 3, "total": 1, "none": 0}[low.energy_kind]
        full = low
        self.counts = {k: full.operation_count(v) for k, v in
                       {"mass_matrix": ("mass_matrix",), "forcing": ("forcing",),
                        "dynamics": ("mass_matrix", "forcing"), "qdot": ("qdot",),
                        "energy": ("energy",)}.items()}
        if backend == "c":
            self.source = c_source(full)
            mod = _load_c(self.source)
            ffi, lib = mod.ffi, mod.lib

            def wrap(fn):
                buf = ffi.from_buffer

                def call(*args):
                    return fn(*[a if isinstance(a, float) else buf("double[]", a)
                                for a in args])
                return call

            self._k = {f: wrap(getattr(lib, f)) for f in
                       list(_SIGNATURES) + ["forward_dynamics"]}
        elif backend in ("numpy", "numba"):
            self.source = python_source(full, backend)
            mod = _load_python(self.source, backend)
            names = list(_SIGNATURES) + (["forward_dynamics"] if backend == "numba" else [])
            self._k = {f: getattr(mod, f) for f in names}
        else:
            raise SymbolicError(f"compile: backend must be one of {BACKENDS}, got {backend!r}")
        self._work = np.empty(max(self.nv * self.nv, 1))
        self._scalar = backend != "numpy"
        self._zeros_tau = np.zeros(self.ninputs)
        self._zeros_v = np.zeros(self.nv)

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
        for k in range(shape[0]):
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
            from ..spatial import quat_exp, quat_multiply

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


def compile_eom(eom, backend: str = "numba", parameters: dict | None = None,
                cse: bool = True) -> CompiledSystem:
    """Generated code for ``eom`` (see :class:`CompiledSystem`)."""
    if backend not in BACKENDS:
        raise SymbolicError(f"compile: backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "c":
        find_c_compiler()  # fail before the (slow) lowering
    return CompiledSystem(lower(eom, parameters, cse=cse), backend)


# --- LaTeX --------------------------------------------------------------------------------
def to_latex(eom, max_terms: int | None = None) -> str:
    """The equations as LaTeX: the intermediates, then q̇ = W u and M u̇ = forcing."""
    lines = [r"\begin{aligned}"]
    for s, e in eom.intermediates[:max_terms]:
        lines.append(f"{sp.latex(s)} &= {sp.latex(e)} \\\\")
    if max_terms is not None and len(eom.intermediates) > max_terms:
        lines.append(rf"&\;\vdots \quad ({len(eom.intermediates) - max_terms} more) \\")
    qd = sp.Matrix([sp.Derivative(s, eom.t) for s in eom.q])
    ud = sp.Matrix([sp.Derivative(s, eom.t) for s in eom.u])
    lines.append(f"{sp.latex(qd)} &= {sp.latex(eom.qdot)} \\\\")
    lines.append(f"{sp.latex(eom.mass_matrix)} {sp.latex(ud)} &= {sp.latex(eom.forcing)}")
    lines.append(r"\end{aligned}")
    return "\n".join(lines)
