"""A spacecraft turned by a reaction wheel: an internal, non-potential motor torque.

The bus B (inertia I_bus about its mass centre, one product of inertia) carries
an axisymmetric wheel on its axis B.z (axial moment J, transverse K). Speeds:
the bus angular velocity ω in bus axes, and the wheel's spin u_w relative to
the bus (``kanedyn.kane.classic.spacecraft_reaction_wheel``). Kane's method
gives, with I_tot = I_bus + diag(K, K, J) (Kane & Levinson 1985, gyrostat),

    I_tot ω̇ + J u̇_w e3 = −ω × (I_tot ω + J u_w e3),     J (ω̇3 + u̇_w) = T_m,

which the script checks symbolically. It then runs a slew: the motor spins
the wheel up for 5 s, holds, and brakes it; the bus turns the other way about
B.z. Printed: the bus's turn angle, the wheel speed, the drift of the total
angular momentum in inertial axes (conserved: the torque is internal), and the
work done by the motor against the change of kinetic energy.

Run: .venv/bin/python examples/spacecraft_reaction_wheel.py
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp

from kanedyn.kane import classic

system, info = classic.spacecraft_reaction_wheel()
eom = system.derive()

J, K = info["J"], info["K"]
I_tot = info["I_bus"] + sp.diag(K, K, J)
w, uw = sp.Matrix(eom.u[:3]), eom.u[3]
e3 = sp.Matrix([0, 0, 1])
M_hand = I_tot.row_join(J * e3).col_join((J * e3.T).row_join(sp.Matrix([[J]])))
f_hand = (-w.cross(I_tot * w + J * uw * e3)).col_join(sp.Matrix([sp.Symbol("Tm")]))
same = sp.simplify(eom.mass_matrix - M_hand) == sp.zeros(4, 4) and \
    sp.simplify(eom.forcing - f_hand) == sp.zeros(4, 1)
print("Kane's equations equal the hand-reduced gyrostat equations:", same)

values = {"I11": 30.0, "I22": 40.0, "I33": 50.0, "I12": 3.0, "J": 0.08, "K": 0.05}
fast = eom.compile(backend="numpy", parameters=values)
Itot = np.array([[30.0 + 0.05, 3.0, 0], [3.0, 40.0 + 0.05, 0], [0, 0, 50.0 + 0.08]])
dcm = sp.lambdify(eom.q[:4], info["N"].dcm(info["B"]).xreplace(
    {a: sp.Symbol(a.func.__name__) for a in info["q"][:4]}))


def motor(t: float) -> float:
    """Spin up at 0.02 N m for 5 s, coast 5 s, brake for 5 s."""
    return 0.02 if t < 5 else (0.0 if t < 10 else -0.02)


def rhs(t, x):
    """State (q, u, W): W, the motor's work, integrated along as Ẇ = T_m u_w."""
    q, u = x[:5], x[5:9]
    tau = np.array([motor(t)])
    return np.r_[fast.q_dot(q, u), fast.forward_dynamics(q, u, tau), motor(t) * u[3]]


def momentum(x):
    e = x[:4] / np.linalg.norm(x[:4])
    return np.asarray(dcm(*e), float) @ (Itot @ x[5:8] + 0.08 * x[8] * np.array([0, 0, 1.0]))


x0 = np.r_[1.0, 0, 0, 0, 0, 0.001, -0.002, 0.0, 0.0, 0.0]   # a slight tumble to start
sol = solve_ivp(rhs, (0, 15.0), x0, method="DOP853", rtol=1e-11, atol=1e-13,
                t_eval=np.linspace(0, 15, 301), max_step=0.05)
H = np.array([momentum(x) for x in sol.y.T])
e = sol.y[:4, -1] / np.linalg.norm(sol.y[:4, -1])
yaw = 2 * np.arctan2(e[3], e[0])
print(f"bus turned {np.degrees(yaw):.3f}° about B.z; wheel speed at 10 s: "
      f"{sol.y[8, 200]:.3f} rad/s, at 15 s: {sol.y[8, -1]:.2e} rad/s")
print(f"angular momentum drift |H(t) − H(0)| / |H(0)| = "
      f"{np.max(np.linalg.norm(H - H[0], axis=1)) / np.linalg.norm(H[0]):.1e}")
T = np.array([fast.kinetic_energy(x[:5], x[5:9]) for x in sol.y.T])
for k in (100, 200, 300):
    print(f"t = {sol.t[k]:4.1f} s: kinetic energy gained {T[k] - T[0]:.9e} J, "
          f"motor work {sol.y[9, k]:.9e} J")
