"""Unit tests of the rewrite's passes: build a model from a `forward`'s source and compare the program
after one pass (rewrite.PASS_NAMES) with the text expected, as `dycl convert --dump-after PASS` shows it."""
from __future__ import annotations

import importlib.util
import itertools
import os
import tempfile
import textwrap

import torch

from rewrite import rewrite_model

__all__ = ["DEFAULT_INIT", "model_from", "program_after", "assert_host"]

# Modules and settings a test's forward may use.
DEFAULT_INIT = """
self.lin = nn.Linear(4, 4)
self.gate = nn.Linear(4, 1)
self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
self.use_bias = True
self.depth = 2
"""

_TEMPLATE = """import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
{init}

{methods}
"""

_DIR = tempfile.mkdtemp(prefix="dycl-pass-tests-")
_COUNT = itertools.count()


def model_from(methods: str, init: str = DEFAULT_INIT) -> torch.nn.Module:
    """An instance of a model class whose `__init__` runs `init` and whose body is `methods` (`forward`
    and any helpers), both written at column 0. The class lives in a real file, as dycl needs."""
    source = _TEMPLATE.format(init=textwrap.indent(textwrap.dedent(init).strip(), " " * 8),
                              methods=textwrap.indent(textwrap.dedent(methods).strip(), " " * 4))
    name = f"pass_model_{next(_COUNT)}"
    path = os.path.join(_DIR, name + ".py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    return module.Model().eval()


def program_after(step: str, methods: str, *, init: str = DEFAULT_INIT, inputs: tuple | None = None,
                  fixed: dict[str, bool] | None = None) -> str:
    """The program as it stands after rewrite pass `step` (its last run), as text."""
    seen: dict[str, str] = {}

    def on_pass(name, state):
        seen[name] = state.dump()

    model = model_from(methods, init)
    rewrite_model(model, inputs if inputs is not None else (torch.randn(2, 4),), fixed, on_pass=on_pass)
    return seen[step]


def assert_host(methods: str, expected: str, *, after: str = "liveness", **kwargs) -> None:
    """The program after pass `after` reads exactly `expected` (indentation of both normalised)."""
    got = program_after(after, methods, **kwargs).strip()
    want = textwrap.dedent(expected).strip()
    assert got == want, f"after {after}, got:\n{got}\n\nexpected:\n{want}"
