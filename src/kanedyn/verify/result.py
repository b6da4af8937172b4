"""Results of the verification checklist: one :class:`CheckResult` per line of the table."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class CheckResult:
    """One line of the checklist.

    ``figure`` is the measured number the verdict rests on (a relative error,
    a drift, a smallest eigenvalue); ``tolerance`` the bound it was held to;
    ``passed`` is None when the check did not apply (``detail`` says why).
    """

    name: str
    passed: bool | None
    figure: float | None
    tolerance: float | None
    detail: str = ""
    title: str = ""

    def __post_init__(self):
        # numpy booleans and floats would break `is False` tests and JSON
        if self.passed is not None:
            object.__setattr__(self, "passed", bool(self.passed))
        for k in ("figure", "tolerance"):
            x = getattr(self, k)
            if x is not None:
                object.__setattr__(self, k, float(x))

    @property
    def skipped(self) -> bool:
        return self.passed is None

    @property
    def status(self) -> str:
        return "skip" if self.passed is None else ("PASS" if self.passed else "FAIL")


def skipped(name: str, title: str, why: str) -> CheckResult:
    """A line that did not apply to this model, with the reason."""
    return CheckResult(name, None, None, None, why, title)


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    return f"{x:.3e}"


@dataclass
class VerifyReport:
    """The checklist's result: ``str(report)`` is the table, ``report.passed`` the verdict
    (no line failed; skipped lines do not count), ``report.to_dict()`` the data."""

    subject: str
    results: list[CheckResult] = field(default_factory=list)
    settings: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(r.passed is not False for r in self.results)

    @property
    def exit_code(self) -> int:
        """The command line's convention: 0 if every line passed or was skipped, 1 if one failed."""
        return 0 if self.passed else 1

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if r.passed is False]

    def __getitem__(self, name: str) -> CheckResult:
        for r in self.results:
            if r.name == name:
                return r
        raise KeyError(f"no check named {name!r}; lines are {[r.name for r in self.results]}")

    def __iter__(self):
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def to_dict(self) -> dict:
        return {"subject": self.subject, "passed": self.passed, "settings": dict(self.settings),
                "checks": [asdict(r) for r in self.results]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=float)

    def __str__(self) -> str:
        head = ("status", "check", "figure", "tolerance", "detail")
        rows = [(r.status, r.name, _num(r.figure), _num(r.tolerance), r.detail)
                for r in self.results]
        w = [max(len(h), *(len(row[k]) for row in rows)) if rows else len(h)
             for k, h in enumerate(head[:4])]
        lines = [f"verification of {self.subject}"]
        fmt = "  ".join(f"{{:{'<' if k < 2 else '>'}{w[k]}}}" for k in range(4)) + "  {}"
        lines.append(fmt.format(*head))
        lines.append("  ".join("-" * n for n in w) + "  " + "-" * 6)
        lines += [fmt.format(*row) for row in rows]
        nf, ns = len(self.failed), sum(r.skipped for r in self.results)
        np_ = len(self.results) - nf - ns
        verdict = "PASSED" if self.passed else "FAILED: " + ", ".join(r.name for r in self.failed)
        lines.append(f"{np_} passed, {nf} failed, {ns} skipped — {verdict}")
        return "\n".join(lines)
