"""Code generation for :class:`~kanedyn.kane.EquationsOfMotion`: numpy, numba and C.

The last steps of the Kane pipeline, data → pure functions → frozen equations →
compiled system, one module a stage:

- ``lowering.py``: the equations → straight-line definitions (parameters folded in,
  one CSE over all outputs, copies and single uses removed, a deterministic order);
- ``printers.py``: those definitions → numpy, numba or C99 source, with the
  interface every backend shares (functions, output arrays, status codes, the
  input checks); ``numba_ir.py``: what the generated numba modules import to turn
  their programs into LLVM IR (a numba intrinsic);
- ``build.py``: the cache of generated code, the C compiler, cffi, loading; and
  ``to_c``, the standalone C file;
- ``runtime.py``: :class:`CompiledSystem`, the system protocol of DESIGN.md over
  the loaded functions, and :func:`compile_eom` that runs the stages;
- ``latex.py``: the equations as LaTeX (beside the pipeline, for reading them).
"""

from .build import cache_dir, find_c_compiler, to_c
from .latex import to_latex
from .lowering import Lowered, lower, operation_count
from .printers import QUAT_TOL, c_declarations, c_source, python_source
from .runtime import BACKENDS, CompiledSystem, compile_eom

__all__ = [
    "BACKENDS",
    "QUAT_TOL",
    "CompiledSystem",
    "Lowered",
    "c_declarations",
    "c_source",
    "cache_dir",
    "compile_eom",
    "find_c_compiler",
    "lower",
    "operation_count",
    "python_source",
    "to_c",
    "to_latex",
]
