"""Scenario files (TOML): a model, an initial state, forces, an integrator, what to write.

A scenario is read with :func:`load_scenario` (from a file) or
:func:`parse_scenario` (from a dict), validated against :data:`SCHEMA`, and
errors name the key and, for files, the line::

    [model]
    builder = "pendulum_chain"      # or: urdf = "arm.urdf"
    n = 3
    planar = true

    [initial]
    q = [0.5, 0.0, 0.0]             # or "neutral", or "random" (with seed)
    v = "zero"

    [[forces]]
    type = "damper"
    joint = "joint1"
    damping = 0.05

    [[forces]]
    type = "torque"
    joint = "joint2"
    expression = "0.2 * sin(2 * t) - 0.1 * v[1]"

    [integrator]
    method = "avf"
    dt = 1e-3

    [run]
    t_final = 2.0

    [output]
    folder = "out"
"""

from __future__ import annotations

import ast
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ScenarioError
from .model import builders as models
from .model import neutral, random_configuration
from .model.urdf import load_urdf
from .sim.simulate import simulate

# key -> (type(s), required, description); tables map to nested dicts
SCHEMA: dict[str, dict[str, tuple]] = {
    "model": {
        "builder": (str, False, "name of a builder in kanedyn.models (pendulum_chain, ...)"),
        "urdf": (str, False, "path of a URDF file (relative to the scenario file)"),
        "robot": (str, False, "name of a robot shipped with kanedyn"),
        "mjcf": (str, False, "path of an MJCF (MuJoCo XML) file (relative to the scenario "
                 "file); its joint springs, dampers, friction loss and equalities apply"),
        "frictionloss": (str, False, "MJCF: 'smooth' (default) or 'exact' friction loss"),
        "floating_base": (bool, False, "URDF: put a free joint under the root link"),
        "gravity": (list, False, "gravity vector [gx, gy, gz]"),
        "*": (object, False, "further keyword arguments of the builder"),
    },
    "initial": {
        "q": ((list, str), False, "list of nq numbers, 'neutral' or 'random'"),
        "v": ((list, str), False, "list of nv numbers, 'zero' or 'random'"),
        "seed": (int, False, "seed for 'random'"),
    },
    "forces": {  # an array of tables
        "type": (str, True, "torque | spring | damper | friction | wrench | motor"),
        "actuator": (str, False, "name of an MJCF <motor> (motor)"),
        "joint": (str, False, "joint name"),
        "body": (str, False, "body name (wrench)"),
        "expression": (str, False, "torque (torque) or control (motor) as an expression of "
                       "t, q, v"),
        "stiffness": ((int, float), False, "spring stiffness"),
        "rest": ((int, float), False, "spring rest position"),
        "damping": ((int, float), False, "viscous damping coefficient"),
        "wrench": (list, False, "[nx, ny, nz, fx, fy, fz] in body coordinates (wrench)"),
        "*": (object, False, "friction model parameters (Fc, Fs, vs, delta, Fv, ...)"),
    },
    "constraints": {
        "type": (str, True, "constraint type"),
        "*": (object, False, "constraint parameters"),
    },
    "integrator": {
        "method": (str, True, "integration method name"),
        "dt": ((int, float), False, "step size (fixed-step methods)"),
        "rtol": ((int, float), False, "relative tolerance (adaptive methods)"),
        "atol": ((int, float), False, "absolute tolerance (adaptive methods)"),
        "project": ((str, list), False, "'energy' or ['energy', 'momentum']"),
        "formulation": (str, False, "DAE formulation for constrained systems"),
    },
    "run": {
        "t_final": ((int, float), True, "duration in seconds"),
        "progress": (bool, False, "show a progress bar"),
    },
    "output": {
        "folder": (str, False, "where results are written"),
        "formats": (list, False, "any of 'npz', 'csv'"),
        "plots": (bool, False, "write plots"),
        "report": (bool, False, "write report.html"),
        "animate": (str, False, "write an animation (.gif or .mp4)"),
        "package_paths": (list, False, "folders to find a URDF's package:// meshes in"),
    },
}
ARRAY_TABLES = {"forces", "constraints"}
REQUIRED_TABLES = {"model", "integrator", "run"}


