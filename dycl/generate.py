"""The generate step: the rewritten program as code in the work folder.

`host.py` as the package ships it, `regions_torch.py` (the regions as torch functions, for exploration
and export) and `.scratch/host_explore.py`, the host instrumented to record what exploration needs.
`write_host` writes `host.py` again after fusion or speculation changed the program.
"""
from __future__ import annotations

import os

from hostgen import host_source, regions_source

from .pins import observed_names, region_pins

__all__ = ["step_generate", "write_host", "write_text"]


def _source(st) -> str:
    return os.path.relpath(st.spec.path) if st.spec.path else st.spec.name


def step_generate(opts, st) -> None:
    source = _source(st)
    write_text(os.path.join(st.workdir, "host.py"), host_source(st.program, os.path.basename(source)))
    write_text(os.path.join(st.workdir, "regions_torch.py"), regions_source(st.program))
    scratch = os.path.join(st.workdir, ".scratch")
    os.makedirs(scratch, exist_ok=True)
    st.pins = region_pins(st.program)
    write_text(os.path.join(scratch, "host_explore.py"),
               host_source(st.program, source, instrument=True, observe=observed_names(st.pins)))


def write_host(st) -> None:
    """host.py for the program as it stands (fusion and speculation change it after generate)."""
    write_text(os.path.join(st.workdir, "host.py"), host_source(st.program, os.path.basename(_source(st))))


def write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
