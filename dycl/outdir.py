"""Where a package may be written, and how it is put there without losing anyone's files.

`-o OUT` is written only when OUT is missing, an empty folder, or a dycl
package holding nothing but a package's own files. The package is built in a
temporary sibling folder (`.OUT.tmp-PID-…`) and renamed into place; an
existing package is swapped out in one atomic exchange where the system has
one. Temporary folders of killed conversions are removed by the next
conversion into the same parent folder, once their process is gone.
"""
from __future__ import annotations

import ctypes
import errno
import os
import re
import shutil
import tempfile

__all__ = ["OutputError", "check_output", "check_zoo_output", "make_workdir", "remove_created", "replace_dir",
           "clean_stale",
           "PACKAGE_FILES"]

# What a package folder may hold: the files dycl writes (and `__pycache__`, which loads by earlier dycl
# versions wrote into packages). `.scratch` exists only in a temporary folder during conversion.
PACKAGE_FILES = frozenset({"manifest.json", "host.py", "regions_torch.py", "report.md", "report.json", "cfg.dot",
                           "cfg.svg"})
PACKAGE_DIRS = frozenset({"regions", "__pycache__"})
_WORK_DIRS = frozenset({".scratch"})
ZOO_FILES = frozenset({"zoo-cache.json", "report.md", "report.json", ".zoo-cache.json.tmp"})
_TEMP = re.compile(r"^\..+\.(?:tmp|old)-(\d+)-[^/]*$")


class OutputError(Exception):
    """The output folder cannot be written without touching files that are not dycl's."""


def _foreign(folder: str, files=PACKAGE_FILES, dirs=PACKAGE_DIRS) -> list[str]:
    """Entries of `folder` that are not a package's own (sorted)."""
    found = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        own = name in dirs if os.path.isdir(path) and not os.path.islink(path) else name in files
        if not own:
            found.append(name)
    return found


def _listed(names: list[str], limit: int = 5) -> str:
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _check_target(out: str, what: str) -> str:
    if not out or not out.strip():
        raise OutputError(f"{what}: the output folder's name is empty; name a folder, e.g. -o build/model")
    path = os.path.abspath(out)
    here = os.path.abspath(os.getcwd())
    if path == here or here.startswith(path.rstrip(os.sep) + os.sep):
        raise OutputError(f"{what}: {out} is the current folder or contains it; write to a new subfolder, "
                          "e.g. -o build/model")
    if os.path.islink(path):
        raise OutputError(f"{what}: {out} is a symbolic link; pass the folder itself")
    if os.path.exists(path) and not os.path.isdir(path):
        raise OutputError(f"{what}: {out} exists and is not a folder")
    above = os.path.dirname(path)
    while not os.path.exists(above):
        above = os.path.dirname(above)
    if not os.path.isdir(above):
        raise OutputError(f"{what}: cannot write in {above}: it is a file, not a folder")
    return path


def check_output(out: str) -> str:
    """OUT as an absolute path, if a package may be written there; otherwise OutputError says why."""
    path = _check_target(out, "-o")
    if not os.path.isdir(path):
        return path
    try:
        entries = os.listdir(path)
    except OSError as exc:
        raise OutputError(f"-o: cannot read {out}: {exc.strerror}") from None
    if not entries:
        return path
    if "manifest.json" not in entries:
        raise OutputError(f"-o: {out} is not empty and is not a dycl package (no manifest.json); it holds "
                          f"{_listed(sorted(entries))}. dycl writes only into a missing or empty folder or "
                          "replaces a dycl package: choose another folder")
    foreign = _foreign(path)
    if foreign:
        raise OutputError(f"-o: the dycl package {out} also holds files that are not the package's: "
                          f"{_listed(foreign)}; move them out or choose another folder")
    return path


def check_zoo_output(out: str) -> str:
    """The zoo's OUT: missing, empty, or an earlier zoo's output (it has zoo-cache.json)."""
    path = _check_target(out, "zoo -o")
    if not os.path.isdir(path):
        return path
    entries = [e for e in os.listdir(path) if not _TEMP.match(e) and e != ".zoo-results"]
    if entries and "zoo-cache.json" not in entries:
        raise OutputError(f"zoo -o: {out} is not empty and is not the output of an earlier dycl zoo (no "
                          f"zoo-cache.json); it holds {_listed(sorted(entries))}. Choose a new or empty folder")
    return path


def make_workdir(out: str) -> tuple[str, str | None]:
    """A fresh temporary folder beside `out` (an absolute path), named for it and for this process, and
    the outermost folder created for it (None: its parent existed), for `remove_created`."""
    parent = os.path.dirname(out)
    created = None
    probe = parent
    while not os.path.exists(probe):
        created, probe = probe, os.path.dirname(probe)
    try:
        os.makedirs(parent, exist_ok=True)
        clean_stale(parent)
        return tempfile.mkdtemp(prefix=f".{os.path.basename(out)}.tmp-{os.getpid()}-", dir=parent), created
    except OSError as exc:
        raise OutputError(f"-o: cannot write in {exc.filename or parent}: {exc.strerror}") from None


def remove_created(out: str, created: str | None) -> None:
    """After a failed conversion, remove the folders `make_workdir` created for `out`, where still empty."""
    folder = os.path.dirname(out)
    while created and (folder == created or folder.startswith(created + os.sep)):
        try:
            os.rmdir(folder)
        except OSError:
            return
        if folder == created:
            return
        folder = os.path.dirname(folder)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def clean_stale(parent: str) -> None:
    """Remove temporary folders that conversions left in `parent` when they were killed.

    Only folders named like dycl's temporary folders, whose process has ended and which hold nothing
    but what a conversion writes, are removed.
    """
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        m = _TEMP.match(name)
        path = os.path.join(parent, name)
        if not m or int(m.group(1)) == os.getpid() or _alive(int(m.group(1))):
            continue
        if not os.path.isdir(path) or os.path.islink(path):
            continue
        try:
            if not _foreign(path, PACKAGE_FILES, PACKAGE_DIRS | _WORK_DIRS):
                shutil.rmtree(path)
        except OSError:
            pass


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: str, b: str) -> bool:
    """Swap two paths atomically (Linux renameat2); False where the system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), b)


def replace_dir(src: str, dst: str) -> None:
    """Put the finished package `src` at `dst`, replacing an empty folder or a package there."""
    check_output(dst)  # again: the folder may have changed while converting
    os.chmod(src, 0o755)
    if not os.path.isdir(dst) or not os.listdir(dst):
        os.rename(src, dst)  # onto a missing or empty folder: atomic
        return
    if not _exchange(src, dst):
        old = tempfile.mkdtemp(prefix=f".{os.path.basename(dst)}.old-{os.getpid()}-", dir=os.path.dirname(dst))
        os.rmdir(old)
        os.rename(dst, old)
        os.rename(src, dst)
        src = old
    shutil.rmtree(src, ignore_errors=True)  # the old package, now at the temporary name
