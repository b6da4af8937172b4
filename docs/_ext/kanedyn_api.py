"""The ``kanedyn-api`` directive: the API reference of one public module, made from its
``__all__`` so that a name added there is documented without editing a page.

``.. kanedyn-api:: kanedyn.friction`` gives the module's docstring, then one autodoc
entry per name of ``__all__`` in that order: functions, classes (with their public
members) and exceptions where they are; module-level data from the submodule that
assigns it with a ``#:`` comment (the only place autodoc finds such a comment);
modules named in ``__all__`` as a link to their own page, or their members where they
have none. A name of a subpackage that is the very object ``kanedyn`` exports under the
same name is listed as a link to that entry, so no object is described twice.

:func:`public_names` is the list the test of the reference checks against.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

#: the modules whose ``__all__`` is the public API, each with a page under docs/api
PUBLIC_MODULES = ("kanedyn", "kanedyn.spatial", "kanedyn.model", "kanedyn.dynamics",
                  "kanedyn.kane", "kanedyn.constraints", "kanedyn.integrators",
                  "kanedyn.friction", "kanedyn.forces", "kanedyn.identify", "kanedyn.sim",
                  "kanedyn.verify", "kanedyn.viz")


def public_names() -> list[tuple[str, str, object]]:
    """(module, name, object) for every name of every public module's ``__all__``."""
    out = []
    for mod_name in PUBLIC_MODULES:
        mod = importlib.import_module(mod_name)
        out += [(mod_name, name, getattr(mod, name)) for name in mod.__all__]
    return out


def data_home(package: ModuleType, name: str) -> str | None:
    """The module under ``package`` that assigns ``name`` with a ``#:`` doc comment."""
    from sphinx.pycode import ModuleAnalyzer

    names = [package.__name__]
    if hasattr(package, "__path__"):
        names += [m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    for mod_name in names:
        try:
            docs = ModuleAnalyzer.for_module(mod_name).find_attr_docs()
        except Exception:  # a compiled module has no source to read
            continue
        if ("", name) in docs and any(line.strip() for line in docs[("", name)]):
            return mod_name
    return None


def _same_as_top_level(mod_name: str, name: str, obj: object) -> bool:
    import kanedyn

    return (mod_name != "kanedyn" and name in kanedyn.__all__
            and getattr(kanedyn, name) is obj)


def entry(mod_name: str, name: str, obj: object) -> list[str]:
    """The reST lines documenting ``mod_name.name``."""
    full = f"{mod_name}.{name}"
    if _same_as_top_level(mod_name, name, obj):
        role = "class" if isinstance(obj, type) else "func"
        return [f"* ``{full}`` is :{role}:`kanedyn.{name}`", ""]
    if inspect.ismodule(obj):
        if obj.__name__ in PUBLIC_MODULES:
            return [f"* :mod:`{obj.__name__}` (its own page)", ""]
        return [f".. automodule:: {obj.__name__}", "   :members:", ""]
    if isinstance(obj, type) and issubclass(obj, BaseException):
        return [f".. autoexception:: {full}", ""]
    if isinstance(obj, type):
        return [f".. autoclass:: {full}", "   :members:", ""]
    if callable(obj):
        return [f".. autofunction:: {full}", ""]
    home = data_home(importlib.import_module(mod_name), name)
    if home is None:  # undocumented data: autodoc would warn nothing, so say it here
        raise ValueError(f"{full} is public data with no '#:' comment where it is assigned")
    return [f".. autodata:: {home}.{name}", "   :no-value:", ""]


class KanedynApi(SphinxDirective):
    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        mod_name = self.arguments[0]
        mod = importlib.import_module(mod_name)
        lines = [f".. automodule:: {mod_name}", "   :no-members:", ""]
        links = [entry(mod_name, n, getattr(mod, n)) for n in mod.__all__]
        bullets = [e for e in links if e[0].startswith("* ")]
        if bullets:
            lines += ["Described elsewhere:", ""] + [line for e in bullets for line in e]
        lines += [line for e in links if not e[0].startswith("* ") for line in e]
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source=f"<{mod_name}>"), node)
        return node.children


def setup(app):
    app.add_directive("kanedyn-api", KanedynApi)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
