"""Shared fixtures: a short trajectory of a 3D chain, and a headless Chromium.

Chromium is Debian's ``chromium`` package. When it is missing the fixture
installs it (``apt-get install -y chromium``, after ``apt-get update`` if the
first attempt fails) when running as root with apt available; the browser
tests skip, saying why, only where that is impossible.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from types import SimpleNamespace

import numpy as np
import pytest

import kanedyn as kd
from kanedyn.verify.energy import integrate_free_motion
from kanedyn.verify.subject import as_subject

_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
          "--disable-component-update", "--disable-sync", "--no-first-run"]


def _find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _install_chromium() -> str:
    """Try to install Debian's chromium; returns why it failed ('' on success)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "not running as root, so apt-get cannot install it"
    if shutil.which("apt-get") is None:
        return "apt-get is not available"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "-q", "chromium"]
    why = ""
    for cmds in ([install], [["apt-get", "update", "-q"], install]):
        try:
            for cmd in cmds:
                r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
                if r.returncode != 0:
                    why = f"`{' '.join(cmd)}` failed: {r.stderr.strip()[-300:]}"
                    break
            else:
                return ""
        except (OSError, subprocess.TimeoutExpired) as exc:
            why = f"apt-get failed: {exc}"
    return why


class Browser:
    """Headless Chromium, one fresh profile per call."""

    def __init__(self, exe: str):
        self.exe = exe

    def run(self, url: str, *args: str, timeout: float = 60) -> str:
        with tempfile.TemporaryDirectory() as profile:
            r = subprocess.run([self.exe, *_FLAGS, f"--user-data-dir={profile}", *args, url],
                               capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"chromium exited with {r.returncode}: {r.stderr[-500:]}")
        return r.stdout

    def dump_dom(self, url: str, budget_ms: int) -> str:
        return self.run(url, f"--virtual-time-budget={budget_ms}", "--dump-dom")

    def screenshot(self, url: str, png: str, budget_ms: int = 1000,
                   size: str = "800,900") -> None:
        self.run(url, f"--virtual-time-budget={budget_ms}", f"--window-size={size}",
                 f"--screenshot={png}")


@pytest.fixture(scope="session")
def browser() -> Browser:
    exe = _find_chromium()
    if exe is None:
        why = _install_chromium()
        exe = _find_chromium()
        if exe is None:
            pytest.skip(f"headless Chromium is not installed and cannot be installed: {why}")
    return Browser(exe)


@pytest.fixture(scope="session")
def chain_run():
    """A 3D double pendulum swinging for 1 s: model, t, q, v, energy (a trajectory's fields)."""
    model = kd.models.pendulum_chain(2, planar=False)
    s = as_subject(model)
    q0, v0 = s.random_state(np.random.default_rng(4))
    t, Q, V = integrate_free_motion(s, q0, v0, 1.0, n_out=61, rtol=1e-9)
    E = np.array([s.energy(q, v) for q, v in zip(Q, V, strict=True)])
    traj = SimpleNamespace(t=t, q=Q, v=V, energy=E, work_nc=np.zeros_like(t),
                           budget=E - E[0], method="DOP853")
    return model, traj
