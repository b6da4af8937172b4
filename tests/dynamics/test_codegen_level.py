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
