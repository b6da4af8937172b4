"""Force elements and joint damping have the sign physics gives them.

The energy checks run with damping and actuation off, so a damper with the
wrong sign would pass them; this line looks at the elements themselves:

* the model's joint damping and Coulomb friction coefficients are ≥ 0
  (a negative coefficient feeds energy in);
* a force element that declares ``dissipative = True`` (dampers, friction)
  has power ``vᵀτ ≤ 0`` at every sampled state;
* a conservative element (``conservative = True``) has ``τ = −∂V/∂q``
  (central difference of its ``potential`` on the manifold), so its
  potential is the one the energy budget counts.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from .result import CheckResult, skipped

#: relative error allowed for τ = −∂V/∂q by central differences (ε = 1e-6)
GRADIENT_TOL = 1e-6


def _label(el, k: int) -> str:
    return getattr(el, "name", None) or f"{type(el).__name__}[{k}]"


def _binding_target(subject):
    """What force elements resolve joint names against: the system, or for a Model an
    object offering it the way a simulation would (``model, nq, nv, joint_names``)."""
    if subject.system is not None:
        return subject.system
    m = subject.model
    return SimpleNamespace(model=m, nq=m.nq, nv=m.nv, joint_names=m.joint_names)


def dissipation(subject, Q, V, forces=(), eps: float = 1e-6) -> CheckResult:
    name, title = "dissipation", "dampers dissipate, springs derive from V"
    faults, figure, n_checked = [], 0.0, 0
    if subject.model is not None:
        for b in subject.model.bodies:
            for what in ("damping", "friction"):
                c = float(getattr(b.joint, what))
                n_checked += 1
                if c < 0:
                    faults.append(f"joint {b.joint.name!r} has {what} {c:g} < 0")
                    figure = max(figure, -c)
    bound = [el.bind(_binding_target(subject)) for el in forces]
    for k, el in enumerate(bound):
        label = _label(forces[k], k)
        if getattr(el, "dissipative", False):
            n_checked += 1
            worst = 0.0
            for q, v in zip(Q, V, strict=True):
                tau = np.asarray(el.generalized_force(0.0, q, v), dtype=float)
                worst = max(worst, float(v @ tau) / max(float(np.abs(v).sum() *
                                                            np.abs(tau).max()), 1e-300))
            if worst > 1e-12:
                faults.append(f"element {label!r} declared dissipative feeds power in "
                              f"(v.tau > 0, {worst:.3g} of |v||tau|)")
                figure = max(figure, worst)
        if getattr(el, "conservative", False):
            n_checked += 1
            worst = 0.0
            for q in Q:
                tau = np.asarray(el.generalized_force(0.0, q, np.zeros(subject.nv)), float)
                grad = np.empty(subject.nv)
                for j in range(subject.nv):
                    e = np.zeros(subject.nv)
                    e[j] = eps
                    grad[j] = (el.potential(subject.integrate_configuration(q, e, 1.0))
                               - el.potential(subject.integrate_configuration(q, -e, 1.0))) / (
                        2 * eps)
                scale = max(float(np.abs(tau).max()), float(np.abs(grad).max()), 1e-300)
                worst = max(worst, float(np.abs(tau + grad).max()) / scale)
            if worst > GRADIENT_TOL:
                faults.append(f"conservative element {label!r}: tau != -dV/dq "
                              f"(relative error {worst:.3g})")
                figure = max(figure, worst)
    if n_checked == 0:
        return skipped(name, title, "no damping coefficients or force elements to check")
    if faults:
        return CheckResult(name, False, figure, 0.0, "; ".join(faults), title)
    return CheckResult(name, True, figure, 0.0,
                       f"{n_checked} coefficients/elements checked at {len(Q)} states", title)
