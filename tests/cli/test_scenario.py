"""Scenario files: validation messages name the key and the line."""

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.scenario import (
    build_model,
    compile_expression,
    initial_state,
    load_scenario,
    parse_scenario,
)

GOOD = """\
[model]
builder = "pendulum_chain"
n = 3
planar = true

[initial]
q = [0.5, 0.0, 0.0]

[integrator]
method = "rk4"
dt = 1e-3

[run]
t_final = 0.1
"""


def write(tmp_path, text):
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


def test_good_scenario_builds_model_and_state(tmp_path):
    sc = load_scenario(write(tmp_path, GOOD))
    model = build_model(sc)
    assert model.nv == 3
    q0, v0 = initial_state(sc, model)
    assert np.allclose(q0, [0.5, 0, 0]) and np.allclose(v0, 0)


@pytest.mark.parametrize("text, message", [
    (GOOD.replace('method = "rk4"', 'methd = "rk4"'),
     r"unknown key 'methd' in \[integrator\] \(line 10\); valid keys: method"),
    (GOOD.replace("dt = 1e-3", "dt = -1.0"), r"dt must be > 0 \(line 11\)"),
    (GOOD.replace("t_final = 0.1", "t_final = 'long'"), r"\[run\]\.t_final must be int or float, "
     r"got 'long' \(line 14\)"),
    (GOOD + "\n[extra]\nx = 1\n", r"unknown table \[extra\] \(line 16\)"),
    (GOOD.replace("[run]\nt_final = 0.1\n", ""), r"needs a \[run\] table"),
    (GOOD.replace("q = [0.5, 0.0, 0.0]", "q = [0.5]"), r"q has 1 entries, "
     r"the model needs 3 .* \(line 7\)"),
    (GOOD.replace('builder = "pendulum_chain"', 'builder = "pendulum"'),
     r"unknown builder 'pendulum' \(line 2\); valid builders: pendulum_chain"),
    (GOOD.replace("n = 3", "n = 3\nwheels = 2"), r"pendulum_chain: .*wheels"),
    ("[model\nbuilder=1", r"malformed TOML"),
])
def test_bad_scenarios_name_key_and_line(tmp_path, text, message):
    with pytest.raises(kd.ScenarioError, match=message):
        sc = load_scenario(write(tmp_path, text))
        m = build_model(sc)
        initial_state(sc, m)


def test_missing_file_is_a_scenario_error(tmp_path):
    with pytest.raises(kd.ScenarioError, match="cannot read scenario"):
        load_scenario(tmp_path / "nope.toml")


def test_parse_requires_one_model_source():
    data = {"model": {"builder": "pendulum_chain", "urdf": "x.urdf"},
            "integrator": {"method": "rk4"}, "run": {"t_final": 1.0}}
    with pytest.raises(kd.ScenarioError, match="exactly one of"):
        parse_scenario(data)


def test_expressions_are_evaluated_safely():
    f = compile_expression("0.5 * sin(2 * t) - 0.1 * v[1] + q[0] ** 2")
    q, v = np.array([2.0, 0.0]), np.array([0.0, 3.0])
    assert f(0.25, q, v) == pytest.approx(0.5 * np.sin(0.5) - 0.3 + 4.0)
    for bad, msg in [("__import__('os')", "only the listed functions"),
                     ("q.__class__", "Attribute is not allowed"),
                     ("open('x')", "only the listed functions"), ("t + w", "unknown name 'w'"),
                     ("1 +", "cannot parse")]:
        with pytest.raises(kd.ScenarioError, match=msg):
            compile_expression(bad)


def test_scenario_runs_and_its_budget_closes(tmp_path):
    from kanedyn.scenario import run, summarize

    text = GOOD + """
[[forces]]
type = "damper"
joint = "joint1"
damping = 0.2

[[forces]]
type = "torque"
joint = "joint2"
expression = "0.3 * sin(5 * t)"
"""
    sc = load_scenario(write(tmp_path, text.replace('method = "rk4"', 'method = "rk4"')))
    model, traj = run(sc, progress=False)
    s = summarize(traj)
    assert s["t_final"] == pytest.approx(0.1)
    # damping and the torque change the energy, the budget E − E0 − W_nc stays at RK4's error
    assert s["max_energy_change"] > 1e-5
    assert s["max_budget_error"] < 1e-8
    # the same run by hand through the Python API gives the same final state
    forces = [kd.forces.JointDamper("joint1", 0.2),
              kd.forces.JointTorque(lambda t, q, v: [0.3 * np.sin(5 * t)], "joint2")]
    ref = kd.simulate(model, [0.5, 0, 0], [0, 0, 0], 0.1, method="rk4", dt=1e-3, forces=forces,
                      progress=False)
    assert np.allclose(traj.q[-1], ref.q[-1], atol=1e-14)


def test_unknown_force_type_and_joint(tmp_path):
    from kanedyn.scenario import build_forces

    for extra, msg in [('[[forces]]\ntype = "magnet"\n', r"unknown force type \(line 17\)"),
                       ('[[forces]]\ntype = "damper"\njoint = "hip"\n',
                        r"no joint 'hip' \(line 18\); joints are joint1")]:
        sc = load_scenario(write(tmp_path, GOOD + "\n" + extra))
        with pytest.raises(kd.ScenarioError, match=msg):
            build_forces(sc, build_model(sc))


FOUR_BAR = """\
[model]
builder = "pendulum_chain"
n = 3

[initial]
q = [0.6, -1.2, 1.2]

[[constraints]]
type = "point"
body_a = "link3"
point_a = [0.0, 0.0, -1.0]
point_b = [1.2, 0.0, 0.0]
axes = [0, 2]

[integrator]
method = "radau5"
formulation = "index3"
rtol = 1e-8
atol = 1e-8

[run]
t_final = 0.5
"""


def test_scenario_with_a_loop_closure(tmp_path):
    from kanedyn.scenario import run, summarize

    sc = load_scenario(write(tmp_path, FOUR_BAR))
    model, traj = run(sc, progress=False)
    s = summarize(traj)
    # three links and the ground: a four-bar; the tip stays on its pin
    tip = [kd.frame_placement(model, q, "link3")[1] + kd.frame_placement(model, q, "link3")[0]
           @ [0, 0, -1.0] for q in traj.q]
    assert np.allclose(np.array(tip)[:, [0, 2]], [1.2, 0.0], atol=1e-7)
    assert s["max_constraint_residual"] < 1e-7
    assert np.ptp(traj.q[:, 0]) > 0.05  # and it moves
    assert s["max_energy_change"] < 1e-5  # no damping: energy stays to the solver's tolerance


def test_bad_constraint_is_named(tmp_path):
    from kanedyn.scenario import build_system

    sc = load_scenario(write(tmp_path, FOUR_BAR.replace('type = "point"', 'type = "glue"')))
    with pytest.raises(kd.ScenarioError, match=r"\[\[constraints\]\] #1: .*'glue' .*\(line 8\)"):
        build_system(sc, build_model(sc))
