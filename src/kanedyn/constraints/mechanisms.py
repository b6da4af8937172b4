"""Linkages built as Models cut open at one joint: the planar four-bar and slider–crank,
the spatial RSSR linkage (ball joints) and a 6-6 Stewart platform (a free platform on six
UPS legs).

The planar ones move in the world xy-plane (revolute joints about z, gravity −y). The cut joint is a
:class:`~kanedyn.constraints.loops.LoopClosure` of kind "point" restricted to the x and y
axes: a planar pin fixes two coordinates, not three (the third row would be redundant).
"""

from __future__ import annotations

import numpy as np

from ..model import ModelBuilder
from ..model.joints import Free, Prismatic, Revolute, Spherical
from .loops import LoopClosure
from .model_system import ConstrainedSystem

_Z = (0.0, 0.0, 1.0)


def _rod(m: float, length: float):
    """Uniform slender rod along its body x axis, centre at length/2."""
    return m, (length / 2, 0.0, 0.0), np.diag([0.0, m * length ** 2 / 12, m * length ** 2 / 12])


def four_bar_system(l1=0.2, l2=0.5, l3=0.4, l0=0.45, m=(1.0, 2.0, 1.5), gravity=9.81,
                    tau=None) -> ConstrainedSystem:
    """Crank l1 pinned at O = (0, 0), coupler l2 pinned to the crank tip, rocker l3 pinned
    at D = (l0, 0); the coupler tip is pinned to the rocker tip (the cut joint).
    q = (θ1 crank, θ2 coupler relative to crank, θ3 rocker), angles from the x axis."""
    b = ModelBuilder("four_bar", gravity=(0.0, -gravity, 0.0))
    b.add_body("crank", None, Revolute("crank_pin", axis=_Z), None, *_rod(m[0], l1))
    b.add_body("coupler", "crank", Revolute("coupler_pin", axis=_Z),
               (np.eye(3), (l1, 0.0, 0.0)), *_rod(m[1], l2))
    b.add_body("rocker", None, Revolute("rocker_pin", axis=_Z),
               (np.eye(3), (l0, 0.0, 0.0)), *_rod(m[2], l3))
    model = b.build()
    loop = LoopClosure("rocker", "coupler", "point", frame_a=(np.eye(3), (l3, 0.0, 0.0)),
                       frame_b=(np.eye(3), (l2, 0.0, 0.0)), axes=(0, 1), name="coupler–rocker pin")
    sys = ConstrainedSystem(model, [loop], tau=tau, name="four_bar")
    sys.geometry = dict(l1=l1, l2=l2, l3=l3, l0=l0, m=tuple(m), gravity=gravity)
    return sys


def four_bar_configuration(theta1: float, l1=0.2, l2=0.5, l3=0.4, l0=0.45) -> np.ndarray:
    """q on the loop for crank angle θ1 (the open, 'elbow-up' assembly), by the circle
    intersection of the coupler (about the crank tip) and the rocker (about D)."""
    B = l1 * np.array([np.cos(theta1), np.sin(theta1)])
    D = np.array([l0, 0.0])
    d = np.linalg.norm(D - B)
    a = (l2 ** 2 - l3 ** 2 + d ** 2) / (2 * d)
    h = np.sqrt(l2 ** 2 - a ** 2)
    e = (D - B) / d
    P = B + a * e + h * np.array([-e[1], e[0]])
    th2_abs = np.arctan2(*(P - B)[::-1])
    th3 = np.arctan2(*(P - D)[::-1])
    return np.array([theta1, th2_abs - theta1, th3])


def four_bar_problem(theta1=np.pi / 3, omega1=2.0, t_final=1.0, **geom):
    from .consistent import consistent_initial_values
    from .problems import Problem, Reference

    sys = four_bar_system(**geom)
    keys = ("l1", "l2", "l3", "l0")
    q0 = four_bar_configuration(theta1, **{k: sys.geometry[k] for k in keys})
    v0 = consistent_initial_values(sys, q0, np.array([omega1, 0.0, 0.0])).v
    g = sys.geometry

    def reference():
        th, om = four_bar_reference(theta1, v0[0], t_final, g["l1"], g["l2"], g["l3"],
                                    g["l0"], g["m"], g["gravity"])
        return Reference(t_final, four_bar_configuration(th, *(g[k] for k in keys)), None,
                         {"crank_rate": om},
                         source="one-coordinate Lagrange equation (sympy), DOP853 at 1e-13")

    return Problem("four_bar", sys, q0, v0, t_final,
                   "planar four-bar linkage (kanedyn); reference from the crank angle's "
                   "Lagrange equation", reference, "q")


