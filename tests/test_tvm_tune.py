"""`--tune`: MetaSchedule tunes TVM regions in-process; records are cached by kernel and reused."""
import os

from conftest import MODELS


def _convert(tmp_path, name: str, trials: int, budget: float | None, cache: str):
    from dycl.backends.tvm_tune import TuneSettings
    from dycl.convert import ConvertOptions, convert

    progress = []
    opts = ConvertOptions(os.path.join(MODELS, "c_if_else.py"), str(tmp_path / name), "tvm", check=10)
    opts.tune = TuneSettings(trials, budget, cache=cache, progress=lambda *a: progress.append(a))
    return convert(opts), progress


def test_tuning_measures_caches_and_reuses(tmp_path):
    cache = str(tmp_path / "cache")
    first, progress = _convert(tmp_path, "first", 4, None, cache)
    assert first.check.passed and first.check.eta == 0
    tuned = sum(t["tuned"] for t in first.tuning)
    assert tuned > 0 and sum(t["trials"] for t in first.tuning) > 0
    # TRIALS counts per kernel: a region with several kernels measures more than TRIALS in all.
    assert all(t["trials"] <= 4 * t["tuned"] for t in first.tuning)
    assert any(t["trials"] > 4 for t in first.tuning)
    assert progress and all(done <= total for _, done, total in progress)
    assert "## TVM tuning (MetaSchedule)" in open(os.path.join(first.out, "report.md")).read()

    again, progress = _convert(tmp_path, "again", 4, None, cache)
    assert again.check.passed
    assert sum(t["trials"] for t in again.tuning) == 0 and not progress
    assert sum(t["cached"] for t in again.tuning) == sum(t["kernels"] - t["dynamic"] for t in again.tuning) > 0


def test_tuning_stops_at_the_budget_and_stays_correct(tmp_path):
    result, _ = _convert(tmp_path, "budget", 512, 0.5, str(tmp_path / "cache"))
    assert result.check.passed
    # The first batch is measured and kept; then every task stops, and later regions are not tuned at all.
    assert result.tuning[0]["stopped_by_budget"] and 0 < result.tuning[0]["trials"] < 512
    assert all(t["trials"] == 0 for t in result.tuning[1:])


def test_records_are_read_once_until_another_process_adds_to_them(tmp_path):
    from dycl.backends import tvm_tune

    directory = str(tmp_path / "records")
    os.makedirs(directory)
    first = tvm_tune._database(directory)
    tvm_tune._keep(directory, first)
    assert tvm_tune._database(directory) is first  # unchanged files: the records already read
    records = os.path.join(directory, "database_tuning_record.json")
    later = os.stat(records).st_mtime_ns + 10**9
    os.utime(records, ns=(later, later))  # as when another process adds records
    assert tvm_tune._database(directory) is not first
