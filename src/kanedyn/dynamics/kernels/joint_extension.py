"""Joint types beyond the built-in codes: their compiled primitives, called through C entry points.

The dispatcher of :mod:`.joint_rows` calls the primitives of the six built-in joint
types (``layout.JOINT_CODES``) directly, by code, inlined into every kernel. Any other
registered joint type whose ``compiled_code`` is not a built-in code is packed with
``JTYPE = EXTENSION`` and, in its ``JFUNCS`` column, the address of its **entry table**:
the C entry points (numba ``cfunc``) of its primitives, made from the njit primitives of
its module when a model holding the type is first packed (:func:`entry_table`). The
kernels call them through that table (:func:`table_entry` and the ``call_*``
intrinsics): one indirect, not inlined call per joint and primitive. So a new joint type
is its module and its registry line (docs/architecture.md, "How to add a joint type"):
nothing here changes and no cached kernel is recompiled.

The primitives keep the contract of the built-in ones (:mod:`kanedyn.model.joints.base`)::

    joint_pose(q, k, [tol,] *p)              -> (bad, R00, ..., R22, p0, p1, p2)
    motion_subspace_column(c, *p)            -> S[:, c]            (six floats)
    motion_subspace_times(x, o, *p)          -> S x_j              (six floats)
    motion_subspace_transpose_times(F, k, c, *p) -> S[:, c]ᵀ F[k]
    integrate(q, a, v, b, dt, out, *p)       (only when q is not additive)

with ``tol`` the model's quaternion tolerance (passed when the type has a quaternion)
and ``p`` the floats of the body-row columns named in the type's
``compiled_parameters`` (e.g. ``("AXIS", "PITCH")``), in that order. The three
motion-subspace primitives are not needed when ``identity_columns`` holds.

The address is kept in a float64 of the flat row: exact below 2⁵³, which user-space
addresses are (checked when packing). The entry tables live as long as the process,
so a packed row never points at freed code.
"""

from __future__ import annotations

import sys

import numpy as np
from llvmlite import ir
from numba import carray, cfunc, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ...errors import ModelError
from .. import _compiled, layout
from .spatial_rows import tree_compose

_compiled.key_cache(__name__)  # (see dynamics/_compiled.py)

#: the slots of an entry table, in order
SLOTS = ("joint_pose", "motion_subspace_column", "motion_subspace_times",
         "motion_subspace_transpose_times", "integrate")
TRANSFORM, COLUMN, TIMES, TRANSPOSE_TIMES, INTEGRATE = range(len(SLOTS))

# What each slot's C entry point takes and gives. An array argument goes as three C
# arguments (pointer to its lowest element, length, stride in elements), so that the
# kernels' arrays of any layout can be passed; "o6" are the six floats of the result,
# written through a pointer. Results: "i" int64 (the transform's status: 1 when a
# quaternion is not unit), "f" float64, "v" none. The first slot makes the whole X_up[i]
# (the joint's pose composed with the row's X_tree, spatial_rows.tree_compose), so that
# the kernels' code for it is one call.
_ARGS = (("a", "i", "a", "f", "a"),          # q, k, row, tol, X[i]: X_up[i] written
         ("i", "a", "o6"),                    # c, row
         ("a", "i", "a", "o6"),               # x, o, row
         ("a", "i", "a"),                     # F[k], c, row
         ("a", "i", "a", "i", "f", "a", "a"))  # q, a, v, b, dt, out, row
_RESULTS = ("i", "v", "v", "f", "v")

_F64 = ir.DoubleType()
_I64 = ir.IntType(64)
_PTR = _F64.as_pointer()
_CP = types.CPointer(types.float64)
_C_TYPES = {"a": (_CP, types.int64, types.int64), "i": (types.int64,),
            "f": (types.float64,), "o6": (_CP,)}
_RESULT_TYPES = {"i": types.int64, "f": types.float64, "v": types.void}


def signature(slot: int):
    """The numba C signature of a slot's entry point."""
    args = [t for kind in _ARGS[slot] for t in _C_TYPES[kind]]
    return _RESULT_TYPES[_RESULTS[slot]](*args)


# --- the kernels' side: calls through an entry table ---------------------------------