def _key_line(text: str | None, table: str, key: str | None, index: int | None = None) -> str:
    """' (line N)' of a key inside a table of the TOML text, or '' if it cannot be found."""
    if not text:
        return ""
    lines = text.splitlines()
    header_seen, count = None, -1
    for n, raw in enumerate(lines, 1):
        s = raw.split("#", 1)[0].strip()
        if s in (f"[{table}]", f"[[{table}]]"):
            count += 1
            if index is None or count == index:
                header_seen = n
                if key is None:
                    return f" (line {n})"
                continue
            header_seen = None
        elif s.startswith("["):
            header_seen = None
        elif header_seen and key and s.split("=", 1)[0].strip() == key:
            return f" (line {n})"
    return f" (line {header_seen})" if header_seen else ""


def _check_table(name: str, tab: Any, text: str | None, index: int | None = None) -> None:
    where = f"[{name}]" if index is None else f"[[{name}]] #{index + 1}"
    if not isinstance(tab, dict):
        raise ScenarioError(f"{where} must be a table{_key_line(text, name, None, index)}")
    spec = SCHEMA[name]
    for key, val in tab.items():
        if key not in spec:
            if "*" in spec:
                continue
            raise ScenarioError(
                f"unknown key {key!r} in {where}{_key_line(text, name, key, index)}; "
                f"valid keys: {', '.join(k for k in spec if k != '*')}"
            )
        types = spec[key][0]
        types = types if isinstance(types, tuple) else (types,)
        if object not in types and (not isinstance(val, types) or isinstance(val, bool)
                                    and bool not in types):
            names = " or ".join(t.__name__ for t in types)
            raise ScenarioError(
                f"{where}.{key} must be {names}, got {val!r}{_key_line(text, name, key, index)}"
            )
    for key, (_, required, desc) in spec.items():
        if required and key not in tab:
            raise ScenarioError(
                f"{where} needs {key!r} ({desc}){_key_line(text, name, None, index)}"
            )


@dataclass
class Scenario:
    """A validated scenario. ``base`` is the folder relative paths are taken from."""

    data: dict
    base: Path = field(default_factory=Path.cwd)
    text: str | None = None
    source: str = "<dict>"

    def line(self, table: str, key: str | None = None, index: int | None = None) -> str:
        return _key_line(self.text, table, key, index)

    def get(self, table: str, key: str, default: Any = None) -> Any:
        return self.data.get(table, {}).get(key, default)


