"""Imports run one way, as DESIGN.md draws them: an AST scan of every import in src/kanedyn
(module level, inside functions and under TYPE_CHECKING alike), each checked against the
packages its package may import; ``import kanedyn`` does not load the scenario layer."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "kanedyn"

#: what every package may use: the error classes, the small file/optional-import helpers
#: and the code generation level (imported first by the package root)
BASE = {"errors", "_files", "_optional", "_codegen"}

#: The order of DESIGN.md's "Layout": spatial ← model ← dynamics / kane ← constraints ←
#: integrators ← sim ← scenario ← cli; friction and forces are leaves that sim composes
#: (forces wraps friction's laws as force elements, never the reverse); identify uses
#: dynamics, friction and sim; verify and viz read models and trajectories. Each package
#: may import the packages listed (and BASE); "kanedyn" is the package root itself.
ALLOWED = {
    "spatial": set(),
    "model": {"spatial"},
    "dynamics": {"spatial", "model"},
    "kane": {"spatial", "model"},
    "friction": {"spatial", "model", "dynamics"},
    "forces": {"spatial", "model", "dynamics", "friction"},
    "constraints": {"spatial", "model", "dynamics", "kane"},
    "integrators": {"spatial", "model", "dynamics", "kane", "constraints"},
    "sim": {"spatial", "model", "dynamics", "kane", "constraints", "integrators", "forces",
            "friction"},
    "identify": {"spatial", "model", "dynamics", "friction", "sim"},
    "verify": {"spatial", "model", "dynamics", "kane", "constraints", "integrators",
               "forces", "friction", "sim"},
    "viz": {"spatial", "model", "dynamics", "sim"},
    "scenario": {"spatial", "model", "dynamics", "kane", "constraints", "integrators",
                 "forces", "friction", "sim", "identify", "verify", "viz"},
    # the package root composes everything below the scenario layer (and registers
    # the notebook view of viz in sim, and friction's older names from sim)
    "__init__": {"spatial", "model", "dynamics", "kane", "constraints", "integrators",
                 "forces", "friction", "sim", "identify", "verify", "viz"},
    "cli": {"kanedyn", "spatial", "model", "dynamics", "kane", "constraints", "integrators",
            "forces", "friction", "sim", "identify", "verify", "viz", "scenario"},
    "__main__": {"cli"},
    **{b: set() for b in BASE},
}

#: Known departures, each with its reason: (importing file, imported package).
EXCEPTIONS = {
    # DESIGN.md names sweeps as one of the two users of the scenario layer ("imported by
    # cli and sweep only"); sim/sweep.py imports it inside the functions that read a
    # scenario (and for a type hint), so that ``import kanedyn`` never loads it —
    # test_import_kanedyn_does_not_load_the_scenario_layer holds it to that
    ("sim/sweep.py", "scenario"),
    # validation by simulation drives kd.simulate with the measured torques, which sim
    # takes only as a force element (JointTorque); forces is a leaf below sim, so the
    # import points down the layers, not up, but DESIGN.md lists identify's uses as
    # dynamics, friction and sim only
    ("identify/validation.py", "forces"),
    # the compiled discrete-gradient loop (AVF, Itoh–Abe, Gonzalez) evaluates the force
    # elements inside its Newton iteration, by the one compiled form of them
    # (forces/kernel.py, rows of parameters); numba cannot take that kernel as an argument
    # and keep its disk cache (a function argument's type differs in every process), so
    # the loop imports it — forces is a leaf below sim
    ("integrators/discrete_gradient_compiled.py", "forces"),
    # the same for the compiled midpoint, gauss4 and Störmer–Verlet loops (their stage
    # equations and kicks take the force rows, for the same reason)
    ("integrators/gauss_compiled.py", "forces"),
    ("integrators/verlet_compiled.py", "forces"),
    # and AVF's compiled loop in the chart of ball and free joints (its residual takes them)
    ("integrators/avf_chart_compiled.py", "forces"),
    # and the compiled constrained energy–momentum loop (its step equations take them)
    ("integrators/constrained_energy_momentum_compiled.py", "forces"),
    # and energy_momentum's compiled floating variant (its residual takes the joints' rows)
    ("integrators/floating_cayley_compiled.py", "forces"),
    # and the compiled Kane systems' loops (their kicks and step equations take the rows)
    ("integrators/kane_compiled.py", "forces"),
}


def package_of(path: Path) -> str:
    rel = path.relative_to(SRC).parts
    return rel[0][:-3] if len(rel) == 1 else rel[0]


def imports_of(path: Path):
    """(line, imported kanedyn package or "kanedyn" for the root, top level?) of every
    import in the file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    here = ["kanedyn"] + parts[:-1]  # the package the file is in (its own, for __init__)
    top = {id(n) for n in tree.body}
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name.split(".") for a in node.names if a.name.split(".")[0] == "kanedyn"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)]
                mod = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "kanedyn":
                mod = node.module.split(".")
            else:
                continue
            targets = [mod + [a.name] for a in node.names] if len(mod) == 1 else [mod]
        for t in targets:
            yield node.lineno, (t[1] if len(t) > 1 else "kanedyn"), id(node) in top