def _fits(kinds, argtys) -> bool:
    """The kernels' arguments match the slot: 1-D float64 arrays, integers, floats."""
    kinds = [k for k in kinds if not k.startswith("o")]
    if len(kinds) != len(argtys):
        return False
    for kind, ty in zip(kinds, argtys, strict=True):
        if kind == "a" and not (isinstance(ty, types.Array) and ty.ndim == 1
                                and ty.dtype == types.float64):
            return False
        if kind in "if" and not isinstance(ty, (types.Integer, types.Float)):
            return False
    return True


def _array_parts(context, builder, ty, value) -> list:
    """(pointer to the lowest element, length, stride in elements) of a 1-D array (the
    stride 1 as a constant when the type says the array is contiguous)."""
    ary = context.make_array(ty)(context, builder, value)
    (n,) = cgutils.unpack_tuple(builder, ary.shape, 1)
    if ty.layout == "C":
        return [ary.data, n, ir.Constant(n.type, 1)]
    (step,) = cgutils.unpack_tuple(builder, ary.strides, 1)
    s = builder.sdiv(step, ir.Constant(step.type, 8))
    last = builder.gep(ary.data, [builder.mul(builder.sub(n, ir.Constant(n.type, 1)), s)])
    low = builder.select(builder.icmp_signed("<", s, ir.Constant(s.type, 0)), last, ary.data)
    return [low, n, s]


def _lowering(slot: int):
    """The codegen of a call through slot ``slot``: the first argument is the entry
    point's address, the others the slot's arguments (:data:`_ARGS`)."""
    kinds, res = _ARGS[slot], _RESULTS[slot]
    n_out = 6 if kinds[-1] == "o6" else 0

    def codegen(context, builder, sig, args):
        c_args, it = [], iter(zip(sig.args[1:], args[1:], strict=True))
        for kind in kinds:
            if kind.startswith("o"):
                out = cgutils.alloca_once(builder, _F64, size=n_out)
                c_args.append(out)
                continue
            ty, value = next(it)
            if kind == "a":
                c_args += _array_parts(context, builder, ty, value)
            else:
                to = types.int64 if kind == "i" else types.float64
                c_args.append(context.cast(builder, value, ty, to))
        c_sig = signature(slot)
        ll = {types.int64: _I64, types.float64: _F64, types.void: ir.VoidType()}
        fnty = ir.FunctionType(ll[c_sig.return_type], [ll.get(a, _PTR) for a in c_sig.args])
        r = builder.call(builder.inttoptr(args[0], fnty.as_pointer()), c_args)
        if not n_out:
            return r if res != "v" else context.get_dummy_value()
        vals = [builder.load(builder.gep(out, [ir.Constant(_I64, j)])) for j in range(n_out)]
        return context.make_tuple(builder, sig.return_type, vals)

    return codegen


def _typed(slot: int, argtys):
    """(signature, codegen) of a call through ``slot``, or None when the types do not fit."""
    if not _fits(_ARGS[slot], argtys):
        return None
    ret = (types.UniTuple(types.float64, 6) if _ARGS[slot][-1] == "o6"
           else _RESULT_TYPES[_RESULTS[slot]])
    return ret(types.int64, *argtys), _lowering(slot)