def parse_scenario(data: dict, base: str | Path | None = None, text: str | None = None,
                   source: str = "<dict>") -> Scenario:
    """Validate a scenario given as a dict (as TOML would give it)."""
    if not isinstance(data, dict):
        raise ScenarioError("a scenario must be a table of tables")
    for name in data:
        if name not in SCHEMA:
            raise ScenarioError(
                f"unknown table [{name}]{_key_line(text, name, None)}; "
                f"valid tables: {', '.join(SCHEMA)}"
            )
    for name in REQUIRED_TABLES:
        if name not in data:
            raise ScenarioError(f"{source}: the scenario needs a [{name}] table")
    for name, tab in data.items():
        if name in ARRAY_TABLES:
            if not isinstance(tab, list):
                raise ScenarioError(f"{name} must be an array of tables: write [[{name}]]")
            for i, t in enumerate(tab):
                _check_table(name, t, text, i)
        else:
            _check_table(name, tab, text)
    m = data["model"]
    given = [k for k in ("builder", "urdf", "robot", "mjcf") if k in m]
    if len(given) != 1:
        raise ScenarioError(
            f"[model] needs exactly one of 'builder', 'urdf', 'robot' or 'mjcf'"
            f"{_key_line(text, 'model', None)}; got {given or 'none'}"
        )
    if data["run"]["t_final"] < 0:
        raise ScenarioError(f"[run] t_final must be ≥ 0{_key_line(text, 'run', 't_final')}")
    dt = data["integrator"].get("dt")
    if dt is not None and dt <= 0:
        raise ScenarioError(f"[integrator] dt must be > 0{_key_line(text, 'integrator', 'dt')}")
    return Scenario(data, Path(base) if base else Path.cwd(), text, source)


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a TOML scenario file."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ScenarioError(f"cannot read scenario {str(path)!r}: {e.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: malformed TOML: {e}") from None
    return parse_scenario(data, path.parent, text, str(path))


# --- expressions of t, q, v ---------------------------------------------------

_FUNCS = {name: getattr(np, name) for name in (
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh",
    "exp", "log", "sqrt", "abs", "sign", "minimum", "maximum", "clip", "where", "hypot")}
_CONSTS = {"pi": math.pi, "e": math.e}
_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp,
            ast.Call, ast.Name, ast.Load, ast.Constant, ast.Subscript, ast.Index, ast.Slice,
            ast.Tuple, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)


def compile_expression(expr: str, where: str = "expression"):
    """A function f(t, q, v) of a safe arithmetic expression (numpy functions, q[i], v[i]).

    Only arithmetic, comparisons, indexing of q and v, the constants pi and e
    and the functions in ``_FUNCS`` are allowed; anything else is an error
    naming the offending name.
    """
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as e:
        raise ScenarioError(f"{where}: cannot parse {expr!r}: {e.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ScenarioError(f"{where}: {type(node).__name__} is not allowed in {expr!r}")
        if isinstance(node, ast.Name) and node.id not in ("t", "q", "v", *_FUNCS, *_CONSTS):
            raise ScenarioError(
                f"{where}: unknown name {node.id!r} in {expr!r}; use t, q, v, "
                f"{', '.join(_CONSTS)} and {', '.join(sorted(_FUNCS))}"
            )
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                               and node.func.id in _FUNCS):
            raise ScenarioError(f"{where}: only the listed functions may be called in {expr!r}")
    code = compile(tree, where, "eval")
    env = {"__builtins__": {}, **_FUNCS, **_CONSTS}

    def f(t: float, q: np.ndarray, v: np.ndarray):
        return eval(code, env, {"t": t, "q": q, "v": v})  # noqa: S307 - validated AST above

    f.source = expr
    return f


# --- building what a scenario names --------------------------------------------

def build_model(sc: Scenario):
    """The Model a scenario's [model] table describes."""
    m = dict(sc.data["model"])
    gravity = m.pop("gravity", None)
    if gravity is not None and (len(gravity) != 3
                                or not all(isinstance(g, (int, float)) for g in gravity)):
        raise ScenarioError(f"[model] gravity must be 3 numbers{sc.line('model', 'gravity')}")
    if "builder" in m:
        name = m.pop("builder")
        builders = [n for n in ("pendulum_chain", "random_tree", "free_body")]
        if name not in builders:
            raise ScenarioError(
                f"[model] unknown builder {name!r}{sc.line('model', 'builder')}; "
                f"valid builders: {', '.join(builders)}"
            )
        if gravity is not None:
            m["gravity"] = gravity
        try:
            return getattr(models, name)(**m)
        except TypeError as e:
            raise ScenarioError(f"[model] {name}: {e}{sc.line('model')}") from None
    if "mjcf" in m:
        robot = mjcf_robot(sc)
        m.pop("mjcf")
        m.pop("frictionloss", None)
        if m:
            raise ScenarioError(f"[model] unknown keys for an MJCF model: {sorted(m)}"
                                f"{sc.line('model')}")
        return robot.model.with_gravity(gravity) if gravity is not None else robot.model
    fb = m.pop("floating_base", False)
    if "urdf" in m:
        path = Path(m.pop("urdf"))
        path = path if path.is_absolute() else sc.base / path
        if not path.exists():
            raise ScenarioError(f"[model] URDF file {str(path)!r} does not exist"
                                f"{sc.line('model', 'urdf')}")
        model = load_urdf(path, floating_base=fb)
    else:
        model = models.robot(m.pop("robot"), floating_base=fb)
    if m:
        raise ScenarioError(f"[model] unknown keys for a URDF model: {sorted(m)}{sc.line('model')}")
    return model.with_gravity(gravity) if gravity is not None else model


