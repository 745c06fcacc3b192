"""Differential fuzzer: random dynamic programs, converted by dycl and compared with eager PyTorch.

    python scripts/fuzz.py --programs 2000 --backend onnxruntime --seed 0
    python scripts/fuzz.py --programs 2000 --backend tvm --seed 0

hypothesis draws each program (`fuzz_programs.py`), which is written out as a
model file and converted in this process. Each program ends in one of:

- matched: it converted, the conversion's own check passed, and the package
  agrees with eager PyTorch on further samples and on the file's edge inputs
  (NaN, Inf, zero-size and extreme shapes), NaN-aware;
- diagnosed: dycl refused it with a compiler-style diagnostic
  (`ConversionError`, exit 2 in the CLI) or a model-file error;
- mismatched: it converted but disagrees with eager;
- crashed: any other exception, or more than `--timeout` seconds.

A mismatch or crash is a bug: generation stops, hypothesis shrinks the
program, and the minimal model file is printed and kept as
`OUT/failure-BACKEND.py`. Nothing is written into the repository (no
hypothesis database).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import os
import shutil
import signal
import sys
import time
import warnings
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_programs import programs, render  # noqa: E402

__all__ = ["Outcome", "FuzzRun", "run_program", "fuzz", "same", "known_bugs", "KNOWN_BUGS", "main"]

KINDS = ("matched", "diagnosed", "mismatched", "crashed")

# What a default run does not draw, each for an open bug this fuzzer found (README, "Fuzzing"); the
# shrunk programs are in the final report of the fuzzer's branch. Drop an entry once its bug is fixed.
KNOWN_BUGS = {  # construct or edge input -> (backends, the bug)
}


def known_bugs(backend: str) -> frozenset:
    """What a default run on `backend` does not draw."""
    return frozenset(name for name, (backends, _) in KNOWN_BUGS.items() if backend in backends)


class Outcome:
    """What became of one program: a kind from KINDS and a one-line detail."""

    __slots__ = ("kind", "detail")

    def __init__(self, kind: str, detail: str = ""):
        self.kind, self.detail = kind, detail

    def __repr__(self) -> str:
        return f"Outcome({self.kind}: {self.detail})" if self.detail else f"Outcome({self.kind})"


def same(expected, got, where: str = "output", rtol: float = 1e-4, atol: float = 1e-4) -> str:
    """'' when `got` matches `expected` (structure, types, dtypes, shapes; NaN where NaN,
    the same infinities, values within rtol/atol); otherwise what differs."""
    if isinstance(expected, np.ndarray):
        if not isinstance(got, np.ndarray):
            return f"{where}: expected an array, got {type(got).__name__}"
        if expected.shape != got.shape or expected.dtype != got.dtype:
            return f"{where}: expected {expected.dtype}{list(expected.shape)}, got {got.dtype}{list(got.shape)}"
        if expected.dtype.kind not in "fc":
            return "" if np.array_equal(expected, got) else f"{where}: values differ: {expected} vs {got}"
        e, g = expected.astype(np.float64), got.astype(np.float64)
        if not np.array_equal(np.isnan(e), np.isnan(g)):
            return f"{where}: NaN in different places: {expected} vs {got}"
        finite = np.isfinite(e)
        if not np.array_equal(e[~finite & ~np.isnan(e)], g[~finite & ~np.isnan(e)]) or \
                not np.array_equal(finite, np.isfinite(g)):
            return f"{where}: infinities differ: {expected} vs {got}"
        err = np.abs(e[finite] - g[finite]) > atol + rtol * np.abs(e[finite])
        return f"{where}: values differ by up to {np.max(np.abs(e[finite] - g[finite])):.3g}" if err.any() else ""
    if isinstance(expected, (tuple, list)):
        if type(got) is not type(expected) or len(got) != len(expected):
            return f"{where}: expected a {type(expected).__name__} of {len(expected)}, got {_describe(got)}"
        return next((m for k, (e, g) in enumerate(zip(expected, got))
                     if (m := same(e, g, f"{where}[{k}]", rtol, atol))), "")
    if isinstance(expected, dict):
        if not isinstance(got, dict) or list(got) != list(expected):
            return f"{where}: expected keys {list(expected)}, got {_describe(got)}"
        return next((m for k in expected if (m := same(expected[k], got[k], f"{where}[{k!r}]", rtol, atol))), "")
    if type(got) is not type(expected):
        return f"{where}: expected {type(expected).__name__} {expected!r}, got {_describe(got)} {got!r}"
    if isinstance(expected, float):
        if math.isnan(expected) or math.isnan(got):
            return "" if math.isnan(expected) and math.isnan(got) else f"{where}: {expected!r} vs {got!r}"
        return "" if expected == got or abs(expected - got) <= atol + rtol * abs(expected) else \
            f"{where}: {expected!r} vs {got!r}"
    return "" if expected == got else f"{where}: {expected!r} vs {got!r}"


def _describe(value) -> str:
    return f"a {type(value).__name__} of {len(value)}" if isinstance(value, (tuple, list, dict)) else \
        type(value).__name__


def _import(path: str):
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: float):
    """Raise _Timeout after `seconds` (a hung conversion or package is a crash, not a stuck fuzzer)."""
    def expire(signum, frame):
        raise _Timeout(f"no result after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_program(path: str, backend: str, out: str, check: int = 6, extra: int = 6, fuse: str = "all",
                timeout: float = 120.0) -> Outcome:
    """Convert the model file at `path` into `out` and compare the package with eager PyTorch."""
    import torch

    import dycl
    from dycl.convert import ConvertOptions, StepFailed, convert
    from dycl.compare import to_numpy
    from dycl.modelfile import ModelFileError
    from rewrite import ConversionError

    opts = ConvertOptions(path, out, backend, check)
    opts.fuse, opts.jobs = fuse, 1
    name = os.path.splitext(os.path.basename(path))[0]
    try:
        with _deadline(timeout), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                convert(opts)
            except ConversionError as exc:
                return Outcome("diagnosed", ", ".join(sorted({d.kind for d in exc.diagnostics})))
            except StepFailed as exc:
                if isinstance(exc.error, ConversionError):
                    return Outcome("diagnosed", ", ".join(sorted({d.kind for d in exc.error.diagnostics})))
                if isinstance(exc.error, ModelFileError):
                    return Outcome("diagnosed", f"model file: {exc.error}")
                return Outcome("crashed", _first_line(exc))
            module = _import(path)
            model = module.get_model()
            package = dycl.load(out)
            for k, inputs in enumerate(module.sample_inputs(extra, seed=1) + module.edge_inputs()):
                label = f"extra sample {k}" if k < extra else f"edge input {module.EDGE[k - extra]}"
                with torch.no_grad():
                    try:
                        expected = to_numpy(model(*inputs))
                    except Exception as exc:  # the generator's fault: every program must run in eager mode
                        return Outcome("crashed", f"eager PyTorch raised on {label}: {_first_line(exc)}")
                try:
                    got = package(*[to_numpy(t) for t in inputs])
                except Exception as exc:
                    return Outcome("crashed", f"{label}: the package raised {_first_line(exc)}")
                diff = same(expected, got, atol=1e-4 * max(1.0, _magnitude(inputs)))
                if diff:
                    return Outcome("mismatched", f"{label}: {diff}")
            return Outcome("matched")
    except _Timeout as exc:
        return Outcome("crashed", str(exc))
    except Exception as exc:
        return Outcome("crashed", _first_line(exc))
    finally:
        sys.modules.pop(name, None)
        shutil.rmtree(out, ignore_errors=True)


def _magnitude(inputs) -> float:
    """The largest finite input magnitude: float32 rounding grows with it (a sum of 1e4-sized values that
    cancels to 0 in torch may give 1e-4 in another order)."""
    import torch

    finite = [t[torch.isfinite(t)].abs() for t in inputs if isinstance(t, torch.Tensor) and t.numel()]
    return max([float(f.max()) for f in finite if f.numel()], default=0.0)


def _first_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"


class FuzzRun:
    """Counts per outcome (until the first bug), diagnostics by kind, the shrunk failure."""

    def __init__(self, backend: str):
        self.backend = backend
        self.counts = Counter({k: 0 for k in KINDS})
        self.diagnostics: Counter = Counter()
        self.failure: Outcome | None = None
        self.failure_file = ""
        self.seconds = 0.0  # until the last counted program (shrinking not included)
        self.shrink_runs = 0
        self.interrupted = False

    @property
    def programs(self) -> int:
        return sum(self.counts.values())

    def per_minute(self) -> float:
        return 60 * self.programs / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        c = self.counts
        return (f"{self.backend}: {self.programs} programs: {c['matched']} matched, {c['diagnosed']} diagnosed, "
                f"{c['mismatched']} mismatched, {c['crashed']} crashed "
                f"({self.seconds:.0f} s, {self.per_minute():.0f} programs/minute)"
                + (" (interrupted)" if self.interrupted else ""))


class _Bug(Exception):
    pass


def fuzz(backend: str, n: int, seed: int, out: str, check: int = 6, fuse: str = "all", timeout: float = 120.0,
         avoid: frozenset = frozenset(), progress=None, shrink: bool = True) -> FuzzRun:
    """Convert `n` programs drawn with `seed`; stop at the first mismatch or crash and shrink it
    (which may take minutes: without `shrink` the failing program is kept as drawn)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    import onnxruntime

    onnxruntime.set_default_logger_severity(4)  # failed fusion trials are expected; their logs are noise
    run = FuzzRun(backend)
    os.makedirs(out, exist_ok=True)
    drawn = [0]  # programs drawn so far: each gets its own file (parses are cached by path and mtime)
    failure_path = os.path.join(out, f"failure-{backend}.py")
    start = time.perf_counter()

    @hypothesis_seed(seed)
    @settings(max_examples=n, database=None, deadline=None, derandomize=False, print_blob=False,
              phases=(Phase.generate, Phase.shrink) if shrink else (Phase.generate,),
              suppress_health_check=list(HealthCheck))
    @given(programs(avoid))
    def one(program):
        source = render(program)
        drawn[0] += 1
        model_path = os.path.join(out, f"fuzz_{backend}_{drawn[0]}.py")
        with open(model_path, "w", encoding="utf-8") as fh:
            fh.write(source)
        try:
            outcome = run_program(model_path, backend, os.path.join(out, f"package-{backend}"), check=check,
                                  fuse=fuse, timeout=timeout)
        finally:
            os.remove(model_path)
        if run.failure is not None:  # shrinking
            run.shrink_runs += 1
        else:
            run.seconds = time.perf_counter() - start
            run.counts[outcome.kind] += 1
            if outcome.kind == "diagnosed":
                run.diagnostics[outcome.detail] += 1
            if progress:
                progress(run, outcome)
        if outcome.kind in ("mismatched", "crashed"):
            if run.failure is None or len(source) <= os.path.getsize(failure_path):
                run.failure = outcome
                with open(failure_path, "w", encoding="utf-8") as fh:
                    fh.write(f"# scripts/fuzz.py --backend {backend}: {outcome.kind}: {outcome.detail}\n{source}")
            raise _Bug(f"{outcome.kind}: {outcome.detail}")

    try:
        one()
    except (_Bug, ExceptionGroup):
        run.failure_file = failure_path
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the counts so far are still a result
        run.interrupted = True
    return run