def slider_crank_system(r=0.1, l=0.3, m=(1.0, 2.0, 0.5), gravity=9.81, tau=None):
    """Crank r pinned at O, rod l pinned to the crank tip, slider on the x axis; the rod tip
    is pinned to the slider (the cut joint). q = (θ crank, φ rod relative to crank, x)."""
    b = ModelBuilder("slider_crank", gravity=(0.0, -gravity, 0.0))
    b.add_body("crank", None, Revolute("crank_pin", axis=_Z), None, *_rod(m[0], r))
    b.add_body("rod", "crank", Revolute("rod_pin", axis=_Z), (np.eye(3), (r, 0.0, 0.0)),
               *_rod(m[1], l))
    b.add_body("slider", None, Prismatic("slide", axis=(1.0, 0.0, 0.0)), None, m[2],
               (0.0, 0.0, 0.0), np.diag([1e-4, 1e-4, 1e-4]))
    model = b.build()
    loop = LoopClosure("slider", "rod", "point", frame_b=(np.eye(3), (l, 0.0, 0.0)),
                       axes=(0, 1), name="rod–slider pin")
    sys = ConstrainedSystem(model, [loop], tau=tau, name="slider_crank")
    sys.geometry = dict(r=r, l=l, m=tuple(m), gravity=gravity)
    return sys


def slider_crank_configuration(theta, r=0.1, l=0.3):
    s = -r * np.sin(theta) / l  # sine of the rod's absolute angle
    phi_abs = np.arcsin(s)
    return np.array([theta, phi_abs - theta, r * np.cos(theta) + l * np.cos(phi_abs)])


def one_dof_reference(theta, mu, V, theta0, omega0, t_final):
    """Integrate ``μ(θ) θ̈ + ½ μ'(θ) θ̇² + V'(θ) = 0`` — Lagrange's equation of a mechanism
    with one degree of freedom, ``T = ½ μ(θ) θ̇²`` — from sympy expressions μ, V in θ, by
    DOP853 at rtol = atol = 1e-13. Returns θ, θ̇ at t_final."""
    import sympy as sp
    from scipy.integrate import solve_ivp

    f_mu = sp.lambdify(theta, mu, "math")
    f_dmu = sp.lambdify(theta, sp.diff(mu, theta), "math")
    f_dV = sp.lambdify(theta, sp.diff(V, theta), "math")

    def rhs(t, y):
        return [y[1], -(0.5 * f_dmu(y[0]) * y[1] ** 2 + f_dV(y[0])) / f_mu(y[0])]

    sol = solve_ivp(rhs, (0.0, t_final), [theta0, omega0], method="DOP853", rtol=1e-13,
                    atol=1e-13)
    return sol.y[:, -1]


def slider_crank_reference(theta0, omega0, t_final, r=0.1, l=0.3, m=(1.0, 2.0, 0.5),
                           gravity=9.81):
    """Independent solution: the crank angle's Lagrange equation in one coordinate, with
    μ and V from closed-form slider–crank kinematics (sympy)."""
    import sympy as sp

    th = sp.symbols("theta")
    m1, m2, m3 = m
    phi = sp.asin(-r * sp.sin(th) / l)  # rod's absolute angle
    B = sp.Matrix([r * sp.cos(th), r * sp.sin(th)])
    Gc = B + sp.Matrix([sp.cos(phi), sp.sin(phi)]) * l / 2
    xs = r * sp.cos(th) + l * sp.cos(phi)
    dG = Gc.diff(th)
    mu = (m1 * r ** 2 / 3 + m2 * (dG.dot(dG)) + m2 * l ** 2 / 12 * phi.diff(th) ** 2
          + m3 * xs.diff(th) ** 2)
    V = gravity * (m1 * r / 2 * sp.sin(th) + m2 * Gc[1])
    return one_dof_reference(th, mu, V, theta0, omega0, t_final)


def four_bar_reference(theta0, omega0, t_final, l1=0.2, l2=0.5, l3=0.4, l0=0.45,
                       m=(1.0, 2.0, 1.5), gravity=9.81):
    """Independent solution of the four-bar: θ1's Lagrange equation with the coupler and
    rocker angles from the closed-form circle intersection (as in
    :func:`four_bar_configuration`), differentiated by sympy."""
    import sympy as sp

    t1 = sp.symbols("theta1")
    m1, m2, m3 = m
    B = sp.Matrix([l1 * sp.cos(t1), l1 * sp.sin(t1)])
    D = sp.Matrix([l0, 0])
    d = sp.sqrt((D - B).dot(D - B))
    a = (l2 ** 2 - l3 ** 2 + d ** 2) / (2 * d)
    h = sp.sqrt(l2 ** 2 - a ** 2)
    e = (D - B) / d
    P = B + a * e + h * sp.Matrix([-e[1], e[0]])
    t2 = sp.atan2(P[1] - B[1], P[0] - B[0])
    t3 = sp.atan2(P[1], P[0] - l0)
    G2 = B + (P - B) / 2
    G3 = D + (P - D) / 2
    dG2 = G2.diff(t1)
    mu = (m1 * l1 ** 2 / 3 + m2 * dG2.dot(dG2) + m2 * l2 ** 2 / 12 * t2.diff(t1) ** 2
          + m3 * l3 ** 2 / 3 * t3.diff(t1) ** 2)
    V = gravity * (m1 * l1 / 2 * sp.sin(t1) + m2 * G2[1] + m3 * G3[1])
    th, om = one_dof_reference(t1, mu, V, theta0, omega0, t_final)
    return th, om