def mjcf_robot(sc: Scenario):
    """The parsed MJCF file of a scenario's ``[model] mjcf`` (read once per scenario)."""
    from .model.mjcf import parse_mjcf

    cached = getattr(sc, "_mjcf_robot", None)
    if cached is not None:
        return cached
    path = Path(sc.data["model"]["mjcf"])
    path = path if path.is_absolute() else sc.base / path
    if not path.exists():
        raise ScenarioError(f"[model] MJCF file {str(path)!r} does not exist"
                            f"{sc.line('model', 'mjcf')}")
    robot = parse_mjcf(path)
    sc._mjcf_robot = robot
    return robot


def initial_state(sc: Scenario, model) -> tuple[np.ndarray, np.ndarray]:
    """(q0, v0) from the [initial] table (default: neutral configuration, at rest)."""
    ini = sc.data.get("initial", {})
    rng = np.random.default_rng(ini.get("seed", 0))
    q = ini.get("q", "neutral")
    if q == "neutral" and "mjcf" in sc.data["model"]:
        q0 = mjcf_robot(sc).qpos0.copy()  # MuJoCo's reference pose (free bodies where placed)
    elif q == "neutral":
        q0 = neutral(model)
    elif q == "random":
        q0 = random_configuration(model, rng)
    elif isinstance(q, list):
        q0 = np.asarray(q, dtype=float)
        if q0.shape != (model.nq,):
            raise ScenarioError(f"[initial] q has {q0.size} entries, the model needs "
                                f"{model.nq} ({', '.join(model.joint_names)})"
                                f"{sc.line('initial', 'q')}")
    else:
        raise ScenarioError(f"[initial] q must be a list, 'neutral' or 'random', got {q!r}"
                            f"{sc.line('initial', 'q')}")
    v = ini.get("v", "zero")
    if v == "zero":
        v0 = np.zeros(model.nv)
    elif v == "random":
        v0 = rng.normal(size=model.nv)
    elif isinstance(v, list):
        v0 = np.asarray(v, dtype=float)
        if v0.shape != (model.nv,):
            raise ScenarioError(f"[initial] v has {v0.size} entries, the model needs "
                                f"{model.nv}{sc.line('initial', 'v')}")
    else:
        raise ScenarioError(f"[initial] v must be a list, 'zero' or 'random', got {v!r}"
                            f"{sc.line('initial', 'v')}")
    return q0, v0


FORCE_TYPES = ("torque", "spring", "damper", "friction", "wrench", "motor")
_FRICTION_KEYS = {"model", "smoothing", "eps", "surface_velocity"}


