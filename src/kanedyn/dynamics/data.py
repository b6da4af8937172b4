"""Model / Data: the scratch space of the compiled algorithms, one per thread.

A :class:`~kanedyn.model.Model` is read-only: no algorithm writes into anything
reachable from it. What the single-state kernels write — the workspace of RNEA, CRBA,
ABA, the centroidal and joint-wrench kernels (after the flat model in one buffer, see
:mod:`.flat`) and the per-frame arrays of the frame functions (flat model, frame,
workspace, see :func:`.frames_kernel.frame_params`) — lives in a :class:`Data`, made
from the Model and sized from it, as Pinocchio's ``model.createData()``.

Every numeric function takes ``data=``. Without it, the calling thread's default Data
of that model is used: one per (model, thread), made on the thread's first call, so
that threads calling the same Model on different states never share scratch space. The
default of the thread that first called is found with one attribute read and one
comparison of thread idents (:class:`.flat._Hot`), which keeps the hot path as cheap as
before; the others with one dict lookup more (:func:`data_of`). A Data may be passed
to one thread at a time; two threads that share one Data race.

The batched kernels allocate a workspace per task themselves, and the kernels that
return fresh arrays (kinematics, Jacobians, energy, derivatives) write only into those:
they accept ``data=`` (and check that it is a Data of the model) for a uniform
signature.
"""

from __future__ import annotations

import threading
import weakref

from numpy.typing import NDArray

from ..errors import ModelError
from ..model import Model
from .flat import HOT, _Hot, flatten

_ident = threading.get_ident
#: the attribute of a Model that holds the frame arrays of its owner thread's Data
FRAMES = "_kd_frames"
#: ``owner`` of a Data that is no thread's default on the Model's hot tuple
NO_OWNER = -1


class _Frames(dict):
    """``frame -> (P, (6, nv), owner)``: the frame's array P (flat model, placement,
    body, workspace; :func:`~.frames_kernel.frame_params`) of one Data, the Jacobian's
    shape, and the ident of the thread whose default Data it is (:data:`NO_OWNER`
    otherwise). The owner thread's is also kept on the Model itself (attribute
    :data:`FRAMES`, one attribute read: the cheapest lookup; the C front end takes P
    from it when the calling thread is the owner). A copy or a pickle of the Model does
    not carry it (it reduces to an empty one)."""

    __slots__ = ()

    def __reduce__(self):
        return (_Frames, ())


class Data:
    """Scratch space of the compiled algorithms for one model, for one thread at a time.

    ``kd.Data(model)`` is sized from ``model``: a copy of its packed buffer (header,
    flat model, the workspace of the largest single-state kernel) and the per-frame
    arrays, made on first use of each frame. Pass it as ``data=`` to any numeric
    function of that model (``kd.rnea(model, q, v, a, data=d)``); a Data of another
    model is refused (:class:`~kanedyn.ModelError`). Results are returned as arrays
    (or written into ``out=``), not kept here.
    """

    __slots__ = ("buf", "nv", "frames", "owner", "_model", "_model_name", "__weakref__")

    def __init__(self, model: Model, *, _owner: int = NO_OWNER) -> None:
        fm = flatten(model)  # (ModelError if model is not a Model)
        self.buf: NDArray = fm.buf.copy()  # (writeable: the template is not)
        self.nv = fm.nv
        self.frames = _Frames()
        self.owner = _owner
        self._model = weakref.ref(model)
        self._model_name = getattr(model, "name", "?")

    @property
    def model(self) -> Model | None:
        """The Model this Data belongs to (None once it has been collected)."""
        return self._model()

    def __repr__(self) -> str:
        return f"<kanedyn Data of model {self._model_name!r}, {self.buf.size} floats>"

    def __reduce__(self):
        raise TypeError("a kanedyn Data is scratch space of one Model in one process; make "
                        "a new one with kd.Data(model) instead of copying or pickling it")


def attach(model: Model) -> _Hot:
    """Make the calling thread's default Data of ``model`` the Model's hot one (its
    buffer, its frames): the first call on a Model, or on a deep copy or unpickled one,
    whose hot tuple is empty."""
    flatten(model)
    owner = _ident()
    d = Data(model, _owner=owner)
    hot = _Hot((d.buf, d.nv, (d.nv, d.nv), owner, {owner: d}))
    # the Model is a frozen dataclass: its fields are untouched, these are caches
    object.__setattr__(model, HOT, hot)
    object.__setattr__(model, FRAMES, d.frames)
    return hot


def data_of(model: Model, data: Data | None) -> Data:
    """``data`` after checking it belongs to ``model``, or (None) the calling thread's
    default Data of ``model``."""
    hot = getattr(model, HOT, ())
    if len(hot) != 5:
        hot = attach(model)
    if data is None:
        per_thread = hot[4]
        tid = _ident()
        d = per_thread.get(tid)
        if d is None:
            # (a dict store is atomic under the GIL; a recycled ident reuses the Data of
            # a thread that has ended, which no one else uses)
            d = per_thread[tid] = Data(model)
        return d
    if type(data) is not Data:
        raise TypeError(f"data= must be a kanedyn Data (kd.Data(model)), got "
                        f"{type(data).__name__}")
    if data._model() is not model:
        other = data._model()
        raise ModelError(
            f"data= belongs to model {data._model_name!r}"
            + (" (since collected)" if other is None else f" (id {id(other):#x})")
            + f", not to model {getattr(model, 'name', '?')!r} (id {id(model):#x}) it was "
            "passed with; make one with kd.Data(model)")
    return data


def buffer_of(model: Model, data: Data | None) -> NDArray:
    """The packed buffer a single-state kernel writes into: that of ``data`` (checked),
    or of the calling thread's default Data."""
    return data_of(model, data).buf
