"""rewrite/verify.py: the program's invariants, checked after each pass, catch a broken program."""
import os

import libcst as cst
import pytest

from conftest import MODELS
from dycl.modelfile import load_model_file
from rewrite import rewrite_model
from rewrite.cfg import If, Loop, RegionCall, host_nodes
from rewrite.kinds import DecisionClass, LoopKind
from rewrite.verify import InvalidProgram, verify


def _program(name: str):
    spec = load_model_file(os.path.join(MODELS, name))
    return rewrite_model(spec.model, spec.inputs)


def _broken(program, why: str) -> str:
    with pytest.raises(InvalidProgram) as err:
        verify(program)
    assert why in str(err.value), str(err.value)
    return str(err.value)


def test_a_rewritten_program_is_valid():
    for name in ("golden_gated.py", "c_while_continue.py", "c_for_break_decoder.py"):
        program = _program(name)
        verify(program)
        assert program.decisions and all(isinstance(d.dclass, DecisionClass) for d in program.decisions)


def test_a_region_input_nothing_binds():
    program = _program("golden_gated.py")
    region = program.regions[-1]
    region.inputs = region.inputs + ["ghost"]
    _broken(program, f"region {region.name} reads ghost before the host binds it")


def test_a_region_input_bound_only_later():
    program = _program("golden_gated.py")
    first, last = program.regions[0], program.regions[-1]
    first.inputs = first.inputs + [last.outputs[0] + "_later"]
    last.outputs = last.outputs + [last.outputs[0] + "_later"]
    _broken(program, f"region {first.name} reads {last.outputs[-1]} before the host binds it")


def test_duplicate_region_names_and_decision_ids():
    program = _program("golden_gated.py")
    program.regions[1].name = program.regions[0].name
    program.decisions[1].decision = program.decisions[0].decision
    text = _broken(program, f"region name {program.regions[0].name} used more than once")
    assert f"decision id {program.decisions[0].decision} used more than once" in text


def test_a_decision_without_a_class():
    program = _program("golden_gated.py")
    program.decisions[0].dclass = "value"  # a string, as before the enums
    _broken(program, f"decision {program.decisions[0].decision} has no host decision class ('value')")


def test_lists_that_disagree_with_the_tree():
    program = _program("golden_gated.py")
    program.regions = program.regions[1:]
    program.decisions = program.decisions + [If(cst.Name("g"), [], [], program.source, "L99", DecisionClass.VALUE)]
    text = _broken(program, "program.regions")
    assert "program.decisions" in text


def test_a_region_called_twice():
    program = _program("golden_gated.py")
    program.body.append(RegionCall(program.regions[0]))
    _broken(program, "called more than once")


def test_malformed_loops():
    program = _program("c_while_continue.py")
    loop = next(n for n in host_nodes(program.body) if isinstance(n, Loop))
    assert loop.kind == LoopKind.WHILE
    loop.test = None
    _broken(program, f"while loop {loop.decision} lacks its test")
    loop.kind = "until"
    _broken(program, f"loop {loop.decision} has no LoopKind")


def test_a_loop_body_may_read_what_a_later_iteration_binds():
    """`h` computed at the end of the body is an input at its start from the second iteration on."""
    program = _program("c_while_continue.py")
    verify(program)
    loop = next(n for n in host_nodes(program.body) if isinstance(n, Loop))
    assert any(isinstance(n, RegionCall) for n in loop.body)