def slider_crank_problem(theta0=np.pi / 4, omega0=5.0, t_final=1.0, **geom):
    from .consistent import consistent_initial_values
    from .problems import Problem, Reference

    sys = slider_crank_system(**geom)
    r, l = sys.geometry["r"], sys.geometry["l"]
    q0 = slider_crank_configuration(theta0, r, l)
    v0 = consistent_initial_values(sys, q0, np.array([omega0, 0.0, 0.0])).v

    def reference():
        # the consistent v0 fixes the crank rate (the projection may have changed it)
        th, om = slider_crank_reference(theta0, v0[0], t_final, r, l, sys.geometry["m"],
                                        sys.geometry["gravity"])
        q = slider_crank_configuration(th, r, l)
        return Reference(t_final, q, None, {"crank_rate": om},
                         source="one-coordinate Lagrange equation (sympy), DOP853 at 1e-13")

    return Problem("slider_crank", sys, q0, v0, t_final,
                   "rigid planar slider–crank (kanedyn); reference from the crank angle's "
                   "Lagrange equation", reference, "q")


def rssr_system(crank=0.2, coupler=0.6, rocker=0.4, pivot=(0.5, 0.2, 0.1),
                m=(1.0, 2.0, 1.5), gravity=9.81, tau=None,
                floating=False) -> ConstrainedSystem:
    """A spatial RSSR linkage: a crank on a revolute joint about the world z axis, a
    coupler on a ball joint at the crank tip (a quaternion in q), a rocker on a revolute
    joint about the world y axis at ``pivot``; the coupler tip is held on the rocker tip by
    a ball joint, the cut joint (a "point" closure, 3 rows). Two degrees of freedom: the
    input and the coupler's spin about its own axis. Gravity −z; slender rods along their
    body x axes (spin inertia 1e-3 m L²).

    ``floating=True``: the ground is a free body itself ("frame", 3 kg, on a free joint: 6
    more speeds, a quaternion in q), the crank and the rocker pinned to it — a free-floating
    closed chain, whose total momenta are conserved when ``gravity=0``."""
    def rod(mass, length):
        inertia = np.full(3, mass * length ** 2 / 12)
        inertia[0] = 1e-3 * mass * length ** 2
        return mass, (length / 2, 0.0, 0.0), np.diag(inertia)

    b = ModelBuilder("rssr_floating" if floating else "rssr", gravity=(0.0, 0.0, -gravity))
    ground = None
    if floating:
        ground = "frame"
        b.add_body("frame", None, Free("frame_free"), None, 3.0, (0.25, 0.1, 0.05),
                   np.diag([0.02, 0.03, 0.04]))
    b.add_body("crank", ground, Revolute("crank_pin", axis=_Z), None, *rod(m[0], crank))
    b.add_body("coupler", "crank", Spherical("ball_a"), (np.eye(3), (crank, 0.0, 0.0)),
               *rod(m[1], coupler))
    b.add_body("rocker", ground, Revolute("rocker_pin", axis=(0.0, 1.0, 0.0)),
               (np.eye(3), tuple(pivot)), *rod(m[2], rocker))
    model = b.build()
    loop = LoopClosure("rocker", "coupler", "point", frame_a=(np.eye(3), (rocker, 0.0, 0.0)),
                       frame_b=(np.eye(3), (coupler, 0.0, 0.0)), name="ball_b")
    sys = ConstrainedSystem(model, [loop], tau=tau,
                            name="rssr (floating)" if floating else "rssr")
    sys.geometry = dict(crank=crank, coupler=coupler, rocker=rocker, pivot=tuple(pivot),
                        floating=bool(floating))
    return sys


