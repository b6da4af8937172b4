"""Classic mechanisms for Kane's method, built as :class:`KaneSystem` objects.

Each builder returns ``(system, info)``: the system, and a dict of the
symbols, frames and points a user (or a test) needs to evaluate or check it.

* :func:`free_rigid_body` — body-frame angular velocity as speeds, quaternion
  kinematics: Kane's equations are Euler's ``I ω̇ + ω × I ω = T``.
* :func:`spacecraft_reaction_wheel` — a bus with a symmetric wheel driven by an
  internal motor (Kane & Levinson 1985, the gyrostat; the wheel's spin
  relative to the bus is its own speed).
* :func:`rolling_disk` — a thin disk rolling without slipping on a plane:
  5 coordinates, 5 speeds, 2 nonholonomic constraints, p = 3.
* :func:`four_bar` — the planar four-bar linkage (crank, coupler, rocker, gravity): three
  coordinates, two configuration constraints closing the loop, one independent speed
  (the geometry of :func:`kanedyn.constraints.mechanisms.four_bar_system`).
* :func:`pendulum_pin_reaction` — a rod pendulum whose pin reaction comes out
  through two auxiliary speeds.
* :func:`stewart_platform` — a 6-6 Stewart platform, platform twist as speeds,
  massless prismatic legs (actuator force as input, passive stiffness) handled
  through the partial velocities of their attachment points: an ODE with no
  constraint equation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import sympy as sp
from sympy.physics.vector import Point, ReferenceFrame, dynamicsymbols, outer

from ..errors import SymbolicError
from .loads import RigidBody, Torque, inertia
from .system import KaneSystem

__all__ = [
    "four_bar",
    "free_rigid_body",
    "pendulum_pin_reaction",
    "quaternion_kinematics",
    "rolling_disk",
    "spacecraft_reaction_wheel",
    "stewart_platform",
    "whipple_bicycle",
]


def quaternion_kinematics(quat: Sequence, omega: Sequence) -> list:
    """``q̇ = ½ q ⊗ (0, ω)`` for a scalar-first unit quaternion and the angular
    velocity ω in body coordinates, as expressions that vanish:
    ``q̇₀ = −½ q_v·ω``, ``q̇_v = ½ (q₀ ω + q_v × ω)`` (the convention of
    SymPy's ``orient(..., "Quaternion", ...)`` and of kanedyn)."""
    q0, q1, q2, q3 = quat
    w1, w2, w3 = omega
    rates = [
        -(q1 * w1 + q2 * w2 + q3 * w3) / 2,
        (q0 * w1 + q2 * w3 - q3 * w2) / 2,
        (q0 * w2 + q3 * w1 - q1 * w3) / 2,
        (q0 * w3 + q1 * w2 - q2 * w1) / 2,
    ]
    return [qi.diff() - r for qi, r in zip(quat, rates, strict=True)]


def free_rigid_body() -> tuple[KaneSystem, dict]:
    """A free rigid body, general (non-principal) central inertia, with a
    torque T (body axes) and a force F (world axes) as inputs.

    q = (quaternion w, x, y, z; position x, y, z), u = (ω in body axes;
    velocity of the mass centre in world axes)."""
    q = dynamicsymbols("e0 e1 e2 e3 x y z")
    u = dynamicsymbols("w1 w2 w3 vx vy vz")
    T = dynamicsymbols("T1 T2 T3")
    F = dynamicsymbols("F1 F2 F3")
    m = sp.Symbol("m")
    I = sp.symbols("I11 I22 I33 I12 I23 I31")
    N = ReferenceFrame("N")
    B = N.orientnew("B", "Quaternion", q[:4])
    B.set_ang_vel(N, u[0] * B.x + u[1] * B.y + u[2] * B.z)
    O = Point("O")
    O.set_vel(N, 0)
    G = O.locatenew("G", q[4] * N.x + q[5] * N.y + q[6] * N.z)
    G.set_vel(N, u[3] * N.x + u[4] * N.y + u[5] * N.z)
    body = RigidBody("body", G, B, m, inertia(B, *I))
    kde = quaternion_kinematics(q[:4], u[:3]) + [q[4 + i].diff() - u[3 + i] for i in range(3)]
    loads = [Torque(B, T[0] * B.x + T[1] * B.y + T[2] * B.z, "torque"),
             (G, F[0] * N.x + F[1] * N.y + F[2] * N.z)]
    system = KaneSystem(N, q, u, kde, [body], loads, inputs=[*T, *F],
                        quaternions=[((0, 1, 2, 3), (0, 1, 2))], name="free_rigid_body")
    return system, dict(N=N, B=B, G=G, q=q, u=u, T=T, F=F, m=m, I=I)


def spacecraft_reaction_wheel() -> tuple[KaneSystem, dict]:
    """A rigid bus B carrying an axisymmetric wheel W on the bus axis B.z, both
    mass centres at the system's mass centre G; the motor torque ``Tm`` acts on
    W and −Tm on B (internal, does work, no potential).

    q = (bus quaternion e0..e3, wheel angle qw relative to the bus),
    u = (bus ω in bus axes w1, w2, w3; wheel spin relative to the bus uw).
    The wheel has axial moment J and transverse moment K."""
    q = dynamicsymbols("e0 e1 e2 e3 qw")
    u = dynamicsymbols("w1 w2 w3 uw")
    Tm = dynamicsymbols("Tm")
    I11, I22, I33, I12, J, K = sp.symbols("I11 I22 I33 I12 J K", positive=True)
    mB, mW = sp.symbols("m_B m_W", positive=True)
    N = ReferenceFrame("N")
    B = N.orientnew("B", "Quaternion", q[:4])
    B.set_ang_vel(N, u[0] * B.x + u[1] * B.y + u[2] * B.z)
    W = B.orientnew("W", "Axis", [q[4], B.z])
    W.set_ang_vel(B, u[3] * B.z)
    G = Point("G")
    G.set_vel(N, 0)
    bus = RigidBody("bus", G, B, mB, inertia(B, I11, I22, I33, I12))
    wheel = RigidBody("wheel", G, W, mW, inertia(W, K, K, J))
    kde = quaternion_kinematics(q[:4], u[:3]) + [q[4].diff() - u[3]]
    loads = [Torque(W, Tm * B.z, "motor"), Torque(B, -Tm * B.z, "motor reaction")]
    system = KaneSystem(N, q, u, kde, [bus, wheel], loads, inputs=[Tm],
                        quaternions=[((0, 1, 2, 3), (0, 1, 2))],
                        name="spacecraft_reaction_wheel")
    return system, dict(N=N, B=B, W=W, q=q, u=u, Tm=Tm, J=J, K=K,
                        I_bus=sp.Matrix([[I11, I12, 0], [I12, I22, 0], [0, 0, I33]]))


def rolling_disk(contact_forces: bool = False, axial=None,
                 diametral=None) -> tuple[KaneSystem, dict]:
    """A uniform thin disk (radius R, mass m) rolling without slipping on the
    horizontal plane N.x–N.y, gravity −g N.z.

    q = (yaw q1 about N.z, lean q2 about the yawed x axis, spin q3 about the
    disk axis L.y, contact point x q4, y q5), u_i = q̇_i; u4, u5 are dependent:
    the velocity of the disk's material point at the contact vanishes.

    ``contact_forces=True`` adds auxiliary speeds ua1..ua3 (a virtual velocity
    of the disk along N.x, N.y, N.z) and the contact force ``Fx N.x + Fy N.y +
    Fz N.z`` on the disk's material point at the contact (Kane & Levinson
    1985, the rolling disk with its contact forces brought into evidence).

    ``axial`` and ``diametral`` are the central moments of inertia in units of
    m R²: 1/2 and 1/4 (the default) for the uniform thin disk, 1 and 1/2 for a
    thin hoop."""
    q = dynamicsymbols("q1:6")
    u = dynamicsymbols("u1:6")
    m, g, R = sp.symbols("m g R", positive=True)
    N = ReferenceFrame("N")
    Y = N.orientnew("Y", "Axis", [q[0], N.z])
    L = Y.orientnew("L", "Axis", [q[1], Y.x])
    D = L.orientnew("D", "Axis", [q[2], L.y])
    O = Point("O")
    O.set_vel(N, 0)
    C = O.locatenew("C", q[3] * N.x + q[4] * N.y)          # the contact point, in the plane
    Dc = C.locatenew("Dc", R * L.z)                         # the disk's centre
    ua = dynamicsymbols("ua1:4") if contact_forces else []
    virtual = sum((s * e for s, e in zip(ua, (N.x, N.y, N.z), strict=False)), 0 * N.x)
    Dc.set_vel(N, Dc.pos_from(O).dt(N) + virtual)
    contact = Dc.vel(N) + D.ang_vel_in(N).cross(-R * L.z)   # the disk's material point at C
    constraints = [contact.dot(N.x), contact.dot(N.y)]
    axial = sp.Rational(1, 2) if axial is None else sp.nsimplify(axial)
    diametral = sp.Rational(1, 4) if diametral is None else sp.nsimplify(diametral)
    Id, Ia = diametral * m * R**2, axial * m * R**2
    disk = RigidBody("disk", Dc, D, m, inertia(L, Id, Ia, Id))
    kde = [ui - qi.diff() for qi, ui in zip(q, u, strict=True)]
    loads = [(Dc, -m * g * N.z)]
    reactions = []
    if contact_forces:
        Cd = Dc.locatenew("Cd", -R * L.z)
        Cd.set_vel(N, contact)
        reactions = list(sp.symbols("Fx Fy Fz"))
        loads.append((Cd, reactions[0] * N.x + reactions[1] * N.y + reactions[2] * N.z))
    system = KaneSystem(N, q, u, kde, [disk], loads,
                        u_dependent=u[3:], velocity_constraints=constraints,
                        u_auxiliary=ua, reactions=reactions,
                        potential_energy=m * g * R * sp.cos(q[1]), name="rolling_disk")
    return system, dict(N=N, Y=Y, L=L, D=D, C=C, Dc=Dc, q=q, u=u, m=m, g=g, R=R,
                        constraints=constraints, ua=ua)


def four_bar() -> tuple[KaneSystem, dict]:
    """The planar four-bar of :func:`kanedyn.constraints.mechanisms.four_bar_system` by
    Kane's method: crank l1 pinned at O, coupler l2 pinned to the crank tip, rocker l3
    pinned at D = (l0, 0), the coupler tip pinned to the rocker tip; uniform slender rods
    (masses m1, m2, m3, central moment m l²/12), gravity −g N.y.

    q = (θ1 crank, θ2 coupler relative to the crank, θ3 rocker), u_i = q̇_i; the loop
    closure g = (coupler tip − rocker tip) · (N.x, N.y) = 0 fixes θ2, θ3 (dependent
    coordinates; u2, u3 the dependent speeds, ġ = 0 their velocity constraints). The
    parameters l0..l3, m1..m3, g are symbols without values (``info["values"]`` holds
    those of four_bar_system)."""
    q = dynamicsymbols("q1:4")
    u = dynamicsymbols("u1:4")
    l0, l1, l2, l3, m1, m2, m3, g = sp.symbols("l0 l1 l2 l3 m1 m2 m3 g", positive=True)
    N = ReferenceFrame("N")
    A = N.orientnew("A", "Axis", [q[0], N.z])       # crank
    B = A.orientnew("B", "Axis", [q[1], A.z])       # coupler
    C = N.orientnew("C", "Axis", [q[2], N.z])       # rocker
    O = Point("O")
    O.set_vel(N, 0)
    tip_b = O.locatenew("P", l1 * A.x + l2 * B.x)   # the coupler's tip
    tip_c = O.locatenew("Q", l0 * N.x + l3 * C.x)   # the rocker's tip
    bodies, loads = [], []
    for name, frame, centre, mass, length in (
            ("crank", A, l1 / 2 * A.x, m1, l1),
            ("coupler", B, l1 * A.x + l2 / 2 * B.x, m2, l2),
            ("rocker", C, l0 * N.x + l3 / 2 * C.x, m3, l3)):
        P = O.locatenew(f"{name}_c", centre)
        P.set_vel(N, centre.dt(N))
        bodies.append(RigidBody(name, P, frame, mass,
                                inertia(frame, 0, mass * length**2 / 12, mass * length**2 / 12)))
        loads.append((P, -mass * g * N.y))
    gap = tip_b.pos_from(O) - tip_c.pos_from(O)
    closure = [gap.dot(N.x), gap.dot(N.y)]
    kde = [ui - qi.diff() for qi, ui in zip(q, u, strict=True)]
    qdot = {qi.diff(): ui for qi, ui in zip(q, u, strict=True)}
    rates = [c.diff(dynamicsymbols._t).xreplace(qdot) for c in closure]   # ġ = 0
    V = g * (m1 * l1 / 2 * sp.sin(q[0])
             + m2 * (l1 * sp.sin(q[0]) + l2 / 2 * sp.sin(q[0] + q[1]))
             + m3 * l3 / 2 * sp.sin(q[2]))
    system = KaneSystem(N, q, u, kde, bodies, loads, u_dependent=u[1:],
                        velocity_constraints=rates, q_dependent=q[1:],
                        configuration_constraints=closure, potential_energy=V,
                        name="four_bar")
    values = {l0: 0.45, l1: 0.2, l2: 0.5, l3: 0.4, m1: 1.0, m2: 2.0, m3: 1.5, g: 9.81}
    return system, dict(N=N, A=A, B=B, C=C, q=q, u=u, closure=closure, values=values,
                        symbols=dict(l0=l0, l1=l1, l2=l2, l3=l3, m1=m1, m2=m2, m3=m3, g=g))


def pendulum_pin_reaction() -> tuple[KaneSystem, dict]:
    """A uniform rod (mass m, length l) on a pin at O, gravity g along N.x
    (hanging), angle q1, speed u1. Auxiliary speeds ua1 (along the rod, A.x)
    and ua2 (across it, A.y) give the pin O a virtual velocity; the pin force
    on the rod, ``R1 A.x + R2 A.y``, applied at O, is the reaction they expose."""
    q1, u1 = dynamicsymbols("q1 u1")
    ua1, ua2 = dynamicsymbols("ua1 ua2")
    R1, R2 = sp.symbols("R1 R2")
    m, l, g = sp.symbols("m l g", positive=True)
    N = ReferenceFrame("N")
    A = N.orientnew("A", "Axis", [q1, N.z])
    A.set_ang_vel(N, u1 * N.z)
    O = Point("O")
    O.set_vel(N, ua1 * A.x + ua2 * A.y)       # zero in the true motion
    G = O.locatenew("G", l / 2 * A.x)
    G.v2pt_theory(O, N, A)
    rod = RigidBody("rod", G, A, m, inertia(A, 0, m * l**2 / 12, m * l**2 / 12))
    loads = [(G, m * g * N.x), (O, R1 * A.x + R2 * A.y)]
    system = KaneSystem(N, [q1], [u1], [u1 - q1.diff()], [rod], loads,
                        u_auxiliary=[ua1, ua2], reactions=[R1, R2],
                        potential_energy=-m * g * l / 2 * sp.cos(q1),
                        name="pendulum_pin_reaction")
    return system, dict(N=N, A=A, O=O, G=G, q1=q1, u1=u1, m=m, l=l, g=g, R1=R1, R2=R2)


def stewart_geometry(base_radius: float = 1.0, platform_radius: float = 0.6,
                     base_gap: float = 0.35,
                     platform_gap: float = 0.25) -> tuple[np.ndarray, np.ndarray]:
    """Leg attachment points of a 6-6 Stewart platform: pairs of points on two
    circles, 120° apart, the platform's pairs rotated by 60° against the base's.
    Returns (base points in N, platform points in platform axes), each (6, 3)."""
    b, p = [], []
    for k in range(3):
        centre = 2 * np.pi * k / 3
        # each base point goes to the nearer platform point of the neighbouring pair
        for s in (-1, 1):
            a = centre + s * base_gap
            b.append((base_radius * np.cos(a), base_radius * np.sin(a), 0.0))
            a = centre + s * (np.pi / 3 - platform_gap)
            p.append((platform_radius * np.cos(a), platform_radius * np.sin(a), 0.0))
    return np.array(b), np.array(p)


def stewart_platform(legs: str = "massless") -> tuple[KaneSystem, dict]:
    """A 6-6 Stewart platform: platform P (mass M, central inertia diag(Ixx, Iyy,
    Izz)) at pose q = (quaternion e0..e3, position x, y, z) with the platform
    twist as speeds u = (ω in platform axes, velocity of its mass centre in N
    axes). Gravity −g N.z.

    Each leg i joins base point b_i (fixed) to platform point p_i, along its unit
    vector n_i = (p_i − b_i)/ℓ_i. Its actuator pushes with the force f_i (an input)
    plus a passive spring −k (ℓ_i − ℓ0) (stiffness of the actuator, potential
    ½ k (ℓ_i − ℓ0)²). The legs get no coordinates: their motion follows from the
    platform's, so the equations are an ODE in the twist with no constraint equation.

    ``legs="massless"``: each leg is a two-force member (spherical joints at both
    ends); its force enters through the partial velocities of the point p_i.

    ``legs="massive"``: each leg is a cylinder (mass m_c, mass centre at d_c from b_i
    along n_i) hinged to the base by a universal joint, and a piston (mass m_p, mass
    centre at d_p from p_i back along n_i) sliding in it and hinged to the platform by
    a spherical joint (a UPS leg); both axisymmetric about n_i (axial moment J_c, J_p,
    transverse K_c, K_p about their mass centres), turning together with the leg's
    angular velocity ``ω_i = n_i × ṗ_i / ℓ_i``: the leg's spin about its own axis is
    taken as zero, the usual idealisation of the legs' dynamics (a universal joint with a
    base-fixed axis a would spin it at α̇ a·n_i, α the joint's angle about a), so the axial
    moments J_c, J_p do not enter the equations (tests/kane/test_stewart_sympy.py). Their
    velocities are expressed through the platform twist,
    ``ṗ_i = v_G + ω_P × (p_i − G)``, ``ℓ̇_i = n_i · ṗ_i``,
    ``ṅ_i = (ṗ_i − ℓ̇_i n_i)/ℓ_i``: ``v_c = d_c ṅ_i``, ``v_p = ṗ_i − d_p ṅ_i``, so
    Kane's method takes their inertia through partial velocities of the twist, with
    no leg coordinate and no constraint equation (the actuator force now acts between
    cylinder and piston, the gravity of the leg parts at their mass centres)."""
    if legs not in ("massless", "massive"):
        raise SymbolicError(f"stewart_platform: legs must be 'massless' or 'massive', got "
                            f"{legs!r}")
    q = dynamicsymbols("e0 e1 e2 e3 x y z")
    u = dynamicsymbols("w1 w2 w3 vx vy vz")
    f = dynamicsymbols("f1:7")
    M, Ixx, Iyy, Izz, g, k, l0 = sp.symbols("M Ixx Iyy Izz g k l0", positive=True)
    base, plat = stewart_geometry()
    leg = {k_: sp.Symbol(k_, positive=True) for k_ in
           ("m_c", "d_c", "J_c", "K_c", "m_p", "d_p", "J_p", "K_p")} if legs == "massive" else {}
    N = ReferenceFrame("N")
    P = N.orientnew("P", "Quaternion", q[:4])
    P.set_ang_vel(N, u[0] * P.x + u[1] * P.y + u[2] * P.z)
    O = Point("O")
    O.set_vel(N, 0)
    G = O.locatenew("G", q[4] * N.x + q[5] * N.y + q[6] * N.z)
    G.set_vel(N, u[3] * N.x + u[4] * N.y + u[5] * N.z)
    bodies = [RigidBody("platform", G, P, M, inertia(P, Ixx, Iyy, Izz))]
    loads = [(G, -M * g * N.z)]
    V = M * g * q[6]
    lengths = []
    for i in range(6):
        b_i = sum(float(v) * e for v, e in zip(base[i], (N.x, N.y, N.z), strict=True))
        p_i = G.locatenew(f"p{i}", sum(float(v) * e for v, e in zip(plat[i], (P.x, P.y, P.z),
                                                                   strict=True)))
        p_i.v2pt_theory(G, N, P)
        d = (p_i.pos_from(O) - b_i).express(N)
        ell = sp.sqrt(d.dot(d))
        lengths.append(ell)
        V += k * (ell - l0) ** 2 / 2
        axial = (f[i] - k * (ell - l0)) * d / ell
        if legs == "massless":
            loads.append((p_i, axial))
            continue
        n_i = d / ell
        pdot = p_i.vel(N)
        elldot = n_i.dot(pdot)
        ndot = (pdot - elldot * n_i) / ell
        Li = ReferenceFrame(f"L{i}")                     # the leg's frame: ω only
        Li.set_ang_vel(N, n_i.cross(pdot) / ell)
        Bi = O.locatenew(f"b{i}", b_i)
        Bi.set_vel(N, 0)
        Gc = Bi.locatenew(f"c{i}", leg["d_c"] * n_i)     # cylinder mass centre
        Gc.set_vel(N, leg["d_c"] * ndot)
        Gp = p_i.locatenew(f"s{i}", -leg["d_p"] * n_i)   # piston mass centre
        Gp.set_vel(N, pdot - leg["d_p"] * ndot)
        for name, pt, m, J, K in (("cylinder", Gc, leg["m_c"], leg["J_c"], leg["K_c"]),
                                  ("piston", Gp, leg["m_p"], leg["J_p"], leg["K_p"])):
            # axisymmetric about n_i: K (1 − n n) + J n n, written in N
            I_leg = K * inertia(N, 1, 1, 1) + (J - K) * outer(n_i, n_i)
            bodies.append(RigidBody(f"{name}{i}", pt, Li, m, I_leg))
            loads.append((pt, -m * g * N.z))
            V += m * g * pt.pos_from(O).dot(N.z)
        # the actuator (and its spring) pushes the piston out of the cylinder: +axial on
        # the piston, −axial on the cylinder, at the mass centres (the force is along the
        # common axis, so its point on the axis does not matter)
        loads.append((Gp, axial))
        loads.append((Gc, -axial))
    kde = quaternion_kinematics(q[:4], u[:3]) + [q[4 + i].diff() - u[3 + i] for i in range(3)]
    system = KaneSystem(N, q, u, kde, bodies, loads, inputs=list(f), potential_energy=V,
                        quaternions=[((0, 1, 2, 3), (0, 1, 2))],
                        name="stewart_platform" if legs == "massless" else
                        "stewart_platform_massive")
    return system, dict(N=N, P=P, G=G, q=q, u=u, f=f, base=base, platform=plat, lengths=lengths,
                        M=M, g=g, k=k, l0=l0, I=(Ixx, Iyy, Izz), leg=leg)


#: Meijaard, Papadopoulos, Ruina & Schwab (2007), Proc. R. Soc. A 463:1955, Table 1:
#: the benchmark bicycle, in the benchmark's axes (x forward, y right, z down, origin
#: at the rear contact in the upright reference configuration).
BENCHMARK_BICYCLE = {
    "w": 1.02, "c": 0.08, "lam": np.pi / 10, "g": 9.81,                  # wheelbase, trail, tilt
    "rR": 0.3, "mR": 2.0, "IRxx": 0.0603, "IRyy": 0.12,                 # rear wheel R
    "xB": 0.3, "zB": -0.9, "mB": 85.0,                                  # rear body and frame B
    "IBxx": 9.2, "IByy": 11.0, "IBzz": 2.8, "IBxz": 2.4,
    "xH": 0.9, "zH": -0.7, "mH": 4.0,                                   # front frame H
    "IHxx": 0.05892, "IHyy": 0.06, "IHzz": 0.00708, "IHxz": -0.00756,
    "rF": 0.35, "mF": 3.0, "IFxx": 0.1405, "IFyy": 0.28,                # front wheel F
}


def whipple_bicycle(parameters: str | None = "benchmark") -> tuple[KaneSystem, dict]:
    """The Whipple bicycle in the parametrisation of the benchmark (Meijaard et al.
    2007): four rigid bodies — rear wheel R, rear frame B (with the rider), front frame
    H (fork and handlebar), front wheel F — knife-edge wheels rolling without slip on
    the level ground, gravity g along the benchmark's z (down).

    Coordinates (axes of the benchmark, x forward, y right, z down): yaw ψ = q1 about
    N.z, roll (lean) φ = q2 about the yawed x axis, pitch θ = q3 of the rear frame about
    the rear axle (dependent: the front wheel must touch the ground), steer δ = q4 about
    the steer axis, which is tilted back by λ from the vertical. The rear contact
    position and both wheel rotation angles are ignorable and left out (n_q = 4).

    Speeds: u1..u4 = q̇1..q̇4, u5 the rear and u6 the front wheel's rate relative to
    the frame it turns in (about its axle). The rear wheel rolls by construction (its
    material contact point has zero velocity); the front contact gives three velocity
    constraints (no slip along and across, and the contact staying on the ground),
    solved for the dependent speeds u1 (yaw rate), u3 (pitch rate) and u6; the
    independent ones are u2 (roll rate), u4 (steer rate) and u5 (rear wheel rate),
    p = 3. The holonomic constraint — the front contact's height is zero — is the
    configuration constraint with the dependent coordinate q3.

    In the upright reference configuration all four coordinates are zero, and the
    forward speed v means u5 = −v/rR (and u6 = −v/rF). ``parameters="benchmark"``
    gives every symbol its value of Table 1 (``BENCHMARK_BICYCLE``); ``None`` leaves
    them without values. Returns ``(system, info)``."""
    if parameters not in ("benchmark", None):
        raise SymbolicError(f"whipple_bicycle: parameters must be 'benchmark' or None, "
                            f"got {parameters!r}")
    q = dynamicsymbols("q1:5")
    u = dynamicsymbols("u1:7")
    P = {k: sp.Symbol(k) for k in BENCHMARK_BICYCLE}
    w, c, lam, g = P["w"], P["c"], P["lam"], P["g"]
    rR, rF = P["rR"], P["rF"]
    N = ReferenceFrame("N")
    Y = N.orientnew("Y", "Axis", [q[0], N.z])            # yaw
    L = Y.orientnew("L", "Axis", [q[1], Y.x])            # roll (lean)
    B = L.orientnew("B", "Axis", [q[2], L.y])            # rear frame pitch
    S = B.orientnew("S", "Axis", [lam, B.y])             # steer-axis frame, S.z along the axis
    H = S.orientnew("H", "Axis", [q[3], S.z])            # front frame, steered
    Hb = H.orientnew("Hb", "Axis", [-lam, H.y])          # H's benchmark axes (= B at δ = 0)
    # the wheels turn about their axles; their angles are ignorable, so the frames carry
    # only an angular velocity
    R = ReferenceFrame("Rw")
    R.set_ang_vel(B, u[4] * B.y)
    F = ReferenceFrame("Fw")
    F.set_ang_vel(H, u[5] * H.y)

    def in_S(x, z):
        """components along S.x, S.z of the B-axis vector (x, 0, z) (S = B turned by λ
        about y)"""
        return x * sp.cos(lam) - z * sp.sin(lam), x * sp.sin(lam) + z * sp.cos(lam)

    Pr = Point("Pr")                                     # rear wheel's material contact point
    Pr.set_vel(N, 0)
    Cr = Pr.locatenew("Cr", -rR * L.z)                   # rear wheel centre
    Cr.v2pt_theory(Pr, N, R)
    # rear frame mass centre, and the point where the steer axis meets the ground in the
    # reference configuration (a point of the axis, fixed in B and H)
    Gb = Cr.locatenew("Gb", P["xB"] * B.x + (P["zB"] + rR) * B.z)
    Gb.v2pt_theory(Cr, N, B)
    Qs = Cr.locatenew("Qs", (w + c) * B.x + rR * B.z)
    Qs.v2pt_theory(Cr, N, B)
    hx, hz = in_S(P["xH"] - w - c, P["zH"])
    Gh = Qs.locatenew("Gh", hx * H.x + hz * H.z)
    Gh.v2pt_theory(Qs, N, H)
    fx, fz = in_S(-c, -rF)
    Cf = Qs.locatenew("Cf", fx * H.x + fz * H.z)         # front wheel centre
    Cf.v2pt_theory(Qs, N, H)
    # the front contact: from the centre, rF along the downward direction in the wheel's
    # plane (N.z with its component along the axle H.y removed)
    down = (N.z - N.z.dot(H.y) * H.y)
    Pf = Cf.locatenew("Pf", rF * down / sp.sqrt(down.dot(down)))
    Pf.v2pt_theory(Cf, N, F)                             # the wheel's material point there

    bodies = [
        RigidBody("rear_wheel", Cr, R, P["mR"], inertia(B, P["IRxx"], P["IRyy"], P["IRxx"])),
        RigidBody("rear_frame", Gb, B, P["mB"],
                  inertia(B, P["IBxx"], P["IByy"], P["IBzz"], 0, 0, P["IBxz"])),
        RigidBody("front_frame", Gh, H, P["mH"],
                  inertia(Hb, P["IHxx"], P["IHyy"], P["IHzz"], 0, 0, P["IHxz"])),
        RigidBody("front_wheel", Cf, F, P["mF"], inertia(H, P["IFxx"], P["IFyy"], P["IFxx"])),
    ]
    loads = [(pt, b.mass * g * N.z) for pt, b in zip((Cr, Gb, Gh, Cf), bodies, strict=True)]
    V = -g * sum(b.mass * pt.pos_from(Pr).dot(N.z)
                 for pt, b in zip((Cr, Gb, Gh, Cf), bodies, strict=True))
    kde = [ui - qi.diff() for qi, ui in zip(q, u[:4], strict=True)]
    vf = Pf.vel(N)
    system = KaneSystem(
        N, q, u, kde, bodies, loads,
        u_dependent=[u[0], u[2], u[5]],
        velocity_constraints=[vf.dot(Y.x), vf.dot(Y.y), vf.dot(Y.z)],
        q_dependent=[q[2]], configuration_constraints=[Pf.pos_from(Pr).dot(Y.z)],
        parameters={s: BENCHMARK_BICYCLE[k] for k, s in P.items()} if parameters else {},
        potential_energy=V, name="whipple_bicycle")
    return system, dict(N=N, Y=Y, L=L, B=B, H=H, R=R, F=F, q=q, u=u, parameters=P,
                        points=dict(Pr=Pr, Cr=Cr, Gb=Gb, Qs=Qs, Gh=Gh, Cf=Cf, Pf=Pf))
