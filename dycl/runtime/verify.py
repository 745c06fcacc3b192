"""What a package may claim, checked before anything in it runs.

The manifest lists every other file of the package with its SHA-256; the
package's *digest* is the SHA-256 of `manifest.json` itself, so one digest
covers the manifest and, through it, every file. `convert` prints the digest
and records it in report.json; `dycl verify PKG --digest D` and
`dycl.load(PKG, digest=D)` check it.

Every path the manifest names must be a plain relative path to a regular file
inside the package: no `..`, no absolute path, no symbolic link, no device.
"""
from __future__ import annotations

import json
import os
import stat

__all__ = ["PackageError", "read_manifest", "package_path", "artifact_paths", "verify_files", "verify_package", "package_digest",
           "FORMAT", "sha256_file", "hasher"]

FORMAT = 1  # the manifest layout this runtime reads


class PackageError(RuntimeError):
    """The package is incomplete, altered, or was made by an incompatible dycl."""


def _sha256_builtin():
    """CPython's own SHA-256, or None where it is missing."""
    for module in ("_sha2", "_sha256"):  # Python 3.12+, 3.11
        try:
            return __import__(module).sha256
        except ImportError:
            pass
    return None


# `hashlib` loads OpenSSL: 3.6 MB resident in every production process, for hashing a package's files
# once at load. CPython's own SHA-256 is ten times slower (7.5 ms per MB here), so it hashes packages
# up to this size and OpenSSL the larger ones.
_BUILTIN_SHA256 = _sha256_builtin()
_BUILTIN_MAX_BYTES = 32 << 20


def hasher(paths: list[str]):
    """The SHA-256 constructor to hash these files with."""
    if _BUILTIN_SHA256 is not None and sum(os.path.getsize(p) for p in paths) <= _BUILTIN_MAX_BYTES:
        return _BUILTIN_SHA256
    from hashlib import sha256

    return sha256


def sha256_file(path: str, sha256=None) -> str:
    h = (sha256 or hasher([path]))()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _version(text) -> tuple[int, int] | None:
    parts = str(text).split(".")
    if len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    return int(parts[0]), int(parts[1])


_REQUIRED = {"format": int, "dycl": str, "model": str, "backend": str, "signature": list, "regions": list,
             "files": dict}


def read_manifest(path: str) -> tuple[dict, bytes]:
    """The package's manifest and its bytes; PackageError when it is missing, malformed or of another dycl."""
    from .. import __version__

    manifest_path = os.path.join(path, "manifest.json")
    if not os.path.isfile(manifest_path) or os.path.islink(manifest_path):
        raise PackageError(f"{path}: not a dycl package (no manifest.json)")
    with open(manifest_path, "rb") as fh:
        raw = fh.read()
    try:
        manifest = json.loads(raw)
    except ValueError as exc:
        raise PackageError(f"{path}: manifest.json is not valid JSON ({exc})") from None
    if not isinstance(manifest, dict):
        raise PackageError(f"{path}: manifest.json is not a JSON object")
    if manifest.get("format") != FORMAT:
        raise PackageError(f"{path}: manifest format {manifest.get('format')!r} is not the one this dycl "
                           f"({__version__}) reads ({FORMAT}); reconvert the model with this dycl")
    if _version(manifest.get("dycl")) != _version(__version__):
        raise PackageError(f"{path}: made by dycl {manifest.get('dycl')!r}, which this dycl ({__version__}) "
                           "cannot run; reconvert the model with this dycl")
    for key, kind in _REQUIRED.items():
        if not isinstance(manifest.get(key), kind):
            raise PackageError(f"{path}: manifest.json has no valid {key!r} entry")
    for meta in manifest["regions"]:
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            raise PackageError(f"{path}: manifest.json has a malformed region entry")
    return manifest, raw


def package_path(path: str, rel) -> str:
    """`rel` (a manifest path) under the package; PackageError unless it stays inside and is a regular file."""
    parts = rel.split("/") if isinstance(rel, str) else [""]
    if not isinstance(rel, str) or rel.startswith("/") or "\\" in rel or any(p in ("", ".", "..") for p in parts):
        raise PackageError(f"{path}: the manifest names {rel!r}, which is not a path inside the package")
    full = os.path.join(path, *parts)
    if os.path.realpath(full) != os.path.join(os.path.realpath(path), *parts):
        raise PackageError(f"{path}: {rel} leads outside the package (a symbolic link)")
    try:
        mode = os.stat(full).st_mode
    except FileNotFoundError:
        raise PackageError(f"{path}: missing {rel}") from None
    if not stat.S_ISREG(mode):
        raise PackageError(f"{path}: {rel} is not a regular file")
    return full


def verify_files(path: str, manifest: dict, keep: str = "host.py") -> bytes:
    """Check every file against its manifest hash; returns the verified bytes of `keep`."""
    files = manifest["files"]
    if keep not in files:
        raise PackageError(f"{path}: the manifest does not list {keep}")
    fulls = {rel: package_path(path, rel) for rel in files}
    sha256 = hasher(list(fulls.values()))
    kept = b""
    for rel, digest in files.items():
        if rel == keep:
            with open(fulls[rel], "rb") as fh:
                kept = fh.read()
            got = sha256(kept).hexdigest()
        else:
            got = sha256_file(fulls[rel], sha256)
        if got != digest:
            raise PackageError(f"{path}: {rel} was modified after conversion (hash mismatch)")
    return kept


def artifact_paths(path: str, manifest: dict) -> dict[str, str]:
    """Each region artifact the manifest names, mapped to its path inside the package.

    Every file that makes up an artifact (an onnxruntime graph's weights, the library a TVM region's weights
    are bound to) must be listed with a hash, and lie inside the package.
    """
    from ..backends import artifact_files

    found = {}
    for meta in manifest["regions"]:
        artifact = meta.get("artifact")
        if artifact is None or artifact in found:
            continue
        found[artifact] = package_path(path, artifact)
        try:
            parts = artifact_files(found[artifact])
        except ValueError as exc:  # a TVM region's weights file that does not say which library it binds
            raise PackageError(f"{path}: region {meta['name']}: {exc}") from None
        for part in parts:
            rel = os.path.relpath(part, path).replace(os.sep, "/")
            if rel not in manifest["files"]:
                raise PackageError(f"{path}: {rel} (region {meta['name']}) is not listed in the manifest's files")
            package_path(path, rel)
    return found


def package_digest(raw_manifest: bytes) -> str:
    """The package's digest: the SHA-256 of its manifest, which holds every other file's SHA-256."""
    return hasher([])(raw_manifest).hexdigest()


def verify_package(path: str, digest: str | None = None) -> tuple[dict, str, bytes]:
    """Verify a whole package: manifest, paths, every file's hash and (if given) the digest.

    Returns the manifest, the digest and the verified bytes of host.py.
    """
    manifest, raw = read_manifest(path)
    actual = package_digest(raw)
    if digest is not None and digest.strip().lower() != actual:
        raise PackageError(f"{path}: digest {actual} is not the expected {digest.strip()}")
    artifact_paths(path, manifest)
    host = verify_files(path, manifest)
    return manifest, actual, host
