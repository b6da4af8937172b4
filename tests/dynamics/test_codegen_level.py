"""KANEDYN_CODEGEN_OPT (kanedyn._codegen): the level reaches the target machines llvmlite
makes, a bad value is refused by name, unset changes nothing."""

from __future__ import annotations

import llvmlite.binding as ll
import pytest

from kanedyn import _codegen


@pytest.fixture
def recorded(monkeypatch):
    """llvmlite's create_target_machine replaced by one that records its opt argument."""
    seen = []
    original = getattr(ll.Target.create_target_machine, "__wrapped__",
                       ll.Target.create_target_machine)

    def record(self, *args, **kwargs):
        seen.append(kwargs.get("opt"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ll.Target, "create_target_machine", record)
    return seen


def test_the_level_reaches_the_target_machine(recorded):
    assert _codegen.set_codegen_level("2") == 2
    ll.Target.from_default_triple().create_target_machine(opt=3)
    assert recorded == [2]


def test_unset_leaves_llvmlite_alone(recorded, monkeypatch):
    monkeypatch.delenv(_codegen.ENV, raising=False)
    assert _codegen.set_codegen_level() is None
    ll.Target.from_default_triple().create_target_machine(opt=3)
    assert recorded == [3]


@pytest.mark.parametrize("bad", ["fast", "4", "-1"])
def test_a_bad_level_is_refused_by_name(recorded, bad):
    with pytest.raises(ValueError, match=f"KANEDYN_CODEGEN_OPT='{bad}'"):
        _codegen.set_codegen_level(bad)


# --- one specialisation per argument type (share_specialisations) ---------------------
PROBE = """
import numba as nb

@nb.njit
def callee(flag, x):
    return x + 1.0 if flag else x

@nb.njit
def caller(x):
    return callee(True, x) + callee(False, x)
"""


def _probe(module: str):
    """``caller`` and ``callee`` of PROBE as if defined in ``module``; caller compiled."""
    ns = {"__name__": module}
    exec(compile(PROBE, f"<{module}>", "exec"), ns)
    assert ns["caller"](1.0) == 3.0
    return ns["callee"]


def test_kanedyns_functions_are_compiled_once_for_both_constants():
    """A kanedyn function called from compiled code with the constants True and False is
    compiled once, for bool; another package's keeps numba's rule, one version a literal
    (the control: without the rule the first count would be 2 too)."""
    assert _codegen.share_specialisations()
    ours = _probe("kanedyn._probe").signatures
    assert [str(s[0]) for s in ours] == ["bool"]
    theirs = _probe("elsewhere._probe").signatures
    assert sorted(str(s[0]) for s in theirs) == ["Literal[bool](False)",
                                                   "Literal[bool](True)"]


def test_literal_calls_can_be_kept(tmp_path):
    """KANEDYN_LITERAL_CALLS=1 at import keeps numba's rule for kanedyn's functions too."""
    import json
    import os
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import json
        import kanedyn
        from kanedyn import _codegen
        ns = {{"__name__": "kanedyn._probe"}}
        exec({PROBE!r}, ns)
        ns["caller"](1.0)
        print(json.dumps([_codegen.share_specialisations(),
                          sorted(str(s[0]) for s in ns["callee"].signatures)]))
    """)
    env = dict(os.environ, KANEDYN_LITERAL_CALLS="1", NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    shared, sigs = json.loads(out.stdout.strip().splitlines()[-1])
    assert shared is False
    assert sigs == ["Literal[bool](False)", "Literal[bool](True)"]