def rssr_guess(sys: ConstrainedSystem, rocker_angle: float = -1.5) -> np.ndarray:
    """A configuration near the loop (crank at 0, the coupler pointed at the rocker tip),
    for :func:`~kanedyn.constraints.consistent_initial_values` to put on it."""
    g = sys.geometry
    pivot = np.asarray(g["pivot"], dtype=float)
    tip = pivot + g["rocker"] * np.array([np.cos(rocker_angle), 0.0, -np.sin(rocker_angle)])
    d = tip - np.array([g["crank"], 0.0, 0.0])
    d /= np.linalg.norm(d)
    axis = np.cross([1.0, 0.0, 0.0], d)
    angle = np.arctan2(np.linalg.norm(axis), d[0])
    axis /= np.linalg.norm(axis)
    quat = np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])
    q = np.concatenate([[0.0], quat, [rocker_angle]])
    if g.get("floating"):  # the frame at the origin, unrotated
        q = np.concatenate([[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0], q])
    return q


def stewart_system(base_radius=1.0, platform_radius=0.6, height=1.0, spread=0.2,
                   platform_mass=10.0, leg_mass=(1.0, 0.5), gravity=9.81) -> ConstrainedSystem:
    """A 6-6 Stewart platform as a closed-loop Model: the platform on a free joint (a
    quaternion in q), six UPS legs — a universal joint at the base (revolute about x, then
    about y; the cylinder after it), a prismatic joint along the cylinder's z axis (the
    piston, its frame at the leg's tip) — each held on the platform by a ball joint, the
    cut (a "point" closure, 3 rows: 18 in all, 6 degrees of freedom). Base points at
    angles 120 k ± ``spread`` rad on ``base_radius``, platform points at 120 k + 60 ∓
    ``spread`` on ``platform_radius``, the platform ``height`` above the base."""
    b = ModelBuilder("stewart", gravity=(0.0, 0.0, -gravity))
    Ip = platform_mass * np.diag([0.05, 0.05, 0.09])
    b.add_body("platform", None, Free("platform_free"), (np.eye(3), (0.0, 0.0, height)),
               platform_mass, (0.0, 0.0, 0.0), Ip)
    mc, mp = leg_mass
    loops, base_pts, plat_pts = [], [], []
    for k in range(6):
        sgn = 1.0 if k % 2 == 0 else -1.0
        a = 2 * np.pi / 3 * (k // 2) + sgn * spread
        ap = 2 * np.pi / 3 * (k // 2) + sgn * (np.pi / 3 - spread)
        B = base_radius * np.array([np.cos(a), np.sin(a), 0.0])
        P = platform_radius * np.array([np.cos(ap), np.sin(ap), 0.0])
        base_pts.append(B)
        plat_pts.append(P)
        b.add_body(f"yoke{k}", None, Revolute(f"u{k}_x", axis=(1.0, 0.0, 0.0)),
                   (np.eye(3), tuple(B)), 1e-3, (0.0, 0.0, 0.0), 1e-6 * np.eye(3))
        b.add_body(f"cylinder{k}", f"yoke{k}", Revolute(f"u{k}_y", axis=(0.0, 1.0, 0.0)),
                   None, mc, (0.0, 0.0, 0.25), mc * np.diag([0.021, 0.021, 0.001]))
        b.add_body(f"piston{k}", f"cylinder{k}", Prismatic(f"p{k}", axis=(0.0, 0.0, 1.0)),
                   None, mp, (0.0, 0.0, -0.25), mp * np.diag([0.021, 0.021, 0.001]))
        loops.append(LoopClosure(f"piston{k}", "platform", "point",
                                 frame_b=(np.eye(3), tuple(P)), name=f"ball{k}"))
    sys = ConstrainedSystem(b.build(), loops, name="stewart")
    sys.geometry = dict(base=np.array(base_pts), platform=np.array(plat_pts), height=height)
    return sys


def stewart_configuration(sys: ConstrainedSystem, position=(0.0, 0.0, 0.0),
                          rotation=None) -> np.ndarray:
    """q on the loops for the platform displaced by ``position`` (from its home, ``height``
    above the base) and turned by ``rotation``: each leg's universal angles point it at its
    platform point, R_x(α) R_y(β) e_z = d/|d|, and the piston reaches it, s = |d|.
    (``rotation`` None: the home orientation.)"""
    g = sys.geometry
    R = np.eye(3) if rotation is None else np.asarray(rotation, dtype=float)
    x = np.array([0.0, 0.0, g["height"]]) + np.asarray(position, dtype=float)
    # the free joint's q: position, quaternion (w, x, y, z) of R
    w = np.sqrt(max(0.0, 1.0 + np.trace(R))) / 2
    quat = (np.array([w, (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w),
                      (R[1, 0] - R[0, 1]) / (4 * w)]))
    q = [np.asarray(position, dtype=float), quat]
    for B, P in zip(g["base"], g["platform"], strict=True):
        d = x + R @ P - B
        s = float(np.linalg.norm(d))
        u = d / s
        q.append(np.array([np.arctan2(-u[1], u[2]), np.arcsin(u[0]), s]))
    return np.concatenate(q)
