"""The package's manifest (deterministic) and its human-readable report."""
from __future__ import annotations

import json
import os

from rewrite.kinds import DecisionClass

from .picture import program_dot, tree_text
from .runtime.signature import ARRAY, Param
from .runtime.verify import package_digest, sha256_file

__all__ = ["write_manifest", "write_report", "write_picture", "summary", "signature", "region_loops"]


def signature(spec) -> list[Param]:
    """forward's inputs as the runtime checks them: dtype and shape (symbols where dynamic)."""
    import torch

    params = []
    for name, value in zip(spec.params, spec.inputs):
        if isinstance(value, torch.Tensor):
            dynamic = spec.dynamic.get(name, {})
            shape = tuple(dynamic.get(a, d) for a, d in enumerate(value.shape))
            params.append(Param(name, ARRAY, str(value.numpy().dtype), shape))
        else:
            params.append(Param(name, type(value).__name__))
    return params


def write_picture(workdir: str, program) -> None:
    """cfg.dot (and cfg.svg where Graphviz is installed) beside host.py."""
    import shutil
    import subprocess

    dot = os.path.join(workdir, "cfg.dot")
    with open(dot, "w", encoding="utf-8") as fh:
        fh.write(program_dot(program))
    if shutil.which("dot"):
        subprocess.run(["dot", "-Tsvg", dot, "-o", os.path.join(workdir, "cfg.svg")], check=False,
                       capture_output=True)


def write_manifest(workdir: str, st, backend: str, target: dict | None, version: str) -> None:
    """manifest.json: the package's signature, regions, decisions and files; `target`: what the regions'
    code was compiled for (None: portable)."""
    program = st.program
    files = {}
    for root, _, names in os.walk(workdir):
        for name in sorted(names):
            full = os.path.join(root, name)
            rel = os.path.relpath(full, workdir).replace(os.sep, "/")
            if rel not in ("manifest.json", "report.md", "report.json", "cfg.svg"):
                files[rel] = sha256_file(full)
    manifest = {
        "format": 1,
        "dycl": version,
        "model": program.name,
        "source": st.spec.path,
        "backend": backend,
        "target": target,
        "signature": [p.to_json() for p in signature(st.spec)],
        "defaults": program.defaults,
        "decisions": [{"id": d.decision, "class": d.dclass, "origin": f"{d.origin.func} {d.origin.lines}"}
                      for d in program.decisions],
        "loops": [{"id": lp.decision, "kind": lp.kind, "origin": f"{lp.origin.func} {lp.origin.lines}"}
                  for lp in program.loops],
        "static_decisions": program.static_decisions,
        "regions": [s.to_json() for s in st.signatures],
        "files": dict(sorted(files.items())),
    }
    raw = (json.dumps(manifest, indent=1) + "\n").encode("utf-8")
    with open(os.path.join(workdir, "manifest.json"), "wb") as fh:
        fh.write(raw)
    st.digest = package_digest(raw)


def summary(st) -> dict:
    program = st.program
    classes = {DecisionClass.STATIC: program.static_decisions, DecisionClass.SHAPE: 0, DecisionClass.VALUE: 0,
               DecisionClass.EXECUTION: len(program.loops)}
    for d in program.decisions:
        classes[d.dclass] = classes.get(d.dclass, 0) + 1
    exp = st.exploration
    fused_in = _fused_in(program)
    loops = []
    for lp in program.loops:
        body_regions = sum(1 for loop in region_loops(program).values() if loop == lp.decision)
        iterations = exp.loop_iterations.get(lp.decision, 0) if exp else 0
        calls = exp.loop_calls.get(lp.decision, 0) if exp else 0
        loops.append({"id": lp.decision, "kind": lp.kind, "origin": f"{lp.origin.func} {lp.origin.lines}",
                      "body_regions": body_regions, "iterations": iterations,
                      "calls_per_iteration": round(calls / iterations, 3) if iterations else None,
                      "fused": fused_in.get(lp.decision)})
    return {
        "model": program.name,
        "regions": len(program.regions),
        "loops": loops,
        "artifacts": st.artifacts,
        "decisions": classes,
        "forced_runs": st.forced_runs,
        "fallbacks": list(getattr(st, "fallbacks", [])),
        "tuning": list(st.tuning),
        "fused": list(getattr(st, "fused", [])),
        "unfused": list(getattr(st, "unfused", [])),
        "speculation": getattr(st, "speculation", ""),
        "observed_dynamic": list(getattr(st, "observed_dynamic", [])),
        "defaults": dict(program.defaults),
        "check": st.check.as_dict() if st.check else None,
        "digest": st.digest,
        "seconds": {k: round(v, 3) for k, v in st.timings.items()},
    }


