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
