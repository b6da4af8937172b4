"""``q ⊕ v dt`` on the configuration manifold, compiled (numba), for the integrators.

The same maps as each joint's ``integrate`` in :mod:`kanedyn.model.joints`
(tested against :func:`kanedyn.integrate_configuration`), by the compiled ``integrate``
of each joint module whose q is not additive (the exact SE(2) flow for planar joints,
``q ⊗ exp(dt ω)`` for ball joints, the SE(3) exponential of the body twist for free
joints), ``q + dt v`` for the others.
Quaternions are renormalised after each update, so their norm is 1 to
roundoff however many steps are taken (the exponential map keeps it
analytically; renormalising removes the √N·ε random walk of rounding).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ..dynamics import _compiled
from ..dynamics.kernels.joint_extension import INTEGRATE, call_integrate, table_entry
from ..dynamics.layout import EXTENSION, FREE, IQ, IV, JFUNCS, JTYPE, NVJ, PLANAR, SPHERICAL
from ..model.joints import free, planar, spherical

_compiled.key_cache(__name__)


@nb.njit(cache=True, nogil=True)
def integrate_joint(data, i, q, v, dt, out):
    """out[iq] = q[iq] ⊕ dt v[iv] for joint i alone (its slices of q and v, by the flat
    array ``data``): the joint type's compiled ``integrate`` where q is not additive,
    ``q + dt v`` elsewhere."""
    a, b, kd = int(data[i, IQ]), int(data[i, IV]), int(data[i, JTYPE])
    if kd == SPHERICAL:
        spherical.integrate(q, a, v, b, dt, out)
    elif kd == FREE:
        free.integrate(q, a, v, b, dt, out)
    elif kd == PLANAR:
        planar.integrate(q, a, v, b, dt, out)
    elif kd == EXTENSION and table_entry(int(data[i, JFUNCS]), INTEGRATE) != 0:
        call_integrate(table_entry(int(data[i, JFUNCS]), INTEGRATE), q, a, v, b, dt, out,
                       data[i])
    else:  # additive (Joint.chart_is_additive)
        for e in range(int(data[i, NVJ])):
            out[a + e] = q[a + e] + dt * v[b + e]


@nb.njit(cache=True, nogil=True)
def integrate_into(data, q, v, dt, out):
    """out = q ⊕ dt v for the whole model (joint types and offsets from the flat array
    ``data`` of :func:`kanedyn.dynamics.flat.flatten`), joint by joint
    (:func:`integrate_joint`)."""
    for i in range(data.shape[0] - 1):
        integrate_joint(data, i, q, v, dt, out)


@nb.njit(cache=True, nogil=True)
def qdot_into(data, q, v, out):
    """out[:nq] = q̇ = W(q) v for the whole model, joint by joint, as each joint's
    ``kinematic_map`` (:func:`kanedyn.model.configuration.q_dot`, the reference): ball
    joints ½ G(q) ω (``q̇ = ½ q ⊗ (0, ω)``, of q as it is, not renormalised), free joints
    (R(q) v_O, ½ G(q) ω), planar joints (rot_z(θ) (v_x, v_y), ω_z), ``v`` for additive
    joints (the caller refuses joint types of its own that are not additive)."""
    for i in range(data.shape[0] - 1):
        a, b, kd = int(data[i, IQ]), int(data[i, IV]), int(data[i, JTYPE])
        if kd == SPHERICAL or kd == FREE:
            k, o = (a, b) if kd == SPHERICAL else (a + 3, b)
            w, x, y, z = q[k], q[k + 1], q[k + 2], q[k + 3]
            w0, w1, w2 = v[o], v[o + 1], v[o + 2]
            out[k] = 0.5 * -x * w0 + 0.5 * -y * w1 + 0.5 * -z * w2
            out[k + 1] = 0.5 * w * w0 + 0.5 * -z * w1 + 0.5 * y * w2
            out[k + 2] = 0.5 * z * w0 + 0.5 * w * w1 + 0.5 * -x * w2
            out[k + 3] = 0.5 * -y * w0 + 0.5 * x * w1 + 0.5 * w * w2
            if kd == FREE:  # ṗ = R(q) v_O (quat_to_matrix of q as it is)
                u0, u1, u2 = v[b + 3], v[b + 4], v[b + 5]
                out[a] = ((1 - 2 * (y * y + z * z)) * u0 + 2 * (x * y - w * z) * u1
                          + 2 * (x * z + w * y) * u2)
                out[a + 1] = (2 * (x * y + w * z) * u0 + (1 - 2 * (x * x + z * z)) * u1
                              + 2 * (y * z - w * x) * u2)
                out[a + 2] = (2 * (x * z - w * y) * u0 + 2 * (y * z + w * x) * u1
                              + (1 - 2 * (x * x + y * y)) * u2)
        elif kd == PLANAR:
            c, s = np.cos(q[a + 2]), np.sin(q[a + 2])
            out[a] = c * v[b] - s * v[b + 1]
            out[a + 1] = s * v[b] + c * v[b + 1]
            out[a + 2] = v[b + 2]
        else:
            for e in range(int(data[i, NVJ])):
                out[a + e] = v[b + e]