def _interrupt_on_sigterm() -> None:
    """SIGTERM stops a run as Ctrl-C does, so that it still reports what it counted."""
    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=100, help="programs per backend")
    parser.add_argument("--backend", action="append", choices=("onnxruntime", "tvm"),
                        help="repeat for several (default: onnxruntime)")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed")
    parser.add_argument("--out", default=os.path.join("build", "fuzz"), help="scratch folder and failures")
    parser.add_argument("--check", type=int, default=6, help="samples each conversion checks")
    parser.add_argument("--fuse", choices=("all", "measured", "none"), default="all")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per program")
    parser.add_argument("--avoid", help="comma-separated constructs and edge inputs not to generate, to look past "
                                        "known bugs (default: KNOWN_BUGS for the backend; '' draws everything)")
    args = parser.parse_args(argv)
    failed = False
    _interrupt_on_sigterm()
    for backend in args.backend or ["onnxruntime"]:
        def progress(run, outcome, every=max(1, args.programs // 20)):
            if run.programs % every == 0 or outcome.kind in ("mismatched", "crashed"):
                print(f"  {run.programs}/{args.programs} {dict(run.counts)} {run.seconds:.0f} s"
                      + (f"  last: {outcome}" if outcome.kind in ("mismatched", "crashed") else ""), flush=True)

        avoid = known_bugs(backend) if args.avoid is None else frozenset(filter(None, args.avoid.split(",")))
        run = fuzz(backend, args.programs, args.seed, args.out, args.check, args.fuse, args.timeout, avoid, progress)
        print(run.summary())
        for detail, count in run.diagnostics.most_common():
            print(f"  diagnosed {count}: {detail}")
        if run.failure:
            failed = True
            print(f"BUG ({run.failure.kind}): {run.failure.detail}")
            print(f"minimal program ({run.shrink_runs} shrinking runs), kept as {run.failure_file}:\n")
            with open(run.failure_file, encoding="utf-8") as fh:
                print(fh.read())
        if run.interrupted:
            return 130
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