@intrinsic
def table_entry(typingctx, table, slot):
    """The address in slot ``slot`` of the entry table at address ``table`` (int64s)."""
    if not (isinstance(table, types.Integer) and isinstance(slot, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        t = context.cast(builder, args[0], sig.args[0], types.int64)
        s = context.cast(builder, args[1], sig.args[1], types.int64)
        return builder.load(builder.gep(builder.inttoptr(t, _I64.as_pointer()), [s]))

    return types.int64(table, slot), codegen


@intrinsic
def call_transform(typingctx, fn, q, k, row, tol, x):
    """``x = X_up`` of the joint (row-major E, r) from its ``joint_pose`` through its entry
    point ``fn``; the status (1: a quaternion is not unit, x not written)."""
    return _typed(TRANSFORM, (q, k, row, tol, x))


@intrinsic
def call_column(typingctx, fn, c, row):
    """``motion_subspace_column`` through its entry point: S[:, c], six scalars."""
    return _typed(COLUMN, (c, row))


@intrinsic
def call_times(typingctx, fn, x, o, row):
    """``motion_subspace_times`` through its entry point: S x_j, six scalars."""
    return _typed(TIMES, (x, o, row))


@intrinsic
def call_transpose_times(typingctx, fn, f, c, row):
    """``motion_subspace_transpose_times`` through its entry point; f = the six floats F[k]."""
    return _typed(TRANSPOSE_TIMES, (f, c, row))


@intrinsic
def call_integrate(typingctx, fn, q, a, v, b, dt, out, row):
    """``integrate`` through its entry point: out[a:a + nq] = q_j ⊕ v_j dt."""
    return _typed(INTEGRATE, (q, a, v, b, dt, out, row))


# --- the entry points' side: arrays from (pointer, length, stride) ------------------

@njit
def array_view(p, n, s):
    """The array of n floats at stride s from the lowest element at p: the memory itself
    when contiguous, else a contiguous copy."""
    if s == 1:
        return carray(p, (n,))
    a = abs(s)
    span = carray(p, ((n - 1) * a + 1,))
    out = np.empty(n)
    for j in range(n):
        out[j] = span[j * a] if s > 0 else span[(n - 1 - j) * a]
    return out


@njit
def array_store(x, p, n, s):
    """Write a copy made by :func:`array_view` back (nothing when it was the memory)."""
    if s != 1:
        a = abs(s)
        span = carray(p, ((n - 1) * a + 1,))
        for j in range(n):
            span[j * a if s > 0 else (n - 1 - j) * a] = x[j]


# --- the joint's side: its entry table ------------------------------------------------

#: joint class -> (the table of addresses, the cfuncs it points at: kept alive)
_TABLES: dict[type, tuple[np.ndarray, tuple]] = {}


def _parameters(cls) -> str:
    """``row[c], ...``: the floats of the columns named in ``cls.compiled_parameters``."""
    widths = {name: (first, width) for name, first, width in layout.BODY_COLUMNS}
    cols = []
    for name in cls.compiled_parameters:
        if name not in widths:
            raise ModelError(f"joint type {cls.kind!r}: compiled_parameters names {name!r}, "
                             f"not a body column of the flat layout ({', '.join(widths)})")
        first, width = widths[name]
        cols += [f"row[{first + j}]" for j in range(width)]
    return "".join(", " + c for c in cols)


def _unpacked(n: int) -> str:
    """``out[j] = res[j]`` for j < n, one line each (res: a tuple)."""
    return "\n".join(f"    out[{j}] = res[{j}]" for j in range(n))


def _entry_point(head: str, arrays: str, body: str,
                 forms: dict[str, tuple[str, str]] | None = None) -> str:
    """The source of a C entry point ``def head:`` whose array arguments (the letters in
    ``arrays``: x → xp, xn, xs) are, in ``body``, ``{x}``: the memory itself when every
    one is contiguous (the kernels' case: no copy, no reference counting),
    else contiguous copies, in a function of its own, ``<name>_strided``
    (:func:`array_view`). ``forms``: other placeholders, as (contiguous, strided)
    expressions (:func:`_store`: an output's copy written back)."""
    def fill(path):
        subs = {x: ("carray({x}p, ({x}n,))", "array_view({x}p, {x}n, {x}s)")[path].format(x=x)
                for x in arrays}
        subs.update({k: v[path] for k, v in (forms or {}).items()})
        return body.strip("\n").format(**subs)

    name, args = head.split("(", 1)
    contiguous = " and ".join(f"{x}s == 1" for x in arrays)
    fast = "\n".join("    " + line for line in fill(0).splitlines())
    return (f"def {name}_strided({args}:\n{fill(1)}\n\n"
            f"def {head}:\n    if {contiguous}:\n{fast}\n"
            f"    else:\n        return {name}_strided({args}\n")


def _store(x: str) -> dict[str, tuple[str, str]]:
    """The ``{store}`` placeholder: nothing on the contiguous path, the copy of output
    ``x`` written back on the strided one."""
    return {"store": ("pass", f"array_store({x}, {x}p, {x}n, {x}s)")}


def _shim_source(cls) -> dict[str, str]:
    """The source of the C entry point of each primitive the type needs (its arguments
    as in :data:`_ARGS`)."""
    p = _parameters(cls)
    tol = ", tol" if cls.quaternion is not None else ""
    src = {"joint_pose": _entry_point(
        "joint_pose_c(qp, qn, qs, k, rp, rn, rs, tol, xp, xn, xs)", "qrx", f"""
    row = {{r}}
    (bad, r00, r01, r02, r10, r11, r12, r20, r21, r22, p0, p1, p2) = joint_pose({{q}}, k{tol}{p})
    if bad:
        return 1
    x = {{x}}
    tree_compose(row, x, r00, r01, r02, r10, r11, r12, r20, r21, r22, p0, p1, p2)
    {{store}}
    return 0""", forms=_store("x"))}
    if not cls.identity_columns:
        src["motion_subspace_column"] = _entry_point(
            "motion_subspace_column_c(c, rp, rn, rs, outp)", "r", f"""
    row = {{r}}
    res = motion_subspace_column(c{p})
    out = carray(outp, (6,))
{_unpacked(6)}""")
        src["motion_subspace_times"] = _entry_point(
            "motion_subspace_times_c(xp, xn, xs, o, rp, rn, rs, outp)", "xr", f"""
    row = {{r}}
    res = motion_subspace_times({{x}}, o{p})
    out = carray(outp, (6,))
{_unpacked(6)}""")
        src["motion_subspace_transpose_times"] = _entry_point(
            "motion_subspace_transpose_times_c(fp, fn, fs, c, rp, rn, rs)", "fr", f"""
    row = {{r}}
    return motion_subspace_transpose_times({{F}}, 0, c{p})""",
            forms={"F": ("carray(fp, (1, 6))", "array_view(fp, fn, fs).reshape((1, 6))")})
    if not cls.chart_is_additive:
        src["integrate"] = _entry_point(
            "integrate_c(qp, qn, qs, a, vp, vn, vs, b, dt, op, on, os, rp, rn, rs)", "qvor", f"""
    row = {{r}}
    o = {{o}}
    integrate({{q}}, a, {{v}}, b, dt, o{p})
    {{store}}""", forms=_store("o"))
    return src


def entry_table(cls) -> int:
    """The address of the entry table of joint type ``cls`` (made on first use).

    The primitives are the njit functions of the names in :data:`SLOTS` in
    ``cls.compiled_primitives`` (a module or namespace; by default the module that
    defines ``cls``). ModelError naming the type and the primitive when one it needs
    is missing or does not compile."""
    made = _TABLES.get(cls)
    if made is None:
        where = cls.compiled_primitives or sys.modules[cls.__module__]
        table = np.zeros(len(SLOTS), dtype=np.int64)
        keep = []
        sources = _shim_source(cls)
        for slot, name in enumerate(SLOTS):
            src = sources.get(name)
            if src is None:
                continue
            primitive = getattr(where, name, None)
            if primitive is None:
                raise ModelError(
                    f"joint type {cls.kind!r}: compiled_code {cls.compiled_code!r} is not a "
                    f"built-in code, so its compiled primitive {name!r} is needed in "
                    f"{getattr(where, '__name__', where)!r} (see kanedyn.model.joints.base)")
            scope = {"carray": carray, "array_view": array_view, "array_store": array_store,
                     "tree_compose": tree_compose, name: primitive}
            exec(src, scope)  # noqa: S102 (our own template, filled with column numbers)
            scope[name + "_c_strided"] = njit(scope[name + "_c_strided"])
            try:
                f = cfunc(signature(slot), nopython=True)(scope[name + "_c"])
            except Exception as e:
                raise ModelError(f"joint type {cls.kind!r}: its compiled primitive {name!r} "
                                 f"does not compile with the contract of "
                                 f"kanedyn.model.joints.base: {e}") from e
            table[slot] = f.address
            keep.append(f)
        if int(float(table.ctypes.data)) != table.ctypes.data:
            raise ModelError(f"joint type {cls.kind!r}: entry table address "
                             f"{table.ctypes.data:#x} does not fit a float64 row")
        made = _TABLES[cls] = (table, tuple(keep))
    return made[0].ctypes.data
