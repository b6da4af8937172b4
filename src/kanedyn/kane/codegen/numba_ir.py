"""The numba backend's straight-line bodies, emitted as LLVM IR (imported by generated modules).

Where it sits: printing (``printers.py``) writes each numba function's definitions and
stores as a *program*, a tuple of instructions; a generated module turns each program
into a numba intrinsic with :func:`straight_line` and calls it from its ``njit``
functions, which keep the input checks, the quaternion normalisation and the Cholesky
solve as ordinary numba code.

Why: numba's front end (bytecode analysis, type inference and lowering of every
statement) costs about a millisecond per arithmetic operation; on the massive-leg
Stewart platform (11,500 operations in M and forcing) it took most of the 16 s of the
first call of ``forward_dynamics``, LLVM the rest (docs/benchmarks.md, issue 18). An
intrinsic is typed as one call, and its body is built here straight into the LLVM IR
builder (one ``fadd``/``fmul``/... per operation), so what is left is LLVM's own
optimisation and code generation of a function of plain SSA arithmetic.

A program's instructions, each the value of its position (a store's is unused):

- ``("ld", a, k)``: element k of the array argument a (0 q, 1 u, 2 tau; 4 and 5 the
  outputs); ``("arg", 3)``: the time t; ``("c", x)``: the double x;
- ``("add" | "sub" | "mul" | "div", i, j)``, ``("neg", i)``;
- ``("fn", name, i)``: an LLVM intrinsic of one double (``sqrt``, ``sin``, ``cos``,
  ``exp``, ``log``, ``fabs``); ``("pow", i, j)``: ``llvm.pow.f64``;
- ``("py", source, (i, ...))``: any other function, the scalar Python ``source`` of a
  ``lambda`` of its arguments, compiled by numba itself (``compile_internal``, once per
  source) -- what the arithmetic above does not cover stays exactly numba's;
- ``("st", a, k, i)``: store value i into element k of the output array a.

The arguments of every intrinsic are (q, u, tau, t, o1, o2), C-contiguous float64
arrays and a float (the caller passes q for an absent input, and an absent output).
"""

from __future__ import annotations

import math

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["straight_line"]

_F64 = ir.DoubleType()
_I64 = ir.IntType(64)
_ARRAY = types.Array(types.float64, 1, "C")
_BINARY = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
_UNARY = {"sqrt", "sin", "cos", "exp", "log", "fabs"}
_PY_FUNCTIONS: dict = {}  # lambda source -> function (compile_internal caches by function)


def _py_function(source: str):
    fn = _PY_FUNCTIONS.get(source)
    if fn is None:
        fn = _PY_FUNCTIONS[source] = eval(source, {"math": math})  # noqa: S307 - our own text
    return fn


def _emit(context, builder, program, args) -> None:
    """Build the instructions of ``program`` at the builder's position."""
    module = builder.module
    data = {a: context.make_array(_ARRAY)(context, builder, args[a]).data
            for a in (0, 1, 2, 4, 5)}
    values: list = []
    for ins in program:
        op = ins[0]
        if op in _BINARY:
            v = getattr(builder, _BINARY[op])(values[ins[1]], values[ins[2]])
        elif op == "ld":
            v = builder.load(builder.gep(data[ins[1]], [ir.Constant(_I64, ins[2])]))
        elif op == "c":
            v = ir.Constant(_F64, ins[1])
        elif op == "neg":
            v = builder.fneg(values[ins[1]])
        elif op == "fn":
            if ins[1] not in _UNARY:
                raise ValueError(f"numba_ir: no LLVM intrinsic {ins[1]!r} (have {sorted(_UNARY)})")
            fn = module.declare_intrinsic(f"llvm.{ins[1]}", [_F64])
            v = builder.call(fn, [values[ins[2]]])
        elif op == "pow":
            fn = module.declare_intrinsic("llvm.pow", [_F64])
            v = builder.call(fn, [values[ins[1]], values[ins[2]]])
        elif op == "py":
            operands = [values[i] for i in ins[2]]
            sig = types.float64(*([types.float64] * len(operands)))
            v = context.compile_internal(builder, _py_function(ins[1]), sig, operands)
        elif op == "arg":
            v = args[ins[1]]
        elif op == "st":
            builder.store(values[ins[3]],
                          builder.gep(data[ins[1]], [ir.Constant(_I64, ins[2])]))
            v = None
        else:
            raise ValueError(f"numba_ir: unknown instruction {ins!r}")
        values.append(v)


def straight_line(program: tuple):
    """A numba intrinsic ``body(q, u, tau, t, o1, o2)`` that evaluates ``program``."""

    @intrinsic
    def body(typingctx, q, u, tau, t, o1, o2):
        arrays = (q, u, tau, o1, o2)
        if not all(a == _ARRAY for a in arrays) or not isinstance(t, types.Float):
            return None  # numba then reports the types it was given
        sig = types.none(q, u, tau, t, o1, o2)

        def codegen(context, builder, signature, args):
            args = list(args)
            args[3] = context.cast(builder, args[3], t, types.float64)
            _emit(context, builder, program, args)
            return context.get_dummy_value()

        return sig, codegen

    return body
