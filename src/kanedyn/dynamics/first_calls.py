"""First calls on a cold cache: answered by the reference while the kernels compile.

The compiled kernels of RNEA, CRBA and ABA take numba 7-90 s each to compile the first
time (docs/benchmarks.md, "First call"); after that they load from numba's disk cache in
milliseconds. So that a first call in a new environment does not wait for them, a call
whose kernel is neither compiled in this process nor in the disk cache is answered by
:mod:`kanedyn.dynamics.reference` — the readable algorithms of Featherstone (2008) the
kernels are tested against, the same quantities to round-off, one state at a time in
numpy (0.2-0.5 ms a state on a 7-link chain) — while a second Python process compiles
the kernel into the disk cache. The calls after that load it from there, as every call
does when the cache is warm: a tiered start, as a JIT-compiled language runtime
interprets a function until its compiled code is ready.

What it covers: :func:`kanedyn.rnea`, :func:`~kanedyn.nonlinear_effects`,
:func:`~kanedyn.gravity_torques`, :func:`~kanedyn.crba` and :func:`~kanedyn.aba`, one
state or a batch; the frame functions (``frame_placement``, ``frame_velocity``,
``frame_acceleration``, ``frame_jacobian``, ``frame_jacobian_time_variation``: their
reference is :mod:`kanedyn.dynamics.frames_reference`, the hooks in
:mod:`kanedyn.dynamics.frames`); the compiled loops of ``kd.simulate`` on Models for rk4,
midpoint, gauss4, verlet, avf, itoh_abe and energy_momentum's Gonzalez variant
(:func:`loop_ready`: the Python steps meanwhile). A batch of more than
``_dispatch.SMALL_BATCH`` (64) states has its
batched kernel compiled and is answered state by state meanwhile; a smaller batch is
answered state by state (by the single-state kernel once that is compiled) until the
batched kernel is in the cache. Every other compiled function compiles on its first
call, in the calling process, as before. The compiler process is stopped when the
program ends (the kernels it finished stay in the cache).

Modes, from the environment variable ``KANEDYN_FIRST_CALLS`` at import or
:func:`set_mode`:

- ``"reference"`` (the default): as above;
- ``"compile"``: a first call compiles its kernel and waits for it (the behaviour
  before; the test suite, ``make bench`` and ``kanedyn precompile`` use it, so that
  what they run and time is the compiled code).

A result of the reference differs from the kernel's by round-off only (the suite checks
the two against each other); errors are the same (the same validation runs first, and a
state whose result is not finite is run through the kernel, whose status explains it).

Example::

    import kanedyn as kd
    from kanedyn.dynamics import first_calls

    first_calls.set_mode("compile")  # every call from here on runs the compiled kernels
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
import time

import numpy as np
from numpy.typing import NDArray

from ..model import Model

MODES = ("reference", "compile")
_ENV = "KANEDYN_FIRST_CALLS"


def _mode_from_env() -> str:
    mode = os.environ.get(_ENV, "reference") or "reference"
    if mode not in MODES:
        raise ValueError(f"{_ENV}={mode!r}: expected one of {', '.join(MODES)}")
    return mode


_mode = _mode_from_env()


def set_mode(mode: str) -> None:
    """``"reference"``: a call whose kernel is not compiled yet is answered by the
    reference while the kernel compiles in the background; ``"compile"``: it waits for
    the kernel (module doc)."""
    global _mode
    if mode not in MODES:
        raise ValueError(f"first_calls.set_mode({mode!r}): expected one of {', '.join(MODES)}")
    _mode = mode


def mode() -> str:
    """The current mode (:func:`set_mode`)."""
    return _mode


# --- the background compiler: a process --------------------------------------------
# A process, not a thread: numba compiles under one lock per process, so a thread
# compiling a kernel for a minute would hold up every other compilation the program needs
# meanwhile (a simulation's loop, say); a second process compiles beside it, into the same
# disk cache (numba writes each file under a temporary name and renames it), and this one
# loads what it finds there.

_done: set[str] = set()  # jobs readied in this process
_wanted: dict[str, int] = {}  # jobs asked for and not yet in the cache: key -> priority
_sent: set[str] = set()  # of those, the ones handed to the running or an ended compiler
_ended: set[str] = set()  # of those, the ones whose compiler ended (without them: failed)
_next_look: dict[str, float] = {}
_proc: subprocess.Popen | None = None
_proc_jobs: tuple[str, ...] = ()
_start = threading.Lock()  # (two threads' first calls start one compiler, not two)
#: seconds between two looks into the disk cache for a job that is being compiled
LOOK_EVERY = 0.2


def make(key: str) -> None:
    """Ready job ``key`` in this process — ``kernel:<name>``: kernel ``name`` of the
    entry-point table (:func:`kanedyn.dynamics.kernels.load`); ``c:<name>``: the C entry
    point ``name`` of ``kernels/entries.py`` with its single-state kernel; ``call:<module>:
    <function>``: that function, called without arguments (a compiled loop's first run
    on a small problem, which compiles it) — compiled, or loaded from numba's disk cache."""
    import importlib

    from .kernels import entries

    kind, _, name = key.partition(":")
    if kind == "kernel":
        entries.load(name)
    elif kind == "c":
        entries.c_entry(name)
    elif kind == "call":
        module, _, function = name.partition(":")
        getattr(importlib.import_module(module), function)()
    else:
        raise KeyError(f"no first_calls job {key!r}")


