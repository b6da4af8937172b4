"""A minimal text progress bar on stderr for long simulations."""

from __future__ import annotations

import sys
import time


class ProgressBar:
    """``bar(t)`` redraws at most every 0.2 s, starting after 1 s (short runs stay silent);
    ``close()`` ends the line."""

    def __init__(self, t0: float, t_final: float, label: str = "simulate", width: int = 30):
        self.t0, self.tf, self.label, self.width = t0, t_final, label, width
        self.start = self.last = time.perf_counter()
        self.stream = sys.stderr
        self.drawn = False

    def __call__(self, t: float) -> None:
        now = time.perf_counter()
        if now - self.start < 1.0 or (now - self.last < 0.2 and t < self.tf):
            return
        self.last = now
        self.drawn = True
        frac = 1.0 if self.tf <= self.t0 else min(1.0, (t - self.t0) / (self.tf - self.t0))
        n = int(frac * self.width)
        eta = (now - self.start) * (1 - frac) / frac if frac > 0 else float("nan")
        self.stream.write(f"\r{self.label} [{'#' * n}{'.' * (self.width - n)}] "
                          f"{100 * frac:5.1f}%  t={t:.4g}  eta {eta:.1f}s ")
        self.stream.flush()

    def close(self) -> None:
        if not self.drawn:
            return
        self.stream.write("\n")
        self.stream.flush()


def wants_progress(progress: bool | None) -> bool:
    """True → on, False → off, None → on only when stderr is a terminal."""
    if progress is None:
        return bool(getattr(sys.stderr, "isatty", lambda: False)())
    return bool(progress)
