"""A scenario and the command line take an MJCF model like a URDF: the file's passive joint
forces and equalities come along, the initial state defaults to MuJoCo's qpos0."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.cli import load_model_spec
from kanedyn.errors import ScenarioError
from kanedyn.scenario import build_forces, build_model, build_system, initial_state, parse_scenario

XML = """<mujoco model="two">
  <worldbody>
    <body name="a" pos="0 0 1"><freejoint/><geom type="box" size="0.1 0.1 0.1"/>
      <body name="b" pos="0.2 0 0"><joint name="h" axis="0 1 0" damping="0.3" stiffness="2"
            springref="0.1" frictionloss="0.05"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/></body></body>
    <body name="c" pos="0.5 0 0"><joint name="s" type="slide" axis="1 0 0"/>
      <geom type="sphere" size="0.05"/></body>
  </worldbody>
  <equality><connect body1="b" body2="c" anchor="0.3 0 0"/></equality>
</mujoco>"""


def _scenario(tmp_path, **model):
    (tmp_path / "m.xml").write_text(XML)
    data = {"model": {"mjcf": "m.xml", **model}, "integrator": {"method": "rk4", "dt": 1e-3},
            "run": {"t_final": 0.1}}
    return parse_scenario(data, tmp_path)


def test_scenario_with_an_mjcf_model(tmp_path):
    sc = _scenario(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kd.KanedynWarning)
        model = build_model(sc)
        q0, v0 = initial_state(sc, model)
        forces = build_forces(sc, model)
        system = build_system(sc, model)
    assert model.joint_names == ["a_joint0", "h", "s"]
    # MuJoCo's reference pose: the free body where the file puts it
    np.testing.assert_allclose(q0, [0, 0, 1, 1, 0, 0, 0, 0, 0])
    assert sorted(type(f).__name__ for f in forces) == ["JointDamper", "JointFriction",
                                                        "JointSpring"]
    assert not next(f for f in forces if isinstance(f, kd.forces.JointFriction)).discontinuous
    assert isinstance(system, kd.constraints.ConstrainedSystem) and system.nc == 3
    assert np.abs(system.constraint(0.0, q0)).max() < 1e-12


def test_scenario_mjcf_options_and_errors(tmp_path):
    sc = _scenario(tmp_path, frictionloss="exact")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kd.KanedynWarning)
        forces = build_forces(sc, build_model(sc))
    assert next(f for f in forces if isinstance(f, kd.forces.JointFriction)).discontinuous
    with pytest.raises(ScenarioError, match="frictionloss must be 'smooth' or 'exact'"):
        sc = _scenario(tmp_path, frictionloss="soft")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", kd.KanedynWarning)
            build_forces(sc, build_model(sc))
    with pytest.raises(ScenarioError, match="MJCF file .*nope.xml' does not exist"):
        build_model(parse_scenario({"model": {"mjcf": "nope.xml"}, "integrator":
                                    {"method": "rk4"}, "run": {"t_final": 1.0}}, tmp_path))
    with pytest.raises(ScenarioError, match="exactly one of 'builder', 'urdf', 'robot' or "
                                            "'mjcf'"):
        parse_scenario({"model": {"mjcf": "m.xml", "robot": "ur5"}, "integrator":
                        {"method": "rk4"}, "run": {"t_final": 1.0}})


def test_command_line_model_spec_takes_an_mjcf_file(tmp_path):
    (tmp_path / "m.xml").write_text(XML)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kd.KanedynWarning)
        model = load_model_spec(str(tmp_path / "m.xml"))
    assert model.nv == 8


def test_a_motor_of_the_file_driven_by_an_expression(tmp_path):
    (tmp_path / "m.xml").write_text(XML.replace(
        "</mujoco>", '<actuator><motor name="m" joint="h" gear="3" ctrlrange="-1 1"/>'
                     '</actuator></mujoco>'))
    data = {"model": {"mjcf": "m.xml"}, "integrator": {"method": "rk4", "dt": 1e-3},
            "run": {"t_final": 0.1},
            "forces": [{"type": "motor", "actuator": "m", "expression": "2 * t - 1"}]}
    sc = parse_scenario(data, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kd.KanedynWarning)
        model = build_model(sc)
        forces = build_forces(sc, model)
    motor = next(f for f in forces if isinstance(f, kd.forces.JointTorque))
    motor = motor.bind(kd.ModelSystem(model))
    iv = model.bodies[model.joint_index("h")].iv.start
    q, v = np.zeros(model.nq), np.zeros(model.nv)
    assert motor.generalized_force(0.25, q, v)[iv] == pytest.approx(3 * (2 * 0.25 - 1))
    assert motor.generalized_force(5.0, q, v)[iv] == pytest.approx(3.0)  # ctrl held at 1
    data["forces"][0]["actuator"] = "nope"
    with pytest.raises(ScenarioError, match=r"no motor 'nope' in the MJCF file.*motors: m"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", kd.KanedynWarning)
        build_forces(parse_scenario(data, tmp_path), model)
