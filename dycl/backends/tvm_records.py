"""Where MetaSchedule records live while regions are tuned: a file database here, or one shared by a cluster.

`FileRecords` is the records folder of this machine (a JSONDatabase per target, under a file lock held
for the whole tuning of a region, as parallel local conversions need). `SharedRecords` is a Ray task's view
of `RecordsKeeper`, an actor on the driver's node that owns the driver's records folder: a task claims the
kernels (workloads, by structural hash) it needs, gets the records known for them, tunes only those nobody
else is tuning, shares what it found, and waits for the kernels other tasks are tuning. So a kernel that
several regions or models share is tuned once across the cluster, and every record lands in the driver's
folder, where the next run (local or on a cluster) finds it.
"""
from __future__ import annotations

import contextlib
import tempfile
import threading
import time

__all__ = ["FileRecords", "SharedRecords", "RecordsKeeper", "workload_key"]

LEASE_S = 120.0  # a claim whose tuner sends no heartbeat (after each measured batch) for this long is free again


def workload_key(mod) -> str:
    """A kernel's key: the structural hash MetaSchedule's databases file its workload under."""
    import tvm_ffi

    return str(tvm_ffi.structural_hash(mod))


class FileRecords:
    """This machine's records folder for one target."""

    def __init__(self, directory: str):
        self.directory = directory
        self.work_dir = directory

    @contextlib.contextmanager
    def session(self, target):
        from .tvm_tune import _database, _keep, _locked

        with _locked(self.directory):
            session = _FileSession(_database(self.directory), target)
            yield session
            _keep(self.directory, session.database)


class _FileSession:
    def __init__(self, database, target):
        self.database, self.target = database, target

    def claim(self, tasks: list) -> list:
        """The tasks to tune here: those without a record."""
        return [t for t in tasks if self.database.query_tuning_record(t.dispatched[0], self.target, "main") is None]

    def finish(self, tuned: list) -> None:
        """Records were added to the database as they were measured."""


class SharedRecords:
    """A Ray task's handle on the cluster's `RecordsKeeper` (`keeper`, an actor handle)."""

    def __init__(self, keeper):
        self.keeper = keeper
        self.work_dir = tempfile.mkdtemp(prefix="dycl-tune-")  # MetaSchedule's logs; the records go to the keeper

    @contextlib.contextmanager
    def session(self, target):
        from tvm.s_tir import meta_schedule as ms

        yield _SharedSession(self.keeper, ms.database.MemoryDatabase(), target)


class _SharedSession:
    def __init__(self, keeper, database, target):
        import ray

        self.keeper, self.database, self.target = keeper, database, target
        self.owner = ray.get_runtime_context().get_task_id() or "driver"  # the same on a retry of this task
        self.keys: dict[str, object] = {}
        self.busy: list[str] = []

    def _add(self, entries: dict) -> None:
        from tvm.s_tir import meta_schedule as ms

        for workload_json, record_json in entries.values():
            workload = self.database.commit_workload(ms.database.Workload.from_json(workload_json).mod)
            self.database.commit_tuning_record(ms.database.TuningRecord.from_json(record_json, workload))

    def claim(self, tasks: list) -> list:
        """The tasks to tune here: those with no record that no other task is tuning."""
        import ray

        self.keys = {workload_key(t.dispatched[0]): t for t in tasks}
        reply = ray.get(self.keeper.claim.remote(sorted(self.keys), self.owner))
        self._add(reply["have"])
        self.busy = reply["busy"]
        return [self.keys[k] for k in reply["mine"]]

    def heartbeat(self) -> None:
        self.keeper.heartbeat.remote(self.owner)

    def finish(self, tuned: list) -> None:
        """Share the best record of each kernel tuned here; then wait for those other tasks are tuning."""
        import ray

        found, empty = {}, []
        for task in tuned:
            key = workload_key(task.dispatched[0])
            best = self.database.get_top_k(self.database.commit_workload(task.dispatched[0]), 1)
            if best:
                found[key] = (best[0].workload.as_json(), best[0].as_json())
            else:  # stopped by the budget before any candidate ran: another task may tune it
                empty.append(key)
        ray.get(self.keeper.commit.remote(self.owner, found, empty))
        busy = self.busy
        while busy:  # blocked in ray.get, this task lends its CPU back to Ray
            reply = ray.get(self.keeper.wait.remote(busy, 10.0))
            self._add(reply["have"])
            busy = reply["busy"]


