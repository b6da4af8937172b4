"""``q ⊕ v dt`` on the configuration manifold, compiled (numba), for the integrators.

The same maps as each joint's ``integrate`` in :mod:`kanedyn.model.joints`
(tested against :func:`kanedyn.integrate_configuration`): ``q + dt v`` for
1-dof joints, the exact SE(2) flow for planar joints, ``q ⊗ exp(dt ω)`` for
ball joints and the SE(3) exponential of the body twist for free joints.
Quaternions are renormalised after each update, so their norm is 1 to
roundoff however many steps are taken (the exponential map keeps it
analytically; renormalising removes the √N·ε random walk of rounding).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..dynamics import _compiled
from ..dynamics.layout import FREE, IQ, IV, JTYPE, NVJ, PLANAR, SPHERICAL

_compiled.key_cache(__name__)


@nb.njit(cache=True, nogil=True)
def _quat_exp_mul(q, k, w0, w1, w2, out, o):
    """out[o:o+4] = q[k:k+4] ⊗ exp((w0, w1, w2)), normalised."""
    th = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    c = np.cos(0.5 * th)
    s = 0.5 - th * th / 48.0 if th < 1e-6 else np.sin(0.5 * th) / th
    bw, bx, by, bz = c, s * w0, s * w1, s * w2
    aw, ax, ay, az = q[k], q[k + 1], q[k + 2], q[k + 3]
    rw = aw * bw - ax * bx - ay * by - az * bz
    rx = aw * bx + ax * bw + ay * bz - az * by
    ry = aw * by - ax * bz + ay * bw + az * bx
    rz = aw * bz + ax * by - ay * bx + az * bw
    n = np.sqrt(rw * rw + rx * rx + ry * ry + rz * rz)
    out[o], out[o + 1], out[o + 2], out[o + 3] = rw / n, rx / n, ry / n, rz / n


@nb.njit(cache=True, nogil=True)
def integrate_into(data, q, v, dt, out):
    """out = q ⊕ dt v for the whole model (joint types and offsets from the flat array
    ``data`` of :func:`kanedyn.dynamics.flat.flatten`)."""
    for i in range(data.shape[0] - 1):
        a, b, kd = int(data[i, IQ]), int(data[i, IV]), int(data[i, JTYPE])
        if kd == SPHERICAL:
            _quat_exp_mul(q, a, dt * v[b], dt * v[b + 1], dt * v[b + 2], out, a)
        elif kd == FREE:
            w0, w1, w2 = dt * v[b], dt * v[b + 1], dt * v[b + 2]
            u0, u1, u2 = dt * v[b + 3], dt * v[b + 4], dt * v[b + 5]
            th = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
            if th < 1e-6:
                c1, c2 = 0.5, 1.0 / 6.0
            else:
                c1 = (1.0 - np.cos(th)) / (th * th)
                c2 = (th - np.sin(th)) / (th * th * th)
            # V u = u + c1 w×u + c2 w×(w×u)
            x0, x1, x2 = w1 * u2 - w2 * u1, w2 * u0 - w0 * u2, w0 * u1 - w1 * u0
            y0, y1, y2 = w1 * x2 - w2 * x1, w2 * x0 - w0 * x2, w0 * x1 - w1 * x0
            d0, d1, d2 = u0 + c1 * x0 + c2 * y0, u1 + c1 * x1 + c2 * y1, u2 + c1 * x2 + c2 * y2
            qw, qx, qy, qz = q[a + 3], q[a + 4], q[a + 5], q[a + 6]
            # R(q) d
            out[a] = q[a] + ((1 - 2 * (qy * qy + qz * qz)) * d0 + 2 * (qx * qy - qw * qz) * d1
                             + 2 * (qx * qz + qw * qy) * d2)
            out[a + 1] = q[a + 1] + (2 * (qx * qy + qw * qz) * d0
                                     + (1 - 2 * (qx * qx + qz * qz)) * d1
                                     + 2 * (qy * qz - qw * qx) * d2)
            out[a + 2] = q[a + 2] + (2 * (qx * qz - qw * qy) * d0 + 2 * (qy * qz + qw * qx) * d1
                                     + (1 - 2 * (qx * qx + qy * qy)) * d2)
            _quat_exp_mul(q, a + 3, w0, w1, w2, out, a + 3)
        elif kd == PLANAR:
            vx, vy, w = dt * v[b], dt * v[b + 1], dt * v[b + 2]
            th = q[a + 2]
            if abs(w) < 1e-9:
                s1, s2 = 1.0 - w * w / 6.0, w / 2.0
            else:
                s1, s2 = np.sin(w) / w, (1.0 - np.cos(w)) / w
            dx, dy = s1 * vx - s2 * vy, s2 * vx + s1 * vy
            c, s = np.cos(th), np.sin(th)
            out[a] = q[a] + c * dx - s * dy
            out[a + 1] = q[a + 1] + s * dx + c * dy
            out[a + 2] = th + w
        else:
            for e in range(int(data[i, NVJ])):
                out[a + e] = q[a + e] + dt * v[b + e]
