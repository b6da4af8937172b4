"""The exceptions kanedyn raises. Every error is a :class:`KanedynError`."""

from __future__ import annotations


class KanedynError(Exception):
    """Base class of every error kanedyn raises on purpose."""


class KanedynWarning(UserWarning):
    """kanedyn ran, but not quite as asked (a tolerance held at a floor, a slower fallback)."""


class ModelError(KanedynError):
    """A model is ill-formed: bad topology, bad inertia, unknown joint type, ..."""


class URDFError(ModelError):
    """A URDF file cannot be turned into a Model (the message names the element and line)."""


class MJCFError(ModelError):
    """An MJCF (MuJoCo XML) file cannot be turned into a Model (the message names the
    element, its file and line)."""


class StateError(KanedynError, ValueError):
    """A state (q, v, a, tau, ...) has the wrong shape or is not on the configuration manifold."""


class SymbolicError(KanedynError):
    """A symbolic derivation cannot proceed (speeds not independent, not affine in u, ...)."""


class SolverError(KanedynError):
    """A numerical solver failed: Newton did not converge, step size collapsed, ..."""


class DivergenceError(SolverError):
    """A simulation produced a non-finite or exploding state."""


class ConstraintError(KanedynError):
    """Constraints are redundant, singular, or cannot be satisfied."""


class FrictionError(KanedynError, ValueError):
    """Friction parameters or identification data are invalid, or a fit failed."""


class IdentificationError(KanedynError, ValueError):
    """Identification data cannot give the parameters asked for: too few samples, a
    trajectory that does not excite a parameter (named), inputs of different lengths,
    NaNs (rows named). No parameters are returned from a failed fit."""


class ScenarioError(KanedynError):
    """A scenario file is malformed or inconsistent."""


class CompilerError(SymbolicError):
    """Generated code cannot be built: no C compiler (or cffi) found, or compiling failed."""