def in_cache(key: str) -> bool:
    """Whether job ``key`` is ready in this process or in numba's disk cache (reads the
    cache's index only)."""
    from .kernels import entries

    kind, _, name = key.partition(":")
    return entries.c_entry_in_cache(name) if kind == "c" else entries.in_cache(name)


def _poll() -> None:
    """Start a compiler process for the jobs wanted and not sent, once the last ended."""
    with _start:
        _poll_locked()


def _poll_locked() -> None:
    global _proc, _proc_jobs
    if _proc is not None:
        if _proc.poll() is None:
            return
        _ended.update(_proc_jobs)
        _proc, _proc_jobs = None, ()
    jobs = sorted((k for k in _wanted if k not in _sent), key=lambda k: _wanted[k])
    if not jobs:
        return
    env = dict(os.environ, KANEDYN_FIRST_CALLS="compile")
    _proc = subprocess.Popen([sys.executable, "-m", __name__, *jobs], env=env,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _proc_jobs = tuple(jobs)
    _sent.update(jobs)


@atexit.register
def _stop() -> None:
    # nothing keeps running after the program: the jobs the compiler finished are in the
    # cache, the one it was on is not (numba renames a file into place when it is whole)
    if _proc is not None and _proc.poll() is None:
        _proc.kill()


def loop_ready(loop, args: tuple, job: str) -> bool:
    """Whether the compiled loop ``loop`` (a numba dispatcher) is to be called with
    ``args`` now: yes when it is compiled for their types here or in the disk cache (or in
    the mode ``"compile"``, or once the job's compiler has ended: the call then compiles
    it, as before). Otherwise no — the caller takes its Python steps — and ``job``
    (``call:<module>:<function>``, see :func:`make`) is handed to a compiler process."""
    if _mode == "compile" or job in _done:
        return True
    from numba import typeof
    from numba.core.typing.typeof import Purpose

    types = tuple(typeof(a, Purpose.argument) for a in args)
    if types in loop.overloads:
        return True
    # (after the kernels a single call waits for, 0, and the batched ones, 1)
    return available(job, priority=2,
                     cached=lambda: in_disk_cache(loop._cache, types, loop.targetctx),
                     ready=lambda: None)


def available(key: str, priority: int = 0, request: bool = True, cached=None,
              ready=None) -> bool:
    """Whether the compiled code of job ``key`` (:func:`make`) can run now. In mode
    ``"compile"``, or when numba's disk cache holds it, it is readied here and the answer
    is yes. Otherwise (not when ``request`` is false, except in the mode ``"compile"``)
    it is handed to a compiler process (lower ``priority`` first), and the answer is no:
    the caller answers by the reference this time; a later call looks into the cache
    again (at most every :data:`LOOK_EVERY` s). A job whose compiler ended without it is
    readied here, so that its error, if any, is raised where it belongs. ``cached``,
    ``ready``: in place of :func:`in_cache` (``cached()``) and :func:`make` (``ready()``)
    of the key."""
    if key in _done:
        return True
    if _mode != "compile":
        now = time.monotonic()
        if key in _wanted and now < _next_look.get(key, 0.0):
            return False
        _next_look[key] = now + LOOK_EVERY
        if not (in_cache(key) if cached is None else cached()) and key not in _ended:
            if request:
                _wanted.setdefault(key, priority)
                _poll()
            return False
    make(key) if ready is None else ready()
    _done.add(key)
    _wanted.pop(key, None)
    return True


def wait(timeout: float | None = None) -> bool:
    """Block until the compiler processes have compiled every job asked for (or
    ``timeout`` seconds have passed): True when nothing is left."""
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        _poll()
        if _proc is None and all(k in _sent for k in _wanted):
            return True
        if end is not None and time.monotonic() >= end:
            return False
        time.sleep(0.05)


def compiled_or_cached(disp, sig) -> bool:
    """Whether the numba dispatcher ``disp``, compiled for the one signature ``sig``, is
    compiled in this process or loads from the disk cache (:func:`in_disk_cache`)."""
    return bool(disp.signatures) or in_disk_cache(disp._cache, sig, disp.targetctx)


def in_disk_cache(cache, sig, target_context) -> bool:
    """Whether numba's disk cache ``cache`` (a dispatcher's or cfunc's ``_cache``) has an
    entry for ``sig`` that would load: its key in an index stamped with today's sources
    (an index of other sources reads as empty). Reads the index only; loads nothing."""
    try:
        if not cache._enabled:
            return False
        key = cache._index_key(sig, target_context.codegen())
        return key in cache._cache_file._load_index()
    except (AttributeError, OSError, EOFError, ValueError):
        return False


# --- the reference answers ----------------------------------------------------------

def _normalised(model: Model, q: NDArray) -> NDArray:
    """q with each quaternion divided by its norm, as the kernels take it."""
    q = q.copy()
    for b in model.bodies:
        if b.joint.has_quaternion:
            qs = q[b.iq][b.joint.quaternion]  # (a view: slices of slices)
            qs /= np.linalg.norm(qs)
    return q


def reference(name: str, model: Model, Q: NDArray, X: list[NDArray], F: NDArray | None,
              out: NDArray) -> bool:
    """``out[k]`` = the reference's answer of the public function ``name`` (one of
    :data:`REFERENCE`) for state k of the validated batch ``Q``, ``X`` (the speed-sized
    inputs in the function's order), ``F`` (external forces or None). False when a
    result is not finite (the caller then runs the kernel, whose status explains it)."""
    from . import reference as ref

    zero = np.zeros(model.nv)
    with np.errstate(all="ignore"):
        for k in range(Q.shape[0]):
            q = _normalised(model, Q[k])
            f = None if F is None else F[k]
            if name == "rnea":
                out[k] = ref.rnea(model, q, X[0][k], X[1][k], f)
            elif name == "nonlinear_effects":
                out[k] = ref.rnea(model, q, X[0][k], zero)
            elif name == "gravity_torques":
                out[k] = ref.rnea(model, q, zero, zero)
            elif name == "crba":
                out[k] = ref.crba(model, q)
            elif name == "aba":
                try:
                    out[k] = ref.aba(model, q, X[0][k], X[1][k], f)
                except np.linalg.LinAlgError:  # a joint that moves no inertia
                    return False
            else:
                raise KeyError(f"no reference for {name!r}")
    return bool(np.isfinite(out).all())


#: the public functions answered by the reference on a first call
REFERENCE = ("rnea", "nonlinear_effects", "gravity_torques", "crba", "aba")


def _compile(jobs: list[str]) -> None:
    """The compiler process's work: each job in turn, after taking a lock file shared by
    every compiler of this cache (the workers of a sweep each start one on a cold cache:
    one compiles, the others wait and then load what it wrote)."""
    import hashlib
    import tempfile

    from numba.core import config

    where = config.CACHE_DIR or os.path.dirname(os.path.abspath(__file__))
    name = "kanedyn-first-calls-" + hashlib.sha256(where.encode()).hexdigest()[:16] + ".lock"
    with open(os.path.join(tempfile.gettempdir(), name), "a") as lock:
        try:
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:  # (not POSIX: no lock, each compiler on its own)
            pass
        for key in jobs:
            make(key)


if __name__ == "__main__":  # the compiler process: python -m kanedyn.dynamics.first_calls job...
    _compile(sys.argv[1:])
