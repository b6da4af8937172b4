"""Sphinx configuration of kanedyn's documentation: the hand-written guide (the Markdown
pages beside this file, read by MyST), the notebooks of ``examples/notebooks`` (through
the ``notebooks`` link to that folder) and the API reference generated from the
docstrings (autodoc, with napoleon for the NumPy/Google-style sections).

``make docs`` builds it into ``docs/_build/html`` with warnings as errors and
nitpicky cross-references (``-W -n``), so a broken reference fails the build; the
notebooks are rendered as stored (no outputs) unless ``KANEDYN_DOCS_EXECUTE=auto``.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from pathlib import Path

import kanedyn

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "kanedyn"
author = "kanedyn developers"
release = version = kanedyn.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "myst_nb",  # MyST Markdown for the guide, and the notebooks
    "kanedyn_api",  # the reference pages, from each public module's __all__
]

root_doc = "index"
exclude_patterns = ["_build", "**/.ipynb_checkpoints"]


# the guide's links to headings (cli.md#scenario-files) are to these generated anchors
myst_heading_anchors = 3
myst_enable_extensions = ["dollarmath"]

# notebooks: executed by the test suite (tests/examples/test_notebooks.py); the docs
# render them as stored unless asked to run them
nb_execution_mode = os.environ.get("KANEDYN_DOCS_EXECUTE", "off")
nb_execution_timeout = 600
nb_execution_raise_on_error = True

# API reference
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the signatures show the hints; the prose says what they mean
autodoc_default_options = {"members": True, "show-inheritance": False}
napoleon_google_docstring = True
napoleon_numpy_docstring = True
# the Parameters sections give "name : what it is" in words, not a type to link to
napoleon_use_param = False
napoleon_use_rtype = False
napoleon_use_ivar = True

# every reference must resolve; these are the outside libraries' names that the
# docstrings and hints mention, with no inventory to resolve them against (the build is
# offline)
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|scipy|sympy|sp|pandas|pd|matplotlib|distributed|dask)(\..*)?"),
    (r"py:.*", r"(NDArray|ArrayLike|Path|os\.PathLike|Callable|Sequence|Mapping|Any)"),
]

html_theme = "alabaster"
html_title = f"kanedyn {release}"


# --- the docstrings' plain-text conventions --------------------------------------------
# |v| is an absolute value or a norm, never a reST substitution: escape the bars outside
# inline literals before napoleon and docutils read them
_LITERAL = re.compile(r"(``.+?``)")
_IDENTIFIER = re.compile(r"^[A-Za-z_][\w.]*(\[[\w., ]*\])?( \| None)?$")


_SECTION = re.compile(r"^\s*(Parameters|Attributes|Returns|Other Parameters|Raises|Yields)\s*$")
_ENTRY = re.compile(r"^(\s*)([\w*][\w*, ]*?) : (.*)$")


def _plain_text(app, what, name, obj, options, lines):
    """The docstrings' conventions, made reST before napoleon reads them:

    * ``|v|`` is an absolute value or a norm, never a substitution: the bars outside
      inline literals are escaped;
    * an entry of a NumPy-style section is ``name : what it is`` in words, not a type to
      link to: the words go on the next line, as the description of ``name``.
    """
    out, section, indent, kind = [], False, None, ""
    for i, line in enumerate(lines):
        if "|" in line:
            parts = _LITERAL.split(line)
            line = "".join(p if p.startswith("``") else p.replace("|", "\\|") for p in parts)
        if _SECTION.match(line) and i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}:
            section, indent = True, len(line) - len(line.lstrip())
            kind = line.strip()
        elif section and line.strip() and len(line) - len(line.lstrip()) < indent:
            section = False
        m = _ENTRY.match(line) if section else None
        if m and len(m.group(1)) == indent:
            names = m.group(2)
            if kind == "Attributes":  # ":ivar q, u:" would read as type "q," of "u"
                names = names.replace(", ", ",")
            out += [f"{m.group(1)}{names}", f"{m.group(1)}    {m.group(3)}"]
        else:
            out.append(line)
    lines[:] = out


def _attribute_sentences(app, what, name, obj, options, lines):
    """A property's docstring that opens "True if ...: ..." is a sentence, not napoleon's
    "type: description": put the words back in front of the description."""
    if what not in ("attribute", "property"):
        return
    for i, line in enumerate(lines):
        if line.startswith(":type: ") and not _IDENTIFIER.match(line[7:].strip()):
            words = line[7:].strip()
            del lines[i]
            lines[0] = f"{words}: {lines[0]}" if lines and lines[0] else words
            break


_MISSING = object()


def _lookup(target: str, module: str | None, cls: str | None, homes: tuple = ()) -> object:
    """The Python object a reference names, as Python would find it from the docstring's
    module (and class) or from the modules ``homes`` (where the documented object was
    defined), or _MISSING."""
    target = target.lstrip("~.")
    for name in filter(None, [f"{module}.{cls}.{target}" if module and cls else None,
                              f"{module}.{target}" if module else None, target,
                              *(f"{home}.{target}" for home in homes),
                              # a sibling module named without its package
                              *(f"{m.rpartition('.')[0]}.{target}"
                                for m in (module, *homes) if m and "." in m)]):
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            try:
                for attr in parts[i:]:
                    obj = _attribute(obj, attr)
            except AttributeError:
                break
            return obj
    return _MISSING


def _attribute(obj: object, attr: str) -> object:
    """``getattr``, except that an attribute a class declares by annotation (a dataclass
    field: the class holds its default, or nothing with a default factory) is that
    declaration, which belongs to the class's module."""
    if isinstance(obj, type):
        for klass in obj.__mro__:
            if attr in getattr(klass, "__annotations__", {}):
                return _Declared(klass.__module__)
    return getattr(obj, attr)


