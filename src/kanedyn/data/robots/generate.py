"""Writes the robot descriptions of this directory (``<name>.urdf``).

    .venv/bin/python src/kanedyn/data/robots/generate.py

The files are written in the shape robot packages ship them: meshes referenced
by ``package://`` (never opened by kanedyn; the meshes are not shipped),
fixed flange, hand and sensor links, links without ``<inertial>``,
``<transmission>``, ``<gazebo>``, ``<material>`` and ``<safety_controller>``
elements, and a ``<mimic>`` finger. Sources of the numbers are given for
each robot below and in the header of each file. Inertias that are not
published are those of uniform boxes or cylinders of the stated size, so
every inertia is physical (positive definite, triangle inequality).

Sibling joints are named so that document order equals alphabetical order:
Pinocchio (through urdfdom) orders the children of a link alphabetically by
joint name, kanedyn by document order; with these files both give the same q.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE  # where save() writes (a test points it elsewhere to compare)
PI = np.pi


def fmt(x) -> str:
    return " ".join(repr(float(t)) for t in np.atleast_1d(x))  # round-trips exactly


def cylinder(m, r, l, axis="z"):
    """Inertia of a uniform solid cylinder about its centre, its length along ``axis``."""
    across, along = m * (3 * r * r + l * l) / 12.0, 0.5 * m * r * r
    d = {"x": (along, across, across), "y": (across, along, across),
         "z": (across, across, along)}[axis]
    return np.diag(d)


def box(m, a, b, c):
    """Inertia of a uniform box with sides a, b, c (along x, y, z) about its centre."""
    return np.diag([m * (b * b + c * c), m * (a * a + c * c), m * (a * a + b * b)]) / 12.0


def sphere(m, r):
    return np.eye(3) * 0.4 * m * r * r


def full(ixx, ixy, ixz, iyy, iyz, izz):
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


class Writer:
    def __init__(self, name: str, package: str, header: str):
        self.name, self.package = name, package
        self.out = ['<?xml version="1.0" encoding="utf-8"?>', f"<!-- {header.strip()} -->",
                    f'<robot name="{name}">']
        self.moving: list[str] = []

    def material(self, name, rgba):
        self.out += [f'  <material name="{name}">', f'    <color rgba="{rgba}"/>',
                     "  </material>"]

    def link(self, name, mass=None, com=(0, 0, 0), inertia=None, rpy=(0, 0, 0), mesh=None,
             material=None):
        o = [f'  <link name="{name}">']
        if mass is not None:
            I = np.asarray(inertia, float)
            o += ["    <inertial>",
                  f'      <origin xyz="{fmt(com)}" rpy="{fmt(rpy)}"/>',
                  f'      <mass value="{float(mass):.9g}"/>',
                  f'      <inertia ixx="{I[0, 0]:.9g}" ixy="{I[0, 1]:.9g}" ixz="{I[0, 2]:.9g}"'
                  f' iyy="{I[1, 1]:.9g}" iyz="{I[1, 2]:.9g}" izz="{I[2, 2]:.9g}"/>',
                  "    </inertial>"]
        if mesh is not None:
            mat = f'\n      <material name="{material}"/>' if material else ""
            o += ["    <visual>", '      <origin xyz="0 0 0" rpy="0 0 0"/>',
                  "      <geometry>",
                  f'        <mesh filename="package://{self.package}/meshes/visual/{mesh}.dae"/>',
                  f"      </geometry>{mat}", "    </visual>",
                  "    <collision>", "      <geometry>",
                  f'        <mesh filename="package://{self.package}/meshes/collision/{mesh}.stl"'
                  ' scale="1 1 1"/>',
                  "      </geometry>", "    </collision>"]
        o.append("  </link>")
        self.out += o

    def joint(self, name, type, parent, child, xyz=(0, 0, 0), rpy=(0, 0, 0), axis=None,
              limit=None, dynamics=None, mimic=None, safety=None):
        o = [f'  <joint name="{name}" type="{type}">',
             f'    <origin xyz="{fmt(xyz)}" rpy="{fmt(rpy)}"/>',
             f'    <parent link="{parent}"/>', f'    <child link="{child}"/>']
        if axis is not None:
            o.append(f'    <axis xyz="{fmt(axis)}"/>')
        if limit is not None:
            lo, up, eff, vel = limit
            lu = "" if lo is None else f'lower="{lo:.9g}" upper="{up:.9g}" '
            o.append(f'    <limit {lu}effort="{eff:.9g}" velocity="{vel:.9g}"/>')
        if dynamics is not None:
            o.append(f'    <dynamics damping="{dynamics[0]:.9g}" friction="{dynamics[1]:.9g}"/>')
        if mimic is not None:
            o.append(f'    <mimic joint="{mimic}" multiplier="1" offset="0"/>')
        if safety is not None:
            o.append(f'    <safety_controller k_position="100" k_velocity="40" '
                     f'soft_lower_limit="{safety[0]:.9g}" soft_upper_limit="{safety[1]:.9g}"/>')
        o.append("  </joint>")
        self.out += o
        if type != "fixed":
            self.moving.append(name)

    def transmissions(self, interface="EffortJointInterface"):
        for j in self.moving:
            self.out += [f'  <transmission name="{j}_transmission">',
                         "    <type>transmission_interface/SimpleTransmission</type>",
                         f'    <joint name="{j}">',
                         f"      <hardwareInterface>hardware_interface/{interface}"
                         "</hardwareInterface>",
                         "    </joint>", f'    <actuator name="{j}_motor">',
                         "      <mechanicalReduction>1</mechanicalReduction>",
                         "    </actuator>", "  </transmission>"]

    def gazebo(self, links=()):
        self.out += ["  <gazebo>",
                     '    <plugin name="gazebo_ros_control" filename="libgazebo_ros_control.so">',
                     f"      <robotNamespace>/{self.name}</robotNamespace>",
                     "    </plugin>", "  </gazebo>"]
        for link in links:
            self.out += [f'  <gazebo reference="{link}">', "    <mu1>0.9</mu1><mu2>0.9</mu2>",
                         "    <material>Gazebo/Grey</material>", "  </gazebo>"]

    def save(self):
        self.out.append("</robot>")
        (OUT / f"{self.name}.urdf").write_text("\n".join(self.out) + "\n")


# --------------------------------------------------------------------------------------

def panda():
    """Franka Emika Panda. Kinematics, joint limits, velocity and effort limits:
    Franka's published (modified DH) parameters and franka_description. Link inertial
    parameters: Gaz, Cognetti, Oliva, Robuffo Giordano, De Luca, "Dynamic
    identification of the Franka Emika Panda robot with retrieval of feasible
    parameters using penalty-based optimization", IEEE RA-L 4(4), 2019 (as in
    franka_description). Hand and fingers: franka_description."""
    w = Writer("panda", "franka_description", "Franka Emika Panda, 7-DOF arm with hand and two "
               "fingers (nv = 9). " + " ".join(panda.__doc__.split()))
    w.material("panda_white", "1 1 1 1")
    w.link("panda_link0", 0.629769, (-0.041018, -0.00014, 0.049974),
           full(0.00315, 8.2904e-7, 0.00015, 0.00388, 8.2299e-6, 0.004285), mesh="link0",
           material="panda_white")
    inertials = [
        (4.970684, (0.003875, 0.002081, -0.04762),
         (0.70337, -0.000139, 0.006772, 0.70661, 0.019169, 0.009117)),
        (0.646926, (-0.003141, -0.02872, 0.003495),
         (0.007962, -0.003925, 0.010254, 0.02811, 0.000704, 0.025995)),
        (3.228604, (0.027518, 0.039252, -0.066502),
         (0.037242, -0.004761, -0.011396, 0.036155, -0.012805, 0.01083)),
        (3.587895, (-0.05317, 0.104419, 0.027454),
         (0.025853, 0.007796, -0.001332, 0.019552, 0.008641, 0.028323)),
        (1.225946, (-0.011953, 0.041065, -0.038437),
         (0.035549, -0.002117, -0.004037, 0.029474, 0.000229, 0.008627)),
        (1.666555, (0.060149, -0.014117, -0.010517),
         (0.001964, 0.000109, -0.001158, 0.004354, 0.000341, 0.005433)),
        (0.735522, (0.010517, -0.004252, 0.061597),
         (0.012516, -0.000428, -0.001196, 0.010027, -0.000741, 0.004815)),
    ]
    origins = [((0, 0, 0.333), (0, 0, 0)), ((0, 0, 0), (-PI / 2, 0, 0)),
               ((0, -0.316, 0), (PI / 2, 0, 0)), ((0.0825, 0, 0), (PI / 2, 0, 0)),
               ((-0.0825, 0.384, 0), (-PI / 2, 0, 0)), ((0, 0, 0), (PI / 2, 0, 0)),
               ((0.088, 0, 0), (PI / 2, 0, 0))]
    lower = (-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973)
    upper = (2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973)
    vel = (2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61)
    eff = (87, 87, 87, 87, 12, 12, 12)
    for i in range(7):
        m, c, I = inertials[i]
        w.link(f"panda_link{i + 1}", m, c, full(*I), mesh=f"link{i + 1}", material="panda_white")
        w.joint(f"panda_joint{i + 1}", "revolute", f"panda_link{i}", f"panda_link{i + 1}",
                *origins[i], axis=(0, 0, 1), limit=(lower[i], upper[i], eff[i], vel[i]),
                safety=(lower[i], upper[i]))
    w.link("panda_link8")  # the flange: a frame, no inertia
    w.joint("panda_joint8", "fixed", "panda_link7", "panda_link8", (0, 0, 0.107))
    w.link("panda_hand", 0.73, (-0.01, 0, 0.03), box_like(0.001, 0.0025, 0.0017), mesh="hand")
    w.joint("panda_hand_joint", "fixed", "panda_link8", "panda_hand", rpy=(0, 0, -PI / 4))
    finger = full(2.375e-6, 0, 0, 2.375e-6, 0, 7.5e-7)
    w.link("panda_leftfinger", 0.015, (0, 0, 0), finger, mesh="finger")
    w.link("panda_rightfinger", 0.015, (0, 0, 0), finger, mesh="finger", rpy=(0, 0, PI))
    w.joint("panda_finger_joint1", "prismatic", "panda_hand", "panda_leftfinger",
            (0, 0, 0.0584), axis=(0, 1, 0), limit=(0.0, 0.04, 100, 0.2))
    w.joint("panda_finger_joint2", "prismatic", "panda_hand", "panda_rightfinger",
            (0, 0, 0.0584), axis=(0, -1, 0), limit=(0.0, 0.04, 100, 0.2),
            mimic="panda_finger_joint1")
    w.link("panda_hand_tcp")
    w.joint("panda_hand_tcp_joint", "fixed", "panda_hand", "panda_hand_tcp", (0, 0, 0.1034))
    w.transmissions()
    w.gazebo(["panda_link0", "panda_leftfinger", "panda_rightfinger"])
    w.save()


def box_like(ixx, iyy, izz):
    return np.diag([ixx, iyy, izz])


def ur5():
    """Universal Robots UR5. Joint geometry (d1 = 0.089159, a2 = 0.425, a3 = 0.39225,
    d4 = 0.10915, d5 = 0.09465, d6 = 0.0823 m), link masses (3.7, 8.393, 2.275, 1.219,
    1.219, 0.1879 kg), joint limits: Universal Robots' published parameters, in
    ur_description's URDF layout. Inertias: uniform cylinders, as ur_description
    approximates them."""
    w = Writer("ur5", "ur_description", " ".join(ur5.__doc__.split()))
    w.link("world")
    w.joint("world_joint", "fixed", "world", "base_link")
    w.link("base_link", 4.0, (0, 0, 0), cylinder(4.0, 0.06, 0.05), mesh="base")
    w.link("base")
    w.joint("base_link-base_fixed_joint", "fixed", "base_link", "base", rpy=(0, 0, PI))
    two_pi = 2 * PI
    spec = [  # child, mass, com, (r, l), joint, origin xyz, rpy, axis, limit, effort, vel
        ("shoulder_link", 3.7, (0, 0, 0), (0.06, 0.15), "shoulder_pan_joint", "base_link",
         (0, 0, 0.089159), (0, 0, 0), (0, 0, 1), two_pi, 150, 3.15),
        ("upper_arm_link", 8.393, (0, 0, 0.28), (0.06, 0.56), "shoulder_lift_joint",
         "shoulder_link", (0, 0.13585, 0), (0, PI / 2, 0), (0, 1, 0), two_pi, 150, 3.15),
        ("forearm_link", 2.275, (0, 0, 0.25), (0.06, 0.5), "elbow_joint", "upper_arm_link",
         (0, -0.1197, 0.425), (0, 0, 0), (0, 1, 0), PI, 150, 3.15),
        ("wrist_1_link", 1.219, (0, 0, 0), (0.06, 0.12), "wrist_1_joint", "forearm_link",
         (0, 0, 0.39225), (0, PI / 2, 0), (0, 1, 0), two_pi, 28, 3.2),
        ("wrist_2_link", 1.219, (0, 0, 0), (0.06, 0.12), "wrist_2_joint", "wrist_1_link",
         (0, 0.093, 0), (0, 0, 0), (0, 0, 1), two_pi, 28, 3.2),
        ("wrist_3_link", 0.1879, (0, 0, 0), (0.0375, 0.0345), "wrist_3_joint", "wrist_2_link",
         (0, 0, 0.09465), (0, 0, 0), (0, 1, 0), two_pi, 28, 3.2),
    ]
    for child, m, c, (r, l), jn, parent, xyz, rpy, axis, lim, effort, vel in spec:
        w.link(child, m, c, cylinder(m, r, l), mesh=child.replace("_link", ""))
        w.joint(jn, "revolute", parent, child, xyz, rpy, axis, (-lim, lim, effort, vel),
                dynamics=(0.0, 0.0))
    w.link("ee_link")
    w.joint("ee_fixed_joint", "fixed", "wrist_3_link", "ee_link", (0, 0.0823, 0), (0, 0, PI / 2))
    w.link("tool0")
    w.joint("wrist_3_link-tool0_fixed_joint", "fixed", "wrist_3_link", "tool0",
            (0, 0.0823, 0), (-PI / 2, 0, 0))
    w.transmissions("PositionJointInterface")
    w.gazebo(["shoulder_link", "upper_arm_link", "forearm_link"])
    w.save()


def chain20():
    """A serial chain of 20 revolute joints (axes alternating y and x), uniform
    aluminium-like rods 0.1 m long, radius 0.02 m, 0.5 kg, with viscous and Coulomb
    joint friction given in ``<dynamics>``; a massless tip sensor frame."""
    w = Writer("chain20", "kanedyn_chain", "chain20: " + " ".join(chain20.__doc__.split()))
    w.link("base_link", 2.0, (0, 0, -0.025), box(2.0, 0.2, 0.2, 0.05), mesh="base")
    parent = "base_link"
    for i in range(1, 21):
        child = f"link_{i:02d}"
        w.link(child, 0.5, (0, 0, 0.05), cylinder(0.5, 0.02, 0.1), mesh="rod")
        w.joint(f"joint_{i:02d}", "revolute", parent, child, (0, 0, 0.1 if i > 1 else 0.0),
                axis=(0, 1, 0) if i % 2 else (1, 0, 0), limit=(-2.5, 2.5, 20.0, 5.0),
                dynamics=(0.05, 0.02))
        parent = child
    w.link("tip_sensor")
    w.joint("tip_sensor_joint", "fixed", parent, "tip_sensor", (0, 0, 0.1))
    w.transmissions()
    w.save()


def quadruped():
    """A 12-joint quadruped after Unitree A1 (unitree_ros a1_description): trunk
    4.713 kg, hip 0.696 kg, thigh 1.013 kg, calf 0.166 kg, foot 0.06 kg; hips at
    (±0.183, ±0.047, 0), thigh offset 0.08505, thigh and calf 0.2 m. Inertial values
    from a1_description, mirrored for the other legs; a massless root ``base`` link
    on a fixed joint to the trunk and an IMU link, as the package has them."""
    w = Writer("quadruped", "a1_description", "quadruped: " + " ".join(quadruped.__doc__.split()))
    w.link("base")
    w.joint("floating_base", "fixed", "base", "trunk")
    w.link("trunk", 4.713, (0.012731, 0.002186, 0.000515),
           full(0.01683993, 8.3902e-05, 0.000597679, 0.056579028, 2.5134e-05, 0.064713601),
           mesh="trunk")
    hip_c, hip_I = np.array([-0.003311, 0.000635, 3.1e-05]), full(
        0.000469246, -9.409e-06, -3.42e-07, 0.00080749, -4.66e-07, 0.000552929)
    thigh_c, thigh_I = np.array([-0.003237, -0.022327, -0.027326]), full(
        0.005529065, 4.825e-06, 0.000343869, 0.005139339, 2.2448e-05, 0.001367788)
    calf_c, calf_I = np.array([0.006435, 0.0, -0.107388]), full(
        0.002997972, 0.0, -0.000141163, 0.003014022, 0.0, 3.2426e-05)
    # the tables above are those of the front-left leg; D mirrors them to the others
    for leg, sx, sy in (("FL", 1, 1), ("FR", 1, -1), ("RL", -1, 1), ("RR", -1, -1)):
        D = np.diag([sx, sy, 1.0])
        Dl = np.diag([1.0, sy, 1.0])  # thigh and calf are mirrored left/right only
        w.link(f"{leg}_hip", 0.696, D @ hip_c, D @ hip_I @ D, mesh="hip")
        w.joint(f"{leg}_hip_joint", "revolute", "trunk", f"{leg}_hip",
                (0.183 * sx, 0.047 * sy, 0), axis=(1, 0, 0),
                limit=(-0.802851, 0.802851, 33.5, 21.0), dynamics=(0.0, 0.0))
        w.link(f"{leg}_thigh", 1.013, Dl @ thigh_c, Dl @ thigh_I @ Dl,
               mesh="thigh" if sy > 0 else "thigh_mirror")
        w.joint(f"{leg}_thigh_joint", "revolute", f"{leg}_hip", f"{leg}_thigh",
                (0, 0.08505 * sy, 0), axis=(0, 1, 0), limit=(-1.0472, 4.18879, 33.5, 21.0),
                dynamics=(0.0, 0.0))
        w.link(f"{leg}_calf", 0.166, calf_c, calf_I, mesh="calf")
        w.joint(f"{leg}_calf_joint", "revolute", f"{leg}_thigh", f"{leg}_calf", (0, 0, -0.2),
                axis=(0, 1, 0), limit=(-2.69653, -0.916298, 33.5, 21.0), dynamics=(0.0, 0.0))
        w.link(f"{leg}_foot", 0.06, (0, 0, 0), sphere(0.06, 0.02))
        w.joint(f"{leg}_foot_fixed", "fixed", f"{leg}_calf", f"{leg}_foot", (0, 0, -0.2))
    w.link("imu_link")
    w.joint("imu_joint", "fixed", "trunk", "imu_link")
    w.transmissions()
    w.gazebo([f"{leg}_foot" for leg in ("FL", "FR", "RL", "RR")])
    w.save()


def humanoid():
    """A Talos-like humanoid (PAL Robotics Talos: 1.75 m, about 95 kg): legs 6 + 6,
    torso 2, arms 7 + 7, one-joint grippers 1 + 1, head 2 — 32 moving joints. The
    layout and the joint names follow talos_description; lengths and masses are
    rounded to Talos' published size (thigh 0.38 m, shank 0.325 m, ankle height
    0.107 m, hip spacing 0.17 m), not its exact tables; inertias are those of uniform
    boxes and cylinders. Sensor frames (IMU, cameras, force-torque sensors, soles) are
    links without inertia."""
    w = Writer("humanoid", "talos_description", "humanoid: " + " ".join(humanoid.__doc__.split()))
    w.link("base_link", 15.4, (-0.05, 0, 0.07), box(15.4, 0.2, 0.3, 0.25), mesh="base_link")
    for side, s in (("left", 1), ("right", -1)):
        legs = [  # link, mass, com, inertia, joint origin, axis, limits, effort
            (1.85, (0.0, 0.0, 0.03), box(1.85, 0.1, 0.08, 0.08), (0, 0.085 * s, -0.27105),
             (0, 0, 1), (-0.35, 1.57) if s > 0 else (-1.57, 0.35), 100),
            (1.49, (0.02, 0.0, -0.05), box(1.49, 0.1, 0.1, 0.12), (0, 0, 0), (1, 0, 0),
             (-0.5236, 0.5236), 160),
            (6.24, (0.02, 0.01 * s, -0.2), cylinder(6.24, 0.07, 0.38), (0, 0, 0), (0, 1, 0),
             (-2.095, 0.7), 160),
            (3.75, (0.0, 0.0, -0.15), cylinder(3.75, 0.06, 0.325), (-0.02, 0, -0.38),
             (0, 1, 0), (0.0, 2.618), 300),
            (1.45, (0.0, 0.0, 0.0), box(1.45, 0.08, 0.08, 0.06), (0, 0, -0.325), (0, 1, 0),
             (-1.27, 0.68), 160),
            (1.65, (0.02, 0.0, -0.07), box(1.65, 0.22, 0.13, 0.04), (0, 0, 0), (1, 0, 0),
             (-0.5236, 0.5236), 100),
        ]
        parent = "base_link"
        for k, (m, c, I, xyz, axis, (lo, up), eff) in enumerate(legs, start=1):
            link = f"leg_{side}_{k}_link"
            # the foot's inertial frame is turned 5 degrees about y, as real tables often are
            rpy = (0, 0.0873, 0) if k == 6 else (0, 0, 0)
            w.link(link, m, c, I, rpy=rpy, mesh=f"leg_{k}")
            w.joint(f"leg_{side}_{k}_joint", "revolute", parent, link, xyz, axis=axis,
                    limit=(lo, up, eff, 6.0), dynamics=(0.5, 0.1))
            parent = link
        w.link(f"leg_{side}_sole_link")
        w.joint(f"leg_{side}_sole_fix_joint", "fixed", parent, f"leg_{side}_sole_link",
                (0, 0, -0.107))
    w.link("imu_link")
    w.joint("imu_joint", "fixed", "base_link", "imu_link", (0.04, 0, 0.0), (PI, 0, 0))
    w.link("torso_1_link", 3.0, (0, 0, 0.03), box(3.0, 0.15, 0.2, 0.08), mesh="torso_1")
    w.joint("torso_1_joint", "revolute", "base_link", "torso_1_link", (0, 0, 0.0722),
            axis=(0, 0, 1), limit=(-1.309, 1.309, 78, 5.4), dynamics=(0.5, 0.1))
    w.link("torso_2_link", 16.9, (-0.04, 0, 0.16), box(16.9, 0.25, 0.35, 0.4), mesh="torso_2")
    w.joint("torso_2_joint", "revolute", "torso_1_link", "torso_2_link", axis=(0, 1, 0),
            limit=(-0.2618, 0.733, 78, 5.4), dynamics=(0.5, 0.1))
    for side, s in (("left", 1), ("right", -1)):
        arm = [  # mass, com, inertia, origin, rpy, axis, limits
            (2.7, (0, 0.03 * s, 0.02), box(2.7, 0.1, 0.12, 0.1), (0, 0.1575 * s, 0.232),
             (0, 0, 0), (0, 0, 1), (-1.57, 0.785) if s > 0 else (-0.785, 1.57)),
            (1.7, (0.01, 0.0, -0.05), cylinder(1.7, 0.05, 0.12), (0.0049, 0.1365 * s, 0.0467),
             (0, 0, 0), (1, 0, 0), (0.0, 2.87) if s > 0 else (-2.87, 0.0)),
            (2.2, (0, 0, -0.13), cylinder(2.2, 0.05, 0.25), (0, 0, -0.0), (0, 0, 0), (0, 0, 1),
             (-2.44, 2.44)),
            (1.2, (0.01, 0, -0.06), cylinder(1.2, 0.045, 0.12), (0.02, 0, -0.273),
             (0, 0, 0), (0, 1, 0), (-2.35, 0.0)),
            (1.5, (0, 0, -0.1), cylinder(1.5, 0.04, 0.2), (-0.02, 0, 0), (0, 0, 0), (0, 0, 1),
             (-2.53, 2.53)),
            (0.45, (0, 0, -0.02), cylinder(0.45, 0.035, 0.05), (0, 0, -0.2643), (0, 0, 0),
             (1, 0, 0), (-1.37, 1.37)),
            (0.35, (0, 0, -0.03), cylinder(0.35, 0.035, 0.06), (0, 0, 0), (0, 0, 0), (0, 1, 0),
             (-0.68, 0.68)),
        ]
        parent = "torso_2_link"
        for k, (m, c, I, xyz, rpy, axis, (lo, up)) in enumerate(arm, start=1):
            link = f"arm_{side}_{k}_link"
            w.link(link, m, c, I, rpy=rpy, mesh=f"arm_{k}")
            w.joint(f"arm_{side}_{k}_joint", "revolute", parent, link, xyz, rpy, axis,
                    limit=(lo, up, 40.0 if k < 5 else 20.0, 3.0), dynamics=(0.2, 0.05))
            parent = link
        w.link(f"wrist_{side}_ft_link", 0.1, (0, 0, -0.01), cylinder(0.1, 0.04, 0.02))
        w.joint(f"wrist_{side}_ft_joint", "fixed", parent, f"wrist_{side}_ft_link",
                (0, 0, -0.051), (0, 0, PI))
        w.link(f"wrist_{side}_ft_tool_link")
        w.joint(f"wrist_{side}_tool_joint", "fixed", f"wrist_{side}_ft_link",
                f"wrist_{side}_ft_tool_link", (0, 0, -0.0157))
        w.link(f"gripper_{side}_base_link", 0.6, (0, 0, -0.04), box(0.6, 0.08, 0.06, 0.1),
               mesh="gripper_base")
        w.joint(f"gripper_{side}_base_link_joint", "fixed", f"wrist_{side}_ft_tool_link",
                f"gripper_{side}_base_link", (0, 0, 0), (0, 0, -PI / 2))
        w.link(f"gripper_{side}_finger_link", 0.12, (0, 0.0, -0.04), box(0.12, 0.02, 0.03, 0.08),
               mesh="gripper_finger")
        w.joint(f"gripper_{side}_joint", "revolute", f"gripper_{side}_base_link",
                f"gripper_{side}_finger_link", (0, 0.02, -0.07), axis=(1, 0, 0),
                limit=(-1.0, 0.0, 1.0, 1.0), dynamics=(0.01, 0.0))
        w.link(f"gripper_{side}_grasping_frame")
        w.joint(f"gripper_{side}_grasping_frame_joint", "fixed", f"gripper_{side}_base_link",
                f"gripper_{side}_grasping_frame", (0, 0, -0.12))
    w.link("head_1_link", 0.7, (0, 0, 0.03), box(0.7, 0.06, 0.06, 0.06), mesh="head_1")
    w.joint("head_1_joint", "revolute", "torso_2_link", "head_1_link", (0.02, 0, 0.321),
            axis=(0, 1, 0), limit=(-0.2618, 0.785, 6.0, 3.0), dynamics=(0.1, 0.0))
    w.link("head_2_link", 1.6, (0.02, 0, 0.1), box(1.6, 0.18, 0.16, 0.2), mesh="head_2")
    w.joint("head_2_joint", "revolute", "head_1_link", "head_2_link", axis=(0, 0, 1),
            limit=(-1.309, 1.309, 6.0, 3.0), dynamics=(0.1, 0.0))
    w.link("rgbd_link")
    w.joint("rgbd_joint", "fixed", "head_2_link", "rgbd_link", (0.066, 0, 0.1), (0, 0.2, 0))
    w.transmissions()
    w.gazebo(["leg_left_6_link", "leg_right_6_link"])
    w.save()


ROBOTS = (panda, ur5, chain20, quadruped, humanoid)

if __name__ == "__main__":
    for make in ROBOTS:
        make()
        print("wrote", OUT / f"{make.__name__}.urdf")
