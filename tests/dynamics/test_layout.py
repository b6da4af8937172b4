"""The one flat layout: its table, the packing by it, one definition, and the compile key
of every compiled module (the subprocess tests of a changed layout are in
test_stale_cache.py)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import numpy as np
import pytest
from numba.core.ccallback import CFunc
from numba.core.registry import CPUDispatcher

import kanedyn as kd
from kanedyn.dynamics import _compiled, kernels, layout
from kanedyn.dynamics.flat import flatten

SRC = Path(kd.__file__).parent
#: every name the layout defines (columns, joint codes, sizes)
LAYOUT_NAMES = ({n for n, _, _ in layout.BODY_COLUMNS + layout.MODEL_COLUMNS}
                | {"WIDTH", "HDR", "JOINT_CODES", "REVOLUTE", "PRISMATIC", "HELICAL",
                   "PLANAR", "SPHERICAL", "FREE"})


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return "kanedyn." + ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _cached_numba_modules() -> list[str]:
    """Every kanedyn module with an on-disk-cached numba function (njit or cfunc)."""
    return sorted(_module_name(p) for p in SRC.rglob("*.py")
                  if re.search(r"cache\s*=\s*True", p.read_text())
                  and "numba" in p.read_text() and not p.match("kane/codegen.py"))


def test_docstring_table_lists_every_column_with_its_width():
    doc = layout.__doc__
    rows = re.findall(r"^``([A-Z_]+)``\s+(\d+)\s", doc, re.M)
    assert rows == [(n, str(w)) for n, _, w in layout.BODY_COLUMNS + layout.MODEL_COLUMNS]


def test_columns_tile_the_row_in_order():
    """Body columns follow each other without gaps up to WIDTH; model columns fit in a row."""
    end = 0
    for _, first, width in layout.BODY_COLUMNS:
        assert first == end
        end = first + width
    assert end == layout.WIDTH
    assert max(f + w for _, f, w in layout.MODEL_COLUMNS) <= layout.WIDTH
    assert sorted(layout.JOINT_CODES.values()) == list(range(6))
    assert layout.fingerprint() == layout.LAYOUT_FINGERPRINT


def test_flatten_packs_by_the_layout():
    """Each column holds what the table says, read back against the Model's own objects."""
    model = kd.models.pendulum_chain(3, planar=False)
    b = model.bodies[2]
    free = kd.models.free_body(inertia=(0.1, 0.2, 0.3))
    for m, body in ((model, b), (free, free.bodies[0])):
        row = flatten(m).data[body.index]
        L = layout
        assert np.array_equal(row[L.E_TREE:L.E_TREE + 9].reshape(3, 3), body.placement.E)
        assert np.array_equal(row[L.R_TREE:L.R_TREE + 3], body.placement.r)
        assert row[L.MASS] == body.mass
        np.testing.assert_allclose(row[L.H:L.H + 3], body.mass * np.asarray(body.com),
                                   rtol=1e-15, atol=1e-15)
        # the spatial inertia rebuilt from its 10 parameters is the body's
        h = row[L.H:L.H + 3]
        hx = np.array([[0, -h[2], h[1]], [h[2], 0, -h[0]], [-h[1], h[0], 0]])
        I = np.block([[row[L.IBAR:L.IBAR + 9].reshape(3, 3), hx],
                      [hx.T, row[L.MASS] * np.eye(3)]])
        np.testing.assert_allclose(I, body.inertia, rtol=0, atol=1e-15)
        assert row[L.PARENT] == body.parent
        assert row[L.JTYPE] == L.JOINT_CODES[body.joint.kind]
        assert (row[L.IQ], row[L.IV], row[L.NVJ]) == (body.iq.start, body.iv.start,
                                                       body.joint.nv)
        assert row[L.ARMATURE] == body.joint.armature
    top = flatten(model).data[model.nb]
    assert (top[layout.NB], top[layout.NQ], top[layout.NV]) == (model.nb, model.nq, model.nv)
    assert np.array_equal(top[layout.GRAV:layout.GRAV + 3], model.gravity)
    assert flatten(model).buf[:4].tolist() == [model.nb, model.nq, model.nv,
                                               flatten(model).buf.size]


def test_one_flat_array_per_model_for_every_consumer():
    """ModelSystem reads the Model's cached flat array; a second system does not re-pack."""
    model = kd.models.pendulum_chain(2)
    a, b = kd.ModelSystem(model), kd.ModelSystem(model)
    assert a._data is flatten(model).data and b._data is a._data


