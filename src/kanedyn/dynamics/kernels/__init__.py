"""numba kernels of the recursive algorithms, on the flat model of :mod:`..flat`.

The same algorithms as :mod:`kanedyn.dynamics.reference` (Featherstone 2008: RNEA
Table 5.1, CRBA Table 6.2, ABA Table 7.1), written for speed. One file per part:

=================  ==================================================================
``constants``      the status codes, the packed buffer's workspace size (the flat
                   layout itself: :mod:`kanedyn.dynamics.layout`)
``joint_rows``     the per-joint primitives: ``X_up = X_J(q) X_tree``, the motion
                   subspace S (a column, ``S x``, ``Sᵀ f``), cos and sin of all angles
                   at once; their lane forms
``spatial_rows``   spatial algebra on rows: transforms as (E, r), inertias as their
                   parameters (m, h, Ī), packed symmetric 6x6 matrices
``lanes``          several states at once: the stack blocks, the batch task size
``rnea``           inverse dynamics (Table 5.1): core, lane form, batch, entry points
``crba``           the joint-space inertia matrix (Table 6.2)
``aba``            forward dynamics (Table 7.1), in world coordinates
``kinematics``     body poses and velocities, energies and momentum, Jacobians
``entries``        the table of entry points (:data:`ENTRIES`), the C entry points,
                   compilation on first use (:func:`ready`, :func:`entry`)
=================  ==================================================================

How they are written:

- every Plücker transform is kept as (E, r), ``X = [E 0; -E r× E]``, and
  applied in that form (a 6x6 matrix is never built);
- rigid-body inertias are their 10 parameters (m, h = m c, Ī) and are moved
  with the (E, r) formula of Xᵀ I X (Featherstone 2008, Table 2.5);
- RNEA and CRBA work in body coordinates, as the book; ABA works in world
  coordinates, where articulated inertias pass to the parent by a plain sum
  instead of a 6x6 congruence per body (the quantities are the same, only their
  coordinates differ; the tests compare with the body-frame reference); they are
  symmetric and kept packed (21 entries), and a free root joint is solved directly;
- the algorithms proper (``rnea_core``, ``crba_core``, ``aba_core``) allocate
  nothing: the single-state entry points (``rnea_f`` etc.) carve their workspace
  out of the model's packed buffer, the batched kernels allocate one per task of
  :data:`BATCH_TASK` states, ``*_into`` one per call (for other compiled code);
  the loops are explicit, no BLAS on tiny matrices;
- the batched kernels run :data:`LANES` states at once through the same arithmetic,
  vectorised across the states (``rnea_lanes``, ``crba_lanes``, ``aba_lanes``; see
  :mod:`.lanes`), with the per-state bits;
- joints whose motion subspace is a unit vector e_k (revolute or prismatic about
  a coordinate axis, flat column ``SIDX``) skip the products with S: ``Sᵀ f`` is
  ``f[k]``, ``I S`` a column of I, ``v × S q̇`` four products;
- CRBA takes the cos and sin of all joint angles in one vectorised polynomial loop
  (:func:`sincos`, 1-2 ulp of libm) instead of a libm call per joint; RNEA and ABA
  still call libm (their results are libm's bits);
- the small helpers are compiled with ``_nrt=False``: they allocate nothing,
  and without it numba reference-counts every array argument of every call
  (atomic operations that cost ~30 ns per helper call, more than the arithmetic);
  the ones LLVM would not inline by itself (joint_transform, motion_subspace_times,
  motion_subspace_transpose_times, compose, inertia_to_parent_add: calls with ~25
  scalar arguments each) are ``forceinline``; so are ``crba_core`` and ``aba_core``
  themselves, into their entry points (a call passing six to fourteen array structs
  member by member: CRBA 2-12 %, ABA on the small robots 3-8 % faster; RNEA gained
  nothing). Inlining works across the files of the package as within one.

Every kernel returns a status: 0 ok, ``i + 1`` the quaternion of body i is
not of unit norm, :data:`BAD_SHAPE` an input has the wrong length,
:data:`NOT_FINITE` the result is not finite, ``SINGULAR - i`` (ABA) joint i moves
no inertia: a pivot of its ``D_i = S_iᵀ I^A_i S_i + armature_i 1`` is at most the
model's ``SINGTOL`` (so nothing is divided by zero).

Armature (``ARMATURE``, a rotor inertia per joint, added to M's diagonal at each of
the joint's speeds): RNEA adds ``armature ⊙ a`` to τ, CRBA adds it to M's diagonal, ABA
to ``D_i`` — exact, as the rotor's inertia acts on the joint's own speeds only
(τ_i = S_iᵀ f_i + armature_i q̈_i), so the book's derivation of Table 7.1 goes through
with ``D_i`` so augmented; the kinetic energy gains ``½ Σ armature v²``. The Python wrappers turn a
non-zero status into a :class:`~kanedyn.StateError` naming the culprit.

The single-state entry points write their workspace into the buffer they are given,
which is a :class:`~kanedyn.dynamics.data.Data`'s (one per thread by default), never
the Model's; so they are compiled ``nogil=True`` (as are the ``*1`` and batch kernels)
and threads on different states run them at once. Compiled code that calls the algorithms (batches,
compiled integrators) uses the ``*_into`` functions, which allocate, or ``*1``.

Spatial vectors are rows of (n, 6) arrays. ``fastmath`` is off: the kernels
must agree with the reference implementation to rounding.

numba keys the disk cache of a function by its own file; every file here calls
``_compiled.key_cache`` after its imports, so that the cache of, say, ``rnea.py`` is
also keyed by the layout and by the sources of ``joint_rows.py`` and ``spatial_rows.py``
that it compiles in (see :mod:`kanedyn.dynamics._compiled`): a change to a helper
recompiles the algorithms that inline it, as a change to the one file did when they were
one.
"""

from __future__ import annotations

# the names other modules use as kernels.X: the entry-point table and its loaders, the
# algorithms and helpers that other compiled code calls (the energy and derivative
# kernels, the compiled integrators, sim/batch.py, bench/), and what the tests look at
from .. import _compiled
from .aba import (  # noqa: F401
    ABA_LANE_BODIES,
    aba1,
    aba_core,
    aba_into,
    aba_lanes_fit,
    aba_workspace,
)
from .constants import BAD_SHAPE, NOT_FINITE, SINGULAR, workspace_size  # noqa: F401
from .crba import crba1, crba_core, crba_into  # noqa: F401
from .entries import (  # noqa: F401
    ENTRIES,
    SIGNATURES,
    Entry,
    c_address,
    c_entry,
    entry,
    load,
    ready,
)
from .joint_rows import (  # noqa: F401
    SINCOS_BIG,
    SINCOS_MIN,
    joint_transform,
    motion_subspace_column,
    motion_subspace_times,
    sincos,
)
from .kinematics import jacobian_into, kinematics_into, summary_into  # noqa: F401
from .lanes import BATCH_TASK, LANE_BODIES, LANES, stack_array  # noqa: F401
from .rnea import rnea1, rnea_batch, rnea_core, rnea_into, rnea_lanes  # noqa: F401

# a module that compiles in code of the package through ``kernels.X`` (the energy and
# derivative kernels, the compiled integrators, sim/batch.py) depends on this file: its
# compile key is then this one's, which covers every file above (_compiled.py)
_compiled.key_cache(__name__)
