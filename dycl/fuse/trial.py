"""Try each fusion on the real package: keep it only if it matches the original model.

With `--fuse measured` (the default) a fusion must also run faster than the
host it would replace, timed on the natural inputs: a graph with If and Loop
nodes is not always faster, because onnxruntime optimises less inside an If
than in a whole graph. On the zoo, early-exit networks (BranchyNet, SDN), whose
later stages end up nested in If branches, ran 7-20% slower fused.
`--fuse all` keeps every correct fusion: the same package every time.
"""
from __future__ import annotations

import os
import time

from hostgen import host_source

from ..runtime import import_host
from ..runtime.model import _Regions
from ..runtime.region import RegionCallable
from ..runtime.signature import RegionSignature

__all__ = ["HostTrial"]

_GAIN = 0.97  # a fusion must save at least 3% of the host's time (conversion-time timings are noisy)


class HostTrial:
    """Runs the program's current host over compiled regions, for checking and timing fusions."""

    def __init__(self, st, backend_for, inputs: list, expected: list):
        self.st, self.backend_for = st, backend_for
        self.inputs, self.expected = inputs, expected
        self.fns: dict[str, RegionCallable] = {}
        self.count = 0

    def add(self, region: RegionSignature) -> None:
        fn = None
        if region.artifact:
            fn = self.backend_for(region.backend).load(os.path.join(self.st.workdir, region.artifact), self.st.workdir)
        self.fns[region.name] = RegionCallable(region, fn)

    def forward(self, program):
        """`program`'s host over the compiled regions."""
        self.count += 1
        path = os.path.join(self.st.workdir, ".scratch", f"host_trial_{self.count}.py")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(host_source(program, "trial"))
        forward = import_host(path).forward
        regions = _Regions(self.fns)
        return lambda *args: forward(regions, *args)

    def check(self, forward) -> None:
        """The host's outputs against the original model's, on every natural input."""
        from ..check import decisions_of
        from ..compare import RewriteMismatch, compare

        for k, (inp, expected) in enumerate(zip(self.inputs, self.expected)):
            got = forward(*inp)
            compare(expected, got, f"input {k}")
            if decisions_of(expected) != decisions_of(got):
                raise RewriteMismatch(f"input {k} decides differently from the original model")

    def seconds(self, forwards: list, repeat: int = 7) -> list[float]:
        """Per forward, its best times summed over (up to 12 of) the natural inputs.

        The forwards take turns on each input, and each keeps its best time: a busy machine slows
        whichever runs at that moment, and timing one after the other let a burst of load (another
        process, torch's spinning threads) decide, keeping SkipNet-38 in the host at half speed.
        """
        totals = [0.0] * len(forwards)
        for inp in self.inputs[:12]:
            best = [float("inf")] * len(forwards)
            for forward in forwards:
                forward(*inp)
            for _ in range(repeat):
                for k, forward in enumerate(forwards):
                    start = time.perf_counter()
                    forward(*inp)
                    best[k] = min(best[k], time.perf_counter() - start)
            totals = [t + b for t, b in zip(totals, best)]
        return totals


def try_fusion(trial: HostTrial, fusion, measure: bool):
    """(the program with `fusion` applied, None) if it is correct (and, with `measure`, faster) than the
    converting program; else (None, why not)."""
    program = trial.st.program
    fused_program = fusion.applied(program)
    if fused_program is None:
        return None, "an earlier fusion runs this code"
    try:
        for _, signature in fusion.parts:
            trial.add(signature)
        fused = trial.forward(fused_program)
        trial.check(fused)
    except Exception as exc:
        return None, f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"
    if not measure:
        return fused_program, None
    fused_s, host_s = trial.seconds([fused, trial.forward(program)])
    if fused_s > _GAIN * host_s:
        return None, (f"kept in the host: as one graph it ran in {fused_s * 1e6:.0f} µs against "
                      f"{host_s * 1e6:.0f} µs in the host, over {min(len(trial.inputs), 12)} inputs")
    return fused_program, None