class _Declared:
    """An attribute that a class declares (annotates) but does not hold itself."""

    def __init__(self, module: str):
        self.__module__ = module


def _documented_as(env) -> dict[int, tuple[str, str, str]]:
    """id(object) -> (full name, docname, anchor) of every object the reference describes."""
    cache = getattr(env, "_kanedyn_documented", None)
    if cache is None:
        cache = {}
        for name, entry in env.get_domain("py").objects.items():
            if entry.aliased:
                continue
            obj = _lookup(name, None, None)
            # a declaration is made anew at each look-up: its id would not stay its own
            if obj is not _MISSING and not isinstance(obj, _Declared):
                cache.setdefault(id(obj), (name, entry.docname, entry.node_id))
        env._kanedyn_documented = cache
    return cache


def _defining_modules(node) -> tuple[str, ...]:
    """The modules that define the objects whose description holds ``node`` (innermost
    first): a docstring's names are those of the module it was written in, wherever the
    object is documented (kanedyn.load_urdf is written in kanedyn.model.urdf)."""
    from sphinx import addnodes

    homes = []
    parent = node.parent
    while parent is not None:
        if isinstance(parent, addnodes.desc):
            for sig in parent.findall(addnodes.desc_signature):
                obj = _lookup(sig.get("fullname", ""), sig.get("module"), None)
                home = getattr(obj, "__module__", None)
                if home:
                    homes.append(home)
                break
        parent = parent.parent
    return tuple(homes)


def _resolve_by_object(app, env, node, contnode):
    """A reference that Sphinx cannot resolve by name but that names a real kanedyn object:
    linked to where that object is described (``kanedyn.rnea`` is described as
    ``kanedyn.rnea``, a docstring of kanedyn.dynamics may say ``:func:`rnea```), or, for
    an object the reference leaves out (a kernel module, a private helper), shown as code.
    A reference to nothing stays a warning, which fails the build."""
    if node.get("refdomain") != "py":
        return None
    obj = _lookup(node["reftarget"], node.get("py:module"), node.get("py:class"),
                  _defining_modules(node))
    if obj is _MISSING:
        return None
    if not (getattr(obj, "__module__", None) or getattr(obj, "__name__", "")).startswith(
            "kanedyn") and not isinstance(obj, (tuple, dict)):
        return None
    from sphinx.util.nodes import make_refnode

    hit = _documented_as(env).get(id(obj))
    if hit is None:
        return contnode
    name, docname, anchor = hit
    return make_refnode(app.builder, node["refdoc"], docname, anchor, contnode, name)


def setup(app):
    app.connect("missing-reference", _resolve_by_object)
    app.connect("autodoc-process-docstring", _plain_text, priority=100)
    app.connect("autodoc-process-docstring", _attribute_sentences, priority=900)
