"""kanedyn.verify — the checklist that catches a model with a sign error before it
integrates quietly to a wrong answer (see docs/verify.md).

>>> import kanedyn as kd
>>> from kanedyn.verify import checklist
>>> report = checklist(kd.models.pendulum_chain(2), n_samples=2)
>>> report.passed
True
"""

from .checklist import CHECKS, checklist
from .result import CheckResult, VerifyReport
from .static import static_gravity_torques

__all__ = ["CHECKS", "CheckResult", "VerifyReport", "checklist", "static_gravity_torques"]
