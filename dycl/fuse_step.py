"""The fuse step: stretches of host code run as one onnxruntime graph each, where correct (and faster).

`dycl.fuse` finds the stretches and builds their graphs; here each is compiled, tried on the natural
inputs against the host (`fuse.trial`), and kept or given up with the reason the report lists. Regions
and artifacts that no kept code calls any more are dropped, and host.py is written again.
"""
from __future__ import annotations

import os

from .backends import BACKENDS, artifact_files, chosen_backends
from .generate import write_host

__all__ = ["step_fuse", "fusing_backend"]


def fusing_backend(choice: str) -> str | None:
    """The backend whose graphs run fused host code: the first that `choice` puts regions on and that runs
    control flow (none: every decision stays in the host)."""
    return next((name for name in chosen_backends(choice) if BACKENDS[name].control_flow), None)


def step_fuse(opts, st) -> None:
    """Run stretches of host code as one graph each (see fuse), where correct (and faster)."""
    import onnx

    from .compare import to_numpy
    from .fuse import called_regions, fuse_program
    from .fuse.trial import HostTrial, try_fusion
    from .package import signature

    fusing = fusing_backend(opts.backend)
    if opts.fuse == "none" or fusing is None:
        return
    scratch = os.path.join(st.workdir, ".scratch")
    regions = {s.name: s for s in st.signatures}
    models = {name: onnx.load(os.path.join(scratch, f"{name}.onnx")) for name, s in regions.items() if s.artifact}
    fusions, st.unfused = fuse_program(st.program, signature(st.spec), regions, models, fusing)
    if not fusions:
        return
    fuser = opts.make_backend(fusing)
    backends = {fusing: fuser}
    inputs = [[to_numpy(v) for v in inp] for inp in st.natural_inputs]
    trial = HostTrial(st, lambda name: backends.setdefault(name, opts.make_backend(name)), inputs,
                      st.exploration.expected)
    for region in regions.values():
        trial.add(region)
    for k, fusion in enumerate(fusions):
        where = f"{fusion.origin.func} {fusion.origin.lines}"
        names = ", ".join(sig.name for _, sig in fusion.parts)
        st.progress("fuse", f"fusion trial {k + 1} of {len(fusions)}: {where} as region"
                    f"{'s' if len(fusion.parts) > 1 else ''} {names}", k,
                    len(fusions))
        try:
            for i, (model, sig) in enumerate(fusion.parts):
                onnx_path = os.path.join(scratch, f"{sig.name}.onnx")
                onnx.save(model, onnx_path)
                sig = sig.with_artifact(fuser.artifact(sig.name))
                fuser.compile(onnx_path, os.path.join(st.workdir, sig.artifact))
                fusion.parts[i] = (model, sig)
        except Exception as exc:  # the backend refuses the fused graph (INVALID_GRAPH): the host keeps the code
            st.unfused.append(f"{where}: {fuser.name} refused the graph: {(str(exc).strip().splitlines() or [''])[0]}")
            continue
        fused_program, why_not = try_fusion(trial, fusion, measure=opts.fuse == "measured")
        if why_not:
            st.unfused.append(f"{where}: {why_not}")
            continue
        st.program = fused_program
        for _, sig in fusion.parts:
            regions[sig.name] = sig
        taken = sorted({d.decision for d in fusion.decided.values()})
        first = f"decision{'s' if len(taken) > 1 else ''} {', '.join(taken)} taken in the host, one region per " \
            "arm: " if taken else ""
        st.fused.append(f"{where}: {first}" + "; ".join(f"region {sig.name} runs {', '.join(sig.fuses)}"
                                                  for _, sig in fusion.parts))
    used = set(called_regions(st.program.body))
    st.signatures = [s for name, s in regions.items() if name in used]
    artifacts = {s.artifact for s in st.signatures if s.artifact}
    kept = {path for artifact in artifacts for path in artifact_files(os.path.join(st.workdir, artifact))}
    for name in os.listdir(os.path.join(st.workdir, "regions")):
        if os.path.join(st.workdir, "regions", name) not in kept:
            os.remove(os.path.join(st.workdir, "regions", name))
    st.artifacts = len(artifacts)
    write_host(st)
