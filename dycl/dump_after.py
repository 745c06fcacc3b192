"""`dycl convert --dump-after STEP`: the program as it stands after one step, then stop.

STEP is a conversion step (`convert.STEPS`) or a pass of the rewrite (`rewrite.PASS_NAMES`). What a step
has to show: after `load`, forward's source; after the rewrite and its passes, the program as source
text (the host's `forward` calling regions, then one function per region); from `generate` on, that
program and the text files the package folder holds at that point (`host.py`, `regions_torch.py`,
`manifest.json`, `report.md`), with a listing of every file. The conversion then stops without writing
a package: the temporary folder is removed and `-o` is left as it was.
"""
from __future__ import annotations

import os

from rewrite.cfg import code
from rewrite.dump import program_text
from rewrite.source import function_source

__all__ = ["DumpReached", "step_dump"]

_TEXT_FILES = ("host.py", "regions_torch.py", "manifest.json", "report.md")


class DumpReached(Exception):
    """The step `--dump-after` names has run; `text` is what it left."""

    def __init__(self, step: str, text: str):
        super().__init__(f"stopped after step {step}")
        self.step, self.text = step, text


def step_dump(step: str, st) -> str:
    """The program after conversion step `step`, as text."""
    head = f"# dycl --dump-after {step}: {st.spec.name}\n"
    if st.program is None:
        src = function_source(type(st.spec.model).forward)
        return head + "# forward, as the model file defines it\n" + (code(src.node) if src else "") + "\n"
    parts = [head, program_text(st.program)]
    if st.exploration is not None:
        parts.append(_explored(st))
    files = sorted(os.path.relpath(os.path.join(d, f), st.workdir) for d, _, fs in os.walk(st.workdir) for f in fs
                   if ".scratch" not in os.path.relpath(d, st.workdir).split(os.sep))
    if files:
        parts.append("\n# files in the package folder:\n" + "".join(f"#   {f}\n" for f in files))
    for name in _TEXT_FILES:
        path = os.path.join(st.workdir, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                parts.append(f"\n# ==== {name} ====\n{fh.read()}")
    return "".join(parts)


def _explored(st) -> str:
    lines = ["\n# exploration: the dims each region's input leaves had (None: varied)"]
    for region in st.program.regions:
        record = st.exploration.records.get(region.name)
        if record is not None and record.examples:
            lines.append(f"#   {region.name}: {record.dims()}")
        else:
            lines.append(f"#   {region.name}: not reached")
    return "\n".join(lines) + "\n"