def _fused_in(program) -> dict[str, str]:
    """Each decision and loop that runs inside a fused region, mapped to that region."""
    from rewrite.cfg import If, Loop

    from hostgen.fused import FusedBlock

    found: dict[str, str] = {}

    def walk(nodes, region):
        for node in nodes:
            if isinstance(node, (If, Loop)):
                if region:
                    found[node.decision] = region
                walk(node.body, region)
                walk(getattr(node, "orelse", []), region)
            elif isinstance(node, FusedBlock):
                walk(node.nodes, node.region)

    walk(program.body, None)
    return found


def region_loops(program) -> dict[str, str]:
    """Each region inside a host loop, mapped to its innermost loop's id."""
    from rewrite.cfg import If, Loop, RegionCall

    from hostgen.fused import FusedBlock

    found: dict[str, str] = {}

    def walk(nodes, loop):
        for node in nodes:
            if isinstance(node, RegionCall) and loop is not None:
                found[node.region.name] = loop
            elif isinstance(node, If):
                walk(node.body, loop)
                walk(node.orelse, loop)
            elif isinstance(node, Loop):
                walk(node.body, node.decision)
            elif isinstance(node, FusedBlock):
                walk(node.nodes, loop)

    walk(program.body, None)
    return found


def write_report(workdir: str, st) -> None:
    info = summary(st)
    program = st.program
    lines = [f"# dycl report: {program.name}", "",
             f"Source: `{st.spec.path}`  ", f"Regions: {info['regions']} ({info['artifacts']} artifacts)  ",
             "Decisions: " + ", ".join(f"{v} {k}" for k, v in info["decisions"].items()) + "  ", ""]
    if st.check:
        c = st.check
        lines += ["## Check against the original model", "",
                  "| samples | max error δ | decision inconsistency η | paths covered | result |",
                  "|---:|---:|---:|---:|---|",
                  f"| {c.samples} | {c.delta:.3g} | {c.eta} | {c.paths} | {'pass' if c.passed else 'FAIL: ' + c.failure} |",
                  ""]
    if info["observed_dynamic"]:
        lines += ["## Dynamic dims seen in the samples", "",
                  "`sample_inputs()` varied these input dims, which `DYNAMIC` does not declare, so they were made "
                  "dynamic (declare them to choose the names):", "",
                  "| input | axis | symbol | sizes seen |", "|---|---:|---|---|"]
        for d in info["observed_dynamic"]:
            lines.append(f"| `{d['input']}` | {d['axis']} | `{d['symbol']}` | {', '.join(map(str, d['sizes']))} |")
        lines.append("")
    if info["defaults"]:
        lines += ["## Inputs fixed at their defaults", "",
                  "`get_inputs()` leaves these parameters of forward out, so they were folded at their defaults; "
                  "the package does not take them:", "",
                  "| parameter | value |", "|---|---|"]
        lines += [f"| `{name}` | `{value}` |" for name, value in info["defaults"].items()] + [""]
    if info["tuning"]:
        lines += ["## TVM tuning (MetaSchedule)", "",
                  "Kernels with static shapes are tuned; records are cached by kernel, so `cached` ones were "
                  "tuned before (by this or another conversion).", "",
                  "| region | kernels | dynamic (default schedule) | cached | tuned | trials | seconds | "
                  "budget ran out |", "|---|---:|---:|---:|---:|---:|---:|---|"]
        for t in info["tuning"]:
            lines.append(f"| `{t['region']}` | {t['kernels']} | {t['dynamic']} | {t['cached']} | {t['tuned']} | "
                         f"{t['trials']} | {t['seconds']} | {'yes' if t['stopped_by_budget'] else 'no'} |")
        lines.append("")
    if info["fallbacks"]:
        lines += ["## Regions on onnxruntime instead of TVM", ""]
        lines += [f"- {f}" for f in info["fallbacks"]] + [""]
    lines += ["## Host program", "", "Decisions and loops run in `host.py`; regions are compiled. The same graph "
              "is in `cfg.dot`" + (" (rendered: `cfg.svg`)." if os.path.exists(os.path.join(workdir, "cfg.svg")) else "."),
              "", "```", tree_text(program, os.path.basename(st.spec.path)).rstrip(), "```", ""]
    inside: dict[str, list[str]] = {}  # region -> the graphs it is part of (a fused block, the speculation)
    for s in st.signatures:
        for name in s.fuses or ():
            inside.setdefault(name, []).append(f"`{s.name}`")
    own = {s.name for s in st.signatures}
    lines += ["## Regions", "", "| region | source | inputs | outputs | calls in exploration | compiled as |",
              "|---|---|---|---|---:|---|"]
    for r in program.regions:
        rec = st.exploration.records[r.name] if st.exploration else None
        graphs = inside.get(r.name, [])
        compiled = "; ".join((["its own graph"] if r.name in own or not graphs else [])
                             + ([f"part of {' and '.join(graphs)}"] if graphs else []))
        lines.append(f"| `{r.name}` | {r.origin.func} {r.origin.lines} | {', '.join(r.inputs)} | "
                     f"{', '.join(r.outputs)} | {rec.calls if rec else 0} | {compiled} |")
    if info["loops"]:
        lines += ["", "## Loops", "",
                  "| loop | kind | source | regions in body (each compiled once) | iterations seen | "
                  "backend calls per iteration in the host | run as |", "|---|---|---|---:|---:|---:|---|"]
        for lp in info["loops"]:
            per = "–" if lp["calls_per_iteration"] is None else f"{lp['calls_per_iteration']:.2f}"
            run = f"inside region `{lp['fused']}` (ONNX Loop)" if lp["fused"] else "host loop"
            lines.append(f"| {lp['id']} | {lp['kind']} | {lp['origin']} | {lp['body_regions']} | "
                         f"{lp['iterations']} | {per} | {run} |")
    if info["fused"] or info["unfused"]:
        lines += ["", "## Host code run inside graphs", "",
                  "onnxruntime runs control flow inside a graph, so runs of host code it can express became one "
                  "region each (decisions as ONNX `If`, loops as `Loop`), checked against the original model:", ""]
        lines += [f"- {f}" for f in info["fused"]] or ["- none"]
        if info["unfused"]:
            lines += ["", "Left in the host (correct, one backend call per region):", ""]
            lines += [f"- {u}" for u in info["unfused"]]
    if info["speculation"]:
        lines += ["", "## Speculation (--speculate)", "", info["speculation"]]
    fused_in = _fused_in(program)
    lines += ["", "## Decisions", "", "| id | class | source | taken by |", "|---|---|---|---|"]
    for d in program.decisions:
        by = f"region `{fused_in[d.decision]}` (ONNX If)" if d.decision in fused_in else "host.py"
        lines.append(f"| {d.decision} | {d.dclass}-determined | {d.origin.func} {d.origin.lines} | {by} |")
    with open(os.path.join(workdir, "report.md"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    with open(os.path.join(workdir, "report.json"), "w", encoding="utf-8") as fh:
        json.dump(info, fh, indent=1)
        fh.write("\n")
