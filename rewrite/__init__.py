"""rewrite: from a model's `forward` to a host tree of decisions and compiled regions (see passes.py)."""
from __future__ import annotations

from typing import Callable

from torch import nn

from .cfg import HostStmt, If, Program, Region, RegionCall
from .diagnostics import ConversionError, Diagnostic
from .passes import PASS_NAMES, RewriteState, run_passes

__all__ = ["rewrite_model", "PASS_NAMES", "RewriteState", "Program", "Region", "RegionCall", "HostStmt", "If",
           "ConversionError", "Diagnostic"]


def rewrite_model(model: nn.Module, example_inputs: tuple, fixed: dict[str, bool] | None = None,
                  on_pass: Callable[[str, RewriteState], None] | None = None) -> Program:
    """Split `model.forward` into host control flow and branch-free regions.

    `fixed` decides shape-determined decisions (by id) that cannot change
    because the input shapes are static. Raises ConversionError with every
    unsupported construct found. `on_pass(name, state)` runs after each pass (PASS_NAMES).
    """
    return run_passes(RewriteState(model, example_inputs, fixed), on_pass)