class RecordsKeeper:
    """The cluster's tuning records for one target (a threaded Ray actor on the driver's node).

    Starts from the driver's records folder and appends every record it is given to it. A claim on a
    kernel is held by one task (its Ray task id, the same on a retry) while that task sends heartbeats.
    """

    def __init__(self, directory: str, target: dict):
        from tvm.s_tir import meta_schedule as ms

        from .tvm_tune import _database, _keep, _locked

        self.directory = directory
        self.lock = threading.Condition()
        self.known: dict[str, tuple] = {}  # key -> (workload json, best record json)
        self.claims: dict[str, str] = {}  # key -> owner
        self.alive: dict[str, float] = {}  # owner -> its last heartbeat (time.monotonic())
        self.stats = {"uses": 0, "tuned": 0, "from_folder": 0}
        with _locked(directory):
            self.database = _database(directory)
            best: dict[str, tuple] = {}
            for record in self.database.get_all_tuning_records():
                if not record.run_secs:
                    continue
                key, cost = workload_key(record.workload.mod), sum(float(s) for s in record.run_secs)
                if key not in best or cost < best[key][0]:
                    best[key] = (cost, (record.workload.as_json(), record.as_json()))
            _keep(directory, self.database)
        self.known = {k: v for k, (_, v) in best.items()}
        self._ms = ms

    def _held(self, key: str) -> bool:
        owner = self.claims.get(key)
        return owner is not None and time.monotonic() - self.alive.get(owner, 0) < LEASE_S

    def claim(self, keys: list[str], owner: str) -> dict:
        with self.lock:
            self.alive[owner] = time.monotonic()
            have, mine, busy = {}, [], []
            for key in keys:
                self.stats["uses"] += 1
                if key in self.known:
                    have[key] = self.known[key]
                elif self._held(key) and self.claims[key] != owner:
                    busy.append(key)
                else:
                    self.claims[key] = owner
                    mine.append(key)
            return {"have": have, "mine": mine, "busy": busy}

    def heartbeat(self, owner: str) -> None:
        with self.lock:
            self.alive[owner] = time.monotonic()

    def commit(self, owner: str, found: dict, empty: list[str]) -> None:
        from .tvm_tune import _keep, _locked

        ms = self._ms
        with self.lock:
            for key, (workload_json, record_json) in found.items():
                if key not in self.known:
                    self.stats["tuned"] += 1
                self.known[key] = (workload_json, record_json)
                self.claims.pop(key, None)
            for key in empty:
                if self.claims.get(key) == owner:
                    del self.claims[key]
            self.lock.notify_all()
        if found:
            with _locked(self.directory):  # the driver's folder, for the next run
                for workload_json, record_json in found.values():
                    workload = self.database.commit_workload(ms.database.Workload.from_json(workload_json).mod)
                    self.database.commit_tuning_record(ms.database.TuningRecord.from_json(record_json, workload))
                _keep(self.directory, self.database)

    def wait(self, keys: list[str], timeout: float) -> dict:
        """Records of `keys` once none is being tuned any more (or after `timeout`); `busy`: still being tuned."""
        with self.lock:
            self.lock.wait_for(lambda: not any(self._held(k) and k not in self.known for k in keys), timeout)
            return {"have": {k: self.known[k] for k in keys if k in self.known},
                    "busy": [k for k in keys if k not in self.known and self._held(k)]}

    def totals(self) -> dict:
        with self.lock:
            return dict(self.stats)