def test_the_layout_is_defined_once():
    """No module but layout.py assigns a layout name at module level (the kernels and the
    others import them), and no module keeps its own table of joint codes."""
    offenders = []
    for p in SRC.rglob("*.py"):
        if p.name == "layout.py":
            continue
        tree = ast.parse(p.read_text())
        for node in tree.body:
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, ast.AnnAssign) else [])
            for t in targets:
                names = [e.id for e in ast.walk(t) if isinstance(e, ast.Name)]
                offenders += [f"{p.relative_to(SRC)}: {n}" for n in names if n in LAYOUT_NAMES]
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
                # a kind → number table (model/joints.py's kind → class registry is not one)
                keys = {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
                numbers = all(isinstance(v, ast.Name) and v.id.isupper()
                              or isinstance(v, ast.Constant) and isinstance(v.value, int)
                              for v in node.value.values)
                if {"revolute", "prismatic", "spherical", "free"} <= keys and numbers:
                    offenders.append(f"{p.relative_to(SRC)}: a joint-code table")
    assert not offenders, offenders


def test_layout_constants_come_from_layout_py():
    """Modules read the layout names from layout.py (nothing imports them from the kernels
    package, one of its files, or flat.py)."""
    offenders = []
    for p in SRC.rglob("*.py"):
        tree = ast.parse(p.read_text())
        for node in ast.walk(tree):
            if not (isinstance(node, ast.ImportFrom) and node.module):
                continue
            # the kernels package, one of its files (relatively too, from inside it), flat.py
            parts = node.module.split(".")
            if ("kernels" in parts or p.parent.name == "kernels" and node.level == 1
                    or parts[-1] == "flat"):
                bad = [a.name for a in node.names if a.name in LAYOUT_NAMES]
                if bad:
                    offenders.append(f"{p.relative_to(SRC)}: {bad} from {node.module}")
    assert not offenders, offenders


@pytest.mark.parametrize("name", _cached_numba_modules())
def test_every_compiled_module_keys_its_cache(name):
    """A module with cached numba code that reads the layout or compiles in code of another
    keyed module is keyed, and the index stamp of each of its cached functions carries the
    layout version and the module's compile key; the others import none of those."""
    mod = importlib.import_module(name)
    key = _compiled._KEYS.get(str(Path(mod.__file__).resolve()))
    deps = _compiled.dependencies(name)
    keyed_deps = [d for d in deps if str(Path(importlib.import_module(d).__file__).resolve())
                  in _compiled._KEYS or d == "kanedyn.dynamics.layout"]
    if key is None:
        assert not keyed_deps, f"{name} compiles in {keyed_deps} but does not key its cache"
        return
    assert key == _compiled.compile_key(name)
    # every top-level import comes before the key_cache call (only that part is read)
    assert deps == _compiled.dependencies(name, whole=True)
    funcs = [f for f in vars(mod).values()
             if isinstance(f, CPUDispatcher) and f.py_func.__module__ == name
             and f._cache.__class__.__name__ == "FunctionCache"]
    assert funcs
    for f in funcs:
        stamp = _compiled.stamp_of(f)
        assert stamp[1] == ("kanedyn layout", layout.LAYOUT_VERSION, key), f.py_func.__name__


def test_the_keyed_modules_are_those_that_read_the_layout():
    package = {f"kanedyn.dynamics.kernels.{m}" for m in (
        "joint_rows", "joint_extension", "spatial_rows", "lanes", "rnea", "crba", "aba",
        "kinematics", "entries")}
    expected = package | {"kanedyn.dynamics.kernels", "kanedyn.dynamics.energy_kernel",
                "kanedyn.dynamics.derivatives_kernel", "kanedyn.dynamics.frames_kernel",
                "kanedyn.dynamics.centroidal_kernel", "kanedyn.dynamics.joint_wrenches_kernel",
                "kanedyn.sim.configuration_kernel", "kanedyn.sim.batch",
                "kanedyn.sim.chart_kernel", "kanedyn.sim.rk4_manifold",
                "kanedyn.integrators.rk4_compiled",
                "kanedyn.integrators.discrete_gradient_compiled",
                "kanedyn.identify.regressor_kernel", "kanedyn.constraints.system_kernel",
                "kanedyn.integrators.radau_compiled", "kanedyn.forces.kernel",
                "kanedyn.sim.time_stepping_compiled", "kanedyn.sim.stickslip_compiled",
                "kanedyn.integrators.gauss_compiled", "kanedyn.integrators.verlet_compiled",
                "kanedyn.integrators.constrained_energy_momentum_compiled",
                "kanedyn.integrators.lie_cayley_compiled",
                "kanedyn.integrators.floating_cayley_compiled",
                "kanedyn.integrators.kane_compiled",
                "kanedyn.integrators.avf_chart_compiled"}
    for name in expected:
        importlib.import_module(name)
    keyed = {_module_name(Path(f)) for f in _compiled._KEYS if Path(f).is_relative_to(SRC)}
    assert keyed == expected


def test_c_entry_points_are_keyed_too():
    """The cfuncs of kernels/entries.py (made on first use by c_entry) get the keyed
    locator: their cache is stamped with that file's key, which covers the kernels they
    call (entries.py imports them)."""
    from kanedyn.dynamics.kernels import entries, rnea

    f = entries.rnea_c
    loc = _compiled.KeyedLocator.from_function(f, entries.__file__)
    assert loc is not None
    key = loc.get_source_stamp()[1]
    assert key == ("kanedyn layout", layout.LAYOUT_VERSION,
                   _compiled.compile_key(entries.__name__))
    assert "kanedyn.dynamics.kernels.rnea" in _compiled.dependencies(entries.__name__)
    assert _compiled.stamp_of(rnea.rnea_f)[1][1] == layout.LAYOUT_VERSION
    made = entries._C_MADE.get("rnea_c")
    if made is not None and isinstance(made, CFunc):
        assert _compiled.stamp_of(made)[1] == key


def test_compile_key_follows_the_sources_compiled_in():
    """The key of a consumer changes with the source of a module it compiles in, and with
    the layout version (here by recomputing it with a patched digest and version)."""
    base = _compiled.compile_key("kanedyn.dynamics.energy_kernel")
    real = _compiled._source_digest
    try:  # the package file it reads kernels.X from
        _compiled._source_digest = lambda p: real(p) + ("x" if p and p.endswith(
            str(Path("kernels", "__init__.py"))) else "")
        assert _compiled.compile_key("kanedyn.dynamics.energy_kernel") != base
    finally:
        _compiled._source_digest = real
    # a helper file of the package: the keys of the package's files that compile it in,
    # and through the package's own key, of the energy kernel
    pkg = "kanedyn.dynamics.kernels"
    pkg_file = str(Path(kernels.__file__).resolve())
    rnea_base, pkg_base = _compiled.compile_key(f"{pkg}.rnea"), _compiled._KEYS[pkg_file]
    try:
        _compiled._source_digest = lambda p: real(p) + ("x" if p and p.endswith(
            "joint_rows.py") else "")
        assert _compiled.compile_key(f"{pkg}.rnea") != rnea_base
        assert _compiled.compile_key(pkg) != pkg_base
        _compiled._KEYS[pkg_file] = "another"
        _compiled._source_digest = real
        assert _compiled.compile_key("kanedyn.dynamics.energy_kernel") != base
    finally:
        _compiled._source_digest = real
        _compiled._KEYS[pkg_file] = pkg_base
    v = layout.LAYOUT_VERSION
    try:
        layout.LAYOUT_VERSION = v + 1
        assert _compiled.compile_key("kanedyn.dynamics.energy_kernel") != base
    finally:
        layout.LAYOUT_VERSION = v
    assert _compiled.compile_key("kanedyn.dynamics.energy_kernel") == base
    # (rk4_compiled compiles in the energy kernel only since its projection moved to
    # gauss_compiled, which compiles in both)
    assert "kanedyn.dynamics.energy_kernel" in _compiled.dependencies(
        "kanedyn.integrators.rk4_compiled")
    deps = set(_compiled.dependencies("kanedyn.integrators.gauss_compiled"))
    assert deps >= {"kanedyn.dynamics.kernels", "kanedyn.dynamics.energy_kernel"}
    assert "kanedyn.dynamics._compiled" not in deps
    # the one RK4 loop compiles in the stages of rk4_compiled (a keyed module), kernels and
    # the force rows (keyed, their key covering the compiled Stribeck law they call)
    deps = set(_compiled.dependencies("kanedyn.sim.batch"))
    assert deps >= {"kanedyn.dynamics.kernels", "kanedyn.integrators.rk4_compiled",
                    "kanedyn.dynamics.flat", "kanedyn.forces.kernel",
                    # the batched midpoint/gauss4/verlet call these modules' loops
                    "kanedyn.integrators.gauss_compiled", "kanedyn.integrators.verlet_compiled"}
    assert "kanedyn.friction.laws_kernel" in _compiled.dependencies("kanedyn.forces.kernel")


UNCACHABLE = '''
import ctypes
from numba import njit
from kanedyn.dynamics import _compiled

_cos = ctypes.CDLL(None).cos
_cos.restype, _cos.argtypes = ctypes.c_double, (ctypes.c_double,)

_compiled.key_cache(__name__)


@njit(cache=True)
def f(x):
    return _cos(x)  # a ctypes pointer: a dynamic global, which numba does not cache
'''


def test_a_keyed_function_numba_cannot_cache_warns_and_runs(tmp_path):
    """numba's warning for a cached function it cannot cache reads the locator's source
    file; the keyed locator hands it the inner locator's (it raised AttributeError)."""
    import importlib.util
    import sys

    from numba.core.errors import NumbaWarning

    name = "kanedyn_test_uncachable_module"
    path = tmp_path / f"{name}.py"
    path.write_text(UNCACHABLE)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
        assert _compiled.KeyedLocator.from_function(mod.f.py_func, str(path)) is not None
        with pytest.warns(NumbaWarning, match='Cannot cache compiled function "f"'):
            assert mod.f(0.5) == np.cos(0.5)
    finally:
        del sys.modules[name]
        _compiled._KEYS.pop(_compiled._real(str(path)), None)
