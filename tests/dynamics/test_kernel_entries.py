"""The entry-point table of the kernels (kernels/entries.py) against the kernels and the
public functions it declares, and the compile keys of the kernels package's files.

The table is what the wrappers and the C front end read (names, number of inputs,
f_ext, result shape), so each of its claims is checked against the thing itself: the
compiled signature's arity, the C entry point's arity, the shape the public function
returns. The compile keys of the package's files are what keep numba from running an
algorithm compiled against an older helper of another file of the package."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.dynamics import _compiled, kernels
from kanedyn.dynamics.kernels import entries
from kanedyn.dynamics.kernels.entries import DIM_NB, DIM_NV, ENTRIES


def _signatures(entry):
    if entry.module == "kernels":
        return entries.SIGNATURES
    return importlib.import_module(f"kanedyn.dynamics.{entry.module}").SIGNATURES


def _arity(signature: str) -> int:
    """The number of arguments of a numba signature string such as 'int64(a, b[:, ::1])'."""
    inner = signature[signature.index("(") + 1:signature.rindex(")")]
    depth, n = 0, 1
    for ch in inner:
        depth += ch == "["
        depth -= ch == "]"
        n += ch == "," and depth == 0
    return n


@pytest.mark.parametrize("entry", ENTRIES.values(), ids=list(ENTRIES))
def test_every_kernel_the_table_names_has_a_signature_of_the_declared_arity(entry):
    sigs = _signatures(entry)
    assert entry.batch in sigs and entry.single in sigs
    if entry.packed:  # int64 single(buf, *inputs, *options, out)
        assert sigs[entry.single].startswith("int64(")
        assert _arity(sigs[entry.single]) == 2 + len(entry.inputs) + len(entry.options)
        if entry.takes_f_ext:  # ... with f_ext before the options
            assert _arity(sigs[entry.single_fext]) == 3 + len(entry.inputs) + len(entry.options)
    assert sigs[entry.batch].startswith("void(")


@pytest.mark.parametrize("entry", [e for e in ENTRIES.values() if e.c], ids=lambda e: e.name)
def test_c_entry_points_take_buffer_inputs_and_result(entry):
    module = (entries if entry.module == "kernels"
              else importlib.import_module(f"kanedyn.dynamics.{entry.module}"))
    shim = getattr(module, entry.c)
    assert shim.__code__.co_argcount == 2 + len(entry.inputs)
    assert entry.packed and not entry.options  # _fastcall.c passes pointers only


def _call(model, entry, q, v, a):
    args = {"q": q, "v": v, "a": a, "tau": a}
    x = [args[n] for n in entry.inputs]
    if entry.name == "forward_kinematics":
        k = kd.forward_kinematics(model, *x)
        return np.array([s.R for s in k]) if isinstance(k, list) else k.R
    if entry.name == "energy":
        return kd.dynamics.energy.summary(model, *x)
    if entry.name == "jacobian":
        return kd.jacobian(model, q, model.body_names[-1])
    if entry.name == "centroidal_momentum":
        from kanedyn.dynamics.centroidal import _momentum_and_bias

        return _momentum_and_bias(model, q, v, "test")
    return getattr(kd, entry.name)(model, *x)


@pytest.mark.parametrize("entry", ENTRIES.values(), ids=list(ENTRIES))
def test_declared_result_shape_is_what_the_public_function_returns(entry):
    model = kd.models.random_tree(5, seed=2, floating_base=True)  # nb != nv
    rng = np.random.default_rng(3)
    q = kd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    out = _call(model, entry, q, v, a)
    assert out.shape == entry.result_shape(model.nv, model.nb)
    assert {DIM_NV, DIM_NB} >= {d for d in entry.result if isinstance(d, str)}
    if entry.name == "forward_kinematics":  # its further outputs
        k = kd.forward_kinematics(model, q, v)
        assert [k.p.shape, k.velocity.shape] == [(model.nb, 3), (model.nb, 6)]
        assert [k.p.shape, k.velocity.shape] == [
            tuple(model.nb if d == DIM_NB else d for d in m) for m in entry.more]
    Q = np.array([q, q])
    V, A = np.array([v, v]), np.array([a, a])
    outs = _call(model, entry, Q, V, A)
    assert np.shape(outs) == (2, *entry.result_shape(model.nv, model.nb))


PACKAGE = "kanedyn.dynamics.kernels"
FILES = ("joint_rows", "spatial_rows", "lanes", "rnea", "crba", "aba", "kinematics", "entries")


def test_each_file_of_the_package_is_keyed_by_the_helpers_it_compiles_in():
    """numba would key the cache of rnea.py by rnea.py alone; each file of the package keys
    it by the files it imports (dynamics/_compiled.py), so that a change to a helper of
    joint_rows.py recompiles the RNEA that inlines it. A module outside that reads
    ``kernels.X`` depends on the package's __init__, whose key covers every file."""
    deps = {m: set(_compiled.dependencies(f"{PACKAGE}.{m}")) for m in FILES}
    for algorithm in ("rnea", "crba", "aba", "kinematics"):
        assert {f"{PACKAGE}.joint_rows", f"{PACKAGE}.spatial_rows"} <= deps[algorithm]
    assert {f"{PACKAGE}.rnea", f"{PACKAGE}.crba", f"{PACKAGE}.aba"} <= deps["entries"]
    for m in FILES:
        f = str(Path(importlib.import_module(f"{PACKAGE}.{m}").__file__).resolve())
        assert _compiled._KEYS[f] == _compiled.compile_key(f"{PACKAGE}.{m}"), m
    # the package itself: keyed, by every file (spatial_rows through the algorithms' keys)
    package = set(_compiled.dependencies(PACKAGE))
    assert package >= {f"{PACKAGE}.{m}" for m in FILES if m != "spatial_rows"}
    assert str(Path(kernels.__file__).resolve()) in _compiled._KEYS
    for consumer in ("kanedyn.dynamics.energy_kernel", "kanedyn.dynamics.derivatives_kernel",
                     "kanedyn.sim.batch", "kanedyn.integrators.gauss_compiled"):
        importlib.import_module(consumer)
        assert PACKAGE in _compiled.dependencies(consumer), consumer


def test_kernels_names_other_modules_use_are_in_the_package():
    for name in ("rnea_core", "crba_core", "aba_core", "aba1", "crba1", "joint_transform",
                 "stack_array", "BAD_SHAPE", "ready", "entry",
                 "c_entry", "SIGNATURES", "workspace_size"):
        assert hasattr(kernels, name), name