def build_forces(sc: Scenario, model) -> list:
    """The force elements of the scenario's [[forces]] tables."""
    from . import forces as fe
    from . import friction

    out = []
    if "mjcf" in sc.data["model"]:
        mode = sc.data["model"].get("frictionloss", "smooth")
        if mode not in ("smooth", "exact"):
            raise ScenarioError(f"[model] frictionloss must be 'smooth' or 'exact', got "
                                f"{mode!r}{sc.line('model', 'frictionloss')}")
        out += fe.mjcf_forces(mjcf_robot(sc), frictionloss=mode)
    for i, f in enumerate(sc.data.get("forces", [])):
        kind = f["type"]
        where = f"[[forces]] #{i + 1} ({kind})"
        line = sc.line("forces", None, i)
        if kind not in FORCE_TYPES:
            raise ScenarioError(f"{where}: unknown force type{sc.line('forces', 'type', i)}; "
                                f"valid types: {', '.join(FORCE_TYPES)}")

        def need(key, f=f, where=where, line=line):
            if key not in f:
                raise ScenarioError(f"{where} needs {key!r}{line}")
            return f[key]

        if kind in ("torque", "spring", "damper", "friction") and need("joint") not in \
                model.joint_names:
            raise ScenarioError(f"{where}: no joint {f['joint']!r}{sc.line('forces', 'joint', i)}"
                                f"; joints are {', '.join(model.joint_names)}")
        if kind == "torque":
            expr = compile_expression(need("expression"), f"{where} expression")
            out.append(fe.JointTorque(lambda t, q, v, e=expr: np.atleast_1d(e(t, q, v)),
                                      f["joint"]))
        elif kind == "spring":
            out.append(fe.JointSpring(f["joint"], float(need("stiffness")),
                                      float(f.get("rest", 0.0))))
        elif kind == "damper":
            out.append(fe.JointDamper(f["joint"], f.get("damping")))
        elif kind == "friction":
            params = {k: v for k, v in f.items() if k not in _FRICTION_KEYS | {"type", "joint"}}
            name = f.get("model", "stribeck")
            laws = {"stribeck": friction.Stribeck, "rational": friction.RationalStribeck,
                    "tanh": friction.TanhStribeck, "simscape": friction.SimscapeFriction}
            if name not in laws:
                raise ScenarioError(f"{where}: unknown friction model {name!r}"
                                    f"{sc.line('forces', 'model', i)}; valid: {', '.join(laws)}")
            try:
                law = laws[name](**params)
            except TypeError as e:
                raise ScenarioError(f"{where}: {e}{line}") from None
            if "smoothing" in f:
                law = law.smoothed(f["smoothing"], float(f.get("eps", 1e-3)))
            out.append(fe.JointFriction(f["joint"], law, float(f.get("surface_velocity", 0.0))))
        elif kind == "motor":
            out.append(_motor(sc, i, where, need("actuator"),
                              compile_expression(need("expression"), f"{where} expression")))
        else:
            out.append(fe.ExternalWrench(need("body"), need("wrench")))
    return out


def _motor(sc: Scenario, i: int, where: str, name: str, ctrl):
    """An MJCF ``<motor>`` driven by a control expression: τ_joint = gear · ctrl, with ctrl
    held to ctrlrange and the force to forcerange where the file limits them (MuJoCo's
    actuator model: its clamping is part of the actuator, not of the input)."""
    from . import forces as fe

    if "mjcf" not in sc.data["model"]:
        raise ScenarioError(f"{where}: a motor is an actuator of an MJCF model; the [model] "
                            f"has no 'mjcf'{sc.line('forces', 'type', i)}")
    acts = {a.name: a for a in mjcf_robot(sc).actuators}
    if name not in acts:
        raise ScenarioError(f"{where}: no motor {name!r} in the MJCF file"
                            f"{sc.line('forces', 'actuator', i)}; motors: "
                            f"{', '.join(acts) or 'none'}")
    a = acts[name]

    def tau(t, q, v, a=a, ctrl=ctrl):
        u = float(np.asarray(ctrl(t, q, v), dtype=float).reshape(-1)[0])
        if a.ctrlrange is not None:
            u = min(max(u, a.ctrlrange[0]), a.ctrlrange[1])
        f = a.gear * u
        if a.forcerange is not None:
            f = min(max(f, a.forcerange[0]), a.forcerange[1])
        return np.array([f])

    return fe.JointTorque(tau, a.joint)


