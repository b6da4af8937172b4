"""Shared fixtures: a short trajectory of a 3D chain, and a headless Chromium.

Chromium is Debian's ``chromium`` package. When it is missing the fixture
installs it (``apt-get install -y chromium``, after ``apt-get update`` if the
first attempt fails) when running as root with apt available; the browser
tests skip, saying why, only where that is impossible.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from types import SimpleNamespace

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.verify.energy import integrate_free_motion
from kanedyn.verify.subject import as_subject

_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
          "--disable-component-update", "--disable-sync", "--no-first-run"]


def _find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _install_chromium() -> str:
    """Try to install Debian's chromium; returns why it failed ('' on success).

    The suite's xdist workers may both get here at once; the second would find dpkg's
    lock held and skip its browser tests by timing, so they take turns on a lock file
    and the second finds the browser the first installed."""
    import fcntl

    with open(os.path.join(tempfile.gettempdir(), "kanedyn-chromium-install.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return "" if _find_chromium() else _apt_install_chromium()


def _apt_install_chromium() -> str:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "not running as root, so apt-get cannot install it"
    if shutil.which("apt-get") is None:
        return "apt-get is not available"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "-q", "chromium"]
    why = ""
    for cmds in ([install], [["apt-get", "update", "-q"], install]):
        try:
            for cmd in cmds:
                r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
                if r.returncode != 0:
                    why = f"`{' '.join(cmd)}` failed: {r.stderr.strip()[-300:]}"
                    break
            else:
                return ""
        except (OSError, subprocess.TimeoutExpired) as exc:
            why = f"apt-get failed: {exc}"
    return why


class Browser:
    """Headless Chromium, one fresh profile per call."""

    def __init__(self, exe: str):
        self.exe = exe

    def run(self, url: str, *args: str, timeout: float = 60) -> str:
        with tempfile.TemporaryDirectory() as profile:
            r = subprocess.run([self.exe, *_FLAGS, f"--user-data-dir={profile}", *args, url],
                               capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"chromium exited with {r.returncode}: {r.stderr[-500:]}")
        return r.stdout

    def dump_dom(self, url: str, budget_ms: int) -> str:
        return self.run(url, f"--virtual-time-budget={budget_ms}", "--dump-dom")

    def screenshot(self, url: str, png: str, budget_ms: int = 1000,
                   size: str = "800,900") -> None:
        self.run(url, f"--virtual-time-budget={budget_ms}", f"--window-size={size}",
                 f"--screenshot={png}")


@pytest.fixture(scope="session")
def browser() -> Browser:
    exe = _find_chromium()
    if exe is None:
        why = _install_chromium()
        exe = _find_chromium()
        if exe is None:
            pytest.skip(f"headless Chromium is not installed and cannot be installed: {why}")
    return Browser(exe)


@pytest.fixture(scope="session")
def chain_run():
    """A 3D double pendulum swinging for 1 s: model, t, q, v, energy (a trajectory's fields)."""
    model = kd.models.pendulum_chain(2, planar=False)
    s = as_subject(model)
    q0, v0 = s.random_state(np.random.default_rng(4))
    t, Q, V = integrate_free_motion(s, q0, v0, 1.0, n_out=61, rtol=1e-9)
    E = np.array([s.energy(q, v) for q, v in zip(Q, V, strict=True)])
    traj = SimpleNamespace(t=t, q=Q, v=V, energy=E, work_nc=np.zeros_like(t),
                           budget=E - E[0], method="DOP853")
    return model, traj


# --- a small robot with visuals: a box, a cylinder, an STL and an OBJ of our own ---------

MESH_ROBOT = """<?xml version="1.0"?>
<robot name="meshbot">
  <material name="signal_red"><color rgba="0.9 0.05 0.05 1"/></material>
  <link name="base">
    <visual>
      <origin xyz="0 0 -0.05" rpy="0 0 0"/>
      <geometry><box size="0.3 0.3 0.1"/></geometry>
      <material name="signal_red"/>
    </visual>
  </link>
  <joint name="j1" type="revolute">
    <parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.05" rpy="0 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="10" velocity="5"/>
  </joint>
  <link name="upper">
    <inertial><origin xyz="0 0 0.2"/><mass value="1.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.002"/></inertial>
    <visual>
      <origin xyz="0 0 0.2" rpy="0 0 0"/>
      <geometry><cylinder radius="0.04" length="0.4"/></geometry>
      <material name="steel"><color rgba="0.6 0.65 0.7 1"/></material>
    </visual>
  </link>
  <joint name="j2" type="revolute">
    <parent link="upper"/><child link="fore"/>
    <origin xyz="0 0 0.4" rpy="0.3 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="5"/>
  </joint>
  <link name="fore">
    <inertial><origin xyz="0 0 0.15"/><mass value="0.5"/>
      <inertia ixx="0.004" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.001"/></inertial>
    <visual>
      <origin xyz="0 0 0.15" rpy="0.1 0.2 0.3"/>
      <geometry><mesh filename="meshes/fore.stl" scale="1 1 1.5"/></geometry>
      <material name="teal"><color rgba="0.1 0.6 0.6 1"/></material>
    </visual>
  </link>
  <joint name="tool_fixed" type="fixed">
    <parent link="fore"/><child link="tool"/>
    <origin xyz="0 0 0.3" rpy="0 0.5 0"/>
  </joint>
  <link name="tool">
    <visual>
      <origin xyz="0 0 0.05" rpy="0 0 0"/>
      <geometry>
        <mesh filename="package://meshbot_description/meshes/ball.obj" scale="0.06 0.06 0.06"/>
      </geometry>
      <material name="gold"><color rgba="0.9 0.7 0.1 1"/></material>
    </visual>
  </link>
</robot>
"""


@pytest.fixture(scope="session")
def mesh_robot(tmp_path_factory):
    """``(urdf_path, model)``: a fixed-base arm whose visuals are a box (on the world), a
    cylinder, an STL (a box of 0.06 x 0.06 x 0.2, scaled by 1.5 along z) and an OBJ
    (an icosphere of 5120 triangles, scaled), the last on a link merged into its parent
    by a fixed joint, found through ``package://`` above the URDF's folder."""
    import trimesh

    root = tmp_path_factory.mktemp("meshbot_description")
    pkg = root / "meshbot_description"
    (pkg / "meshes").mkdir(parents=True)
    (pkg / "urdf").mkdir()
    (pkg / "package.xml").write_text("<package><name>meshbot_description</name></package>")
    trimesh.creation.box(extents=(0.06, 0.06, 0.2)).export(pkg / "meshes" / "fore.stl")
    trimesh.creation.icosphere(subdivisions=4, radius=1.0).export(pkg / "meshes" / "ball.obj")
    urdf = pkg / "urdf" / "meshbot.urdf"
    # the STL is found relative to the URDF's folder
    (pkg / "urdf" / "meshes").mkdir()
    (pkg / "urdf" / "meshes" / "fore.stl").write_bytes((pkg / "meshes" / "fore.stl").read_bytes())
    urdf.write_text(MESH_ROBOT)
    return urdf, kd.load_urdf(urdf)


@pytest.fixture(scope="session")
def mesh_run(mesh_robot):
    """The mesh robot swinging both joints through a full sine period in 2 s (61 samples)."""
    urdf, model = mesh_robot
    t = np.linspace(0.0, 2.0, 61)
    q = np.column_stack([1.2 * np.sin(np.pi * t), 0.9 * np.sin(np.pi * t + 0.5)])
    return SimpleNamespace(t=t, q=q)
