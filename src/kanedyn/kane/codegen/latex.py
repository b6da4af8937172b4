"""LaTeX of the frozen equations (beside the codegen pipeline, for reading them).

:func:`to_latex` (``EquationsOfMotion.to_latex``) prints the equations as SymPy holds
them — the intermediates, then q̇ = W u and M u̇ = forcing — without lowering them.
"""

from __future__ import annotations

import sympy as sp

__all__ = ["to_latex"]


def to_latex(eom, max_terms: int | None = None) -> str:
    """The equations as LaTeX: the intermediates, then q̇ = W u and M u̇ = forcing."""
    lines = [r"\begin{aligned}"]
    for s, e in eom.intermediates[:max_terms]:
        lines.append(f"{sp.latex(s)} &= {sp.latex(e)} \\\\")
    if max_terms is not None and len(eom.intermediates) > max_terms:
        lines.append(rf"&\;\vdots \quad ({len(eom.intermediates) - max_terms} more) \\")
    qd = sp.Matrix([sp.Derivative(s, eom.t) for s in eom.q])
    ud = sp.Matrix([sp.Derivative(s, eom.t) for s in eom.u])
    lines.append(f"{sp.latex(qd)} &= {sp.latex(eom.qdot)} \\\\")
    lines.append(f"{sp.latex(eom.mass_matrix)} {sp.latex(ud)} &= {sp.latex(eom.forcing)}")
    lines.append(r"\end{aligned}")
    return "\n".join(lines)