def integrator_options(sc: Scenario) -> dict:
    """Keyword arguments of kd.simulate from the [integrator] and [run] tables."""
    opts = {k: v for k, v in sc.data["integrator"].items()}
    if isinstance(opts.get("project"), list):
        opts["project"] = tuple(opts["project"])
    if "progress" in sc.data["run"]:
        opts["progress"] = sc.data["run"]["progress"]
    return opts


def build_system(sc: Scenario, model):
    """The Model itself, or a ConstrainedSystem when the scenario has [[constraints]]
    (loop closures: see :func:`kanedyn.constraints.loops.loop_closure_from_spec`)."""
    specs = sc.data.get("constraints", [])
    from .constraints import ConstrainedSystem
    from .constraints.loops import loop_closure_from_spec
    from .errors import ConstraintError

    closures = []
    if "mjcf" in sc.data["model"]:
        from .constraints import mjcf_loops

        closures += mjcf_loops(mjcf_robot(sc))
    if not specs and not closures:
        return model
    for i, spec in enumerate(specs):
        try:
            closures.append(loop_closure_from_spec(spec, i))
        except ConstraintError as e:
            raise ScenarioError(f"[[constraints]] #{i + 1}: {e}{sc.line('constraints', None, i)}"
                                ) from None
    return ConstrainedSystem(model, closures)


def run(sc: Scenario, progress: bool | None = None):
    """Simulate a scenario: returns (model, trajectory)."""
    model = build_model(sc)
    q0, v0 = initial_state(sc, model)
    forces = build_forces(sc, model)
    system = build_system(sc, model)
    opts = integrator_options(sc)
    if progress is not None:
        opts["progress"] = progress
    try:
        traj = simulate(system, q0, v0, float(sc.data["run"]["t_final"]), forces=forces,
                        **opts)
    except TypeError as e:  # an option the method does not take
        raise ScenarioError(f"[integrator]: {e}{sc.line('integrator')}") from None
    return model, traj


def summarize(traj) -> dict:
    """Summary figures of a trajectory: final state, energy and budget errors, step count."""
    E = traj.energy
    scale = max(abs(float(E[0])), 1e-300)
    return {
        "t_final": float(traj.t[-1]),
        "samples": int(len(traj.t)),
        "final_q": [float(x) for x in traj.q[-1]],
        "final_v": [float(x) for x in traj.v[-1]],
        "energy_initial": float(E[0]),
        "energy_final": float(E[-1]),
        "max_energy_change": float(np.abs(E - E[0]).max() / scale),
        "max_budget_error": float(np.abs(traj.budget).max() / scale),
        **({"max_constraint_residual": float(np.abs(traj.stats["residual_g"]).max())}
           if "residual_g" in getattr(traj, "stats", {}) else {}),
    }


def run_summary(sc: Scenario) -> dict:
    """Run a scenario and return only its summary (what a sweep records per run)."""
    _, traj = run(sc, progress=False)
    return summarize(traj)


def model_visuals(sc: Scenario, model) -> list | None:
    """The visual geometry of a scenario's URDF model (``[model] urdf``: its ``<visual>``
    elements) or MJCF model (``[model] mjcf``: its visible geoms), drawn in the report;
    None for a builder or a shipped robot (they carry no mesh files).
    ``[output] package_paths`` (relative to the scenario file) are searched for
    ``package://`` meshes; meshes not found are warned about, their bodies drawn as
    skeletons."""
    from .model.visuals import load_urdf_visuals

    m = sc.data["model"]
    if "mjcf" in m:  # the file's visible geoms
        return list(mjcf_robot(sc).visuals) or None
    if "urdf" not in m:
        return None
    path = Path(m["urdf"])
    path = path if path.is_absolute() else sc.base / path
    paths = [p if Path(p).is_absolute() else sc.base / p
             for p in sc.get("output", "package_paths", []) or []]
    return load_urdf_visuals(path, model, package_paths=paths)