def test_every_import_runs_the_way_design_draws():
    files = sorted(SRC.rglob("*.py"))
    assert len(files) > 100
    bad = []
    for f in files:
        pkg = package_of(f)
        if pkg == "data":  # the shipped robots' generator script, no kanedyn imports
            continue
        allowed = ALLOWED[pkg] | BASE | {pkg}
        rel = str(f.relative_to(SRC))
        for line, target, _ in imports_of(f):
            if target not in allowed and (rel, target) not in EXCEPTIONS:
                bad.append(f"{rel}:{line} imports {target}")
    assert not bad, "imports against DESIGN.md's order:\n" + "\n".join(bad)


def test_the_exceptions_are_still_needed():
    """An exception that no import uses any more is taken off the list."""
    for rel, target in EXCEPTIONS:
        assert any(t == target for _, t, _ in imports_of(SRC / rel)), (rel, target)


def test_friction_is_a_leaf():
    """friction imports spatial, model, dynamics and errors only — no sim, forces,
    integrators, scenario, cli, nor the package root (not even inside a function)."""
    for f in sorted((SRC / "friction").glob("*.py")):
        for line, target, _ in imports_of(f):
            assert target in {"spatial", "model", "dynamics", "errors", "friction"}, \
                f"friction/{f.name}:{line} imports {target}"


def test_no_function_imports_the_package_root():
    """``import kanedyn`` inside a function hides an upward import; only the command line
    (the top) imports the root, once, at its top."""
    for f in sorted(SRC.rglob("*.py")):
        for line, target, top in imports_of(f):
            if target == "kanedyn":
                assert top and package_of(f) == "cli", f"{f.relative_to(SRC)}:{line}"


#: integrators that call the joints' compiled configuration maps (``integrate``, the
#: primitives dynamics' kernels and sim's configuration kernel call too): the tangent form
#: of the compiled midpoint/gauss4 needs ``q0 ⊕ ξ`` inside its Newton iteration, and
#: integrators may not import sim, where the whole-model map lives
JOINT_MAP_IMPORTS = {"gauss_compiled.py": ("from ..model.joints import free, planar, spherical",)}
#: the first-run jobs of the compiled loops (kanedyn.dynamics.first_calls.loop_ready: a
#: compiler process runs a few steps of a one-link model, which compiles the loop for the
#: argument types of every run): they need a small Model to run, and read nothing of it
FIRST_RUN_IMPORTS = ("from ..model.builders import pendulum_chain",
                     "from ..model.builders import random_tree")


def test_integrators_read_capabilities_not_class_names_or_model_insides():
    for f in sorted((SRC / "integrators").glob("*.py")):
        text = f.read_text(encoding="utf-8")
        for allowed in JOINT_MAP_IMPORTS.get(f.name, ()) + FIRST_RUN_IMPORTS:
            text = text.replace(allowed, "")
        assert "__name__ ==" not in text, f.name
        assert ".model." not in text.replace("kanedyn.model.", ""), f.name


@pytest.mark.parametrize("module", ["kanedyn.scenario", "tomllib"])
def test_import_kanedyn_does_not_load_the_scenario_layer(module):
    code = f"import kanedyn, sys; assert {module!r} not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, env={
        "PYTHONPATH": str(SRC.parent), "PATH": "/usr/bin:/bin"})
