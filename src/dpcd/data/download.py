"""Download raw dataset files: retries, timeout, atomic writes, checksums, mirrors.

A file is fetched into a temporary name next to its destination, its size and
sha256 are verified, and only then is it renamed into place, so an interrupted
or corrupt download never leaves a file that looks complete. The download
manifest (the rule's output) is written last.

Where bytes come from, in order:

1. a shared cache directory (``--cache`` / ``DPCD_DATA_CACHE``), read first and
   filled after a successful download;
2. a mirror (``--mirror`` / ``DPCD_DATA_MIRROR``): a local directory or base URL
   that *replaces* the canonical hosts (no internet fallback), laid out as
   ``<mirror>/<source>/<file name>`` or any of the file's registered ``mirror``
   paths (e.g. an archive's extracted member, with its own sha256);
3. otherwise the canonical URL, then the registered fallback URLs.

Files without a recorded sha256 are pinned on first download in a lock file
(trust on first use, with a warning) and verified against the pin afterwards.
"""

import contextlib
import datetime
import fcntl
import hashlib
import http.client
import json
import os
import shutil
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile

from .io import atomic_path, write_json_atomic
from .registry import get_entry

DEFAULT_LOCK_FILE = os.path.join("results", "data", "checksums.lock.json")
OPENML_DESCRIPTION = "https://api.openml.org/api/v1/json/data/{}"
_CHUNK = 1 << 20


class ChecksumError(ValueError):
    """A file's size or hash differs from the recorded one."""


class TransientError(OSError):
    """A failure worth retrying (timeout, reset, truncated transfer)."""


def sha256sum(path):
    """Return the hex sha256 of the file at ``path``."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def md5sum(path):
    """Return the hex md5 of the file at ``path`` (OpenML publishes md5)."""
    h = hashlib.md5()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _warn(msg):
    print(f"dpcd data: warning: {msg}", file=sys.stderr)


def _is_url(location):
    return urllib.parse.urlparse(location).scheme in ("http", "https", "ftp", "file")


def _join(base, *parts):
    if _is_url(base):
        return base.rstrip("/") + "/" + "/".join(urllib.parse.quote(p) for p in parts)
    return os.path.join(base, *parts)


def _http_to(url, dest, timeout):
    """Copy ``url`` into the open file ``dest``; raise TransientError if cut short."""
    request = urllib.request.Request(url, headers={"User-Agent": "dpcd-data/0.1"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            expected = resp.headers.get("Content-Length")
            received = 0
            while True:
                block = resp.read(_CHUNK)
                if not block:
                    break
                dest.write(block)
                received += len(block)
    except urllib.error.HTTPError as exc:
        if exc.code >= 500 or exc.code == 429:
            raise TransientError(f"HTTP {exc.code} from {url}") from exc
        raise FileNotFoundError(f"HTTP {exc.code} {exc.reason} for {url}") from exc
    except http.client.IncompleteRead as exc:
        raise TransientError(
            f"interrupted transfer from {url}: got {len(exc.partial)} more bytes, "
            f"{exc.expected} missing"
        ) from exc
    except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
        if isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, FileNotFoundError):
            raise FileNotFoundError(f"not found: {url}") from exc
        raise TransientError(f"{type(exc).__name__} fetching {url}: {exc}") from exc
    if expected is not None and received != int(expected):
        raise TransientError(
            f"interrupted transfer from {url}: received {received} of {expected} bytes"
        )


def fetch_to_temp(location, dest_path, retries=3, timeout=60.0, backoff=1.0):
    """Copy a URL or local path to a fresh temporary file next to ``dest_path``.

    Parameters
    ----------
    location : str
        ``http(s)://``/``file://`` URL or a local path.
    dest_path : str
        Final destination (only its directory is used here).
    retries : int
        Attempts after the first one on transient errors.
    timeout : float
        Seconds per network operation.

    Returns
    -------
    str
        Path of the temporary file; the caller verifies and renames it.

    Raises
    ------
    FileNotFoundError
        The location does not exist (not retried).
    OSError
        All attempts failed; the message has the last error.
    """
    last = None
    for attempt in range(retries + 1):
        tmp = atomic_path(dest_path)
        try:
            if _is_url(location):
                with open(tmp, "wb") as fh:
                    _http_to(location, fh, timeout)
            else:
                if not os.path.isfile(location):
                    raise FileNotFoundError(f"not found: {location}")
                shutil.copyfile(location, tmp)
            return tmp
        except TransientError as exc:
            last = exc
            os.unlink(tmp)
            if attempt < retries:
                _warn(f"{exc}; retrying ({attempt + 1}/{retries})")
                time.sleep(backoff * 2**attempt)
        except BaseException:
            os.unlink(tmp)
            raise
    raise OSError(f"download failed after {retries + 1} attempts: {last}")


@contextlib.contextmanager
def _locked(lock_file):
    """Hold an exclusive lock on ``lock_file`` + '.lck' (parallel jobs pin safely)."""
    os.makedirs(os.path.dirname(os.path.abspath(lock_file)), exist_ok=True)
    with open(lock_file + ".lck", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def read_pins(lock_file):
    """Return the pinned ``{"source/file": {"sha256", "size", ...}}`` entries."""
    if not lock_file or not os.path.exists(lock_file):
        return {}
    with open(lock_file) as fh:
        return json.load(fh)


def _pin(lock_file, key, sha256, size, origin):
    with _locked(lock_file):
        pins = read_pins(lock_file)
        if key in pins:
            return pins[key]
        pins[key] = {
            "sha256": sha256,
            "size": size,
            "origin": origin,
            "pinned": datetime.date.today().isoformat(),
        }
        write_json_atomic(lock_file, pins)
    _warn(
        f"{key}: no recorded checksum; pinned sha256 {sha256} ({size} bytes) "
        f"from {origin} in {lock_file} (trust on first use). Later runs verify it."
    )
    return pins[key]


def verify(path, source, name, origin, sha256=None, size=None, md5=None, lock_file=None,
           lock_key=None):
    """Check ``path`` against the expected size/hash, or pin it on first use.

    Returns
    -------
    actual_sha256 : str
    status : str
        ``verified``, ``verified against pin`` or ``pinned on first use``.

    Raises
    ------
    ChecksumError
        With the file, expected and actual values, and what to do.
    """
    actual_size = os.path.getsize(path)
    actual = sha256sum(path)
    label = f"dataset {source!r} file {name!r} (from {origin})"
    advice = (
        "The download is corrupt or truncated, or the source/mirror copy changed. "
        "Delete the mirror/cache copy and fetch again; if the upstream file "
        "legitimately changed, update src/dpcd/data/registry.yaml"
    )
    if size is not None and actual_size != int(size):
        raise ChecksumError(
            f"size mismatch for {label}: expected {size} bytes, got {actual_size}. {advice}."
        )
    if md5 and md5sum(path) != md5:
        raise ChecksumError(
            f"md5 mismatch for {label}: expected {md5}, got {md5sum(path)}. {advice}."
        )
    if sha256:
        if actual != sha256:
            raise ChecksumError(
                f"checksum mismatch for {label}: expected sha256 {sha256}, "
                f"got {actual}. {advice}."
            )
        return actual, "verified"
    if not lock_file:
        _warn(f"{label}: no recorded checksum and no lock file; not verified")
        return actual, "unverified"
    key = lock_key or f"{source}/{name}"
    pin = read_pins(lock_file).get(key)
    if pin is None:
        pin = _pin(lock_file, key, actual, actual_size, origin)
        if pin["sha256"] == actual:
            return actual, "pinned on first use"
    if pin["sha256"] != actual:
        raise ChecksumError(
            f"checksum mismatch for {label}: expected sha256 {pin['sha256']} "
            f"(pinned on first use in {lock_file}), got {actual}. {advice}, "
            f"or remove the pin {key!r} from {lock_file} to trust the new file."
        )
    return actual, "verified against pin"


def _openml_location(file_spec, timeout):
    """Resolve an OpenML file URL and md5 from the dataset description."""
    url = OPENML_DESCRIPTION.format(file_spec["openml_id"])
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        desc = json.load(resp)["data_set_description"]
    return desc["url"], desc.get("md5_checksum")


def _extract(archive_path, kind, member, dest):
    """Extract ``member`` of a tgz/zip archive to ``dest`` atomically."""
    tmp = atomic_path(dest)
    try:
        if kind in ("tgz", "tar.gz", "tar"):
            with tarfile.open(archive_path) as tar:
                src = tar.extractfile(member)
                if src is None:
                    raise ValueError(f"{archive_path}: {member} is not a file")
                with src, open(tmp, "wb") as out:
                    shutil.copyfileobj(src, out)
        elif kind == "zip":
            with zipfile.ZipFile(archive_path) as zf, zf.open(member) as src, \
                    open(tmp, "wb") as out:
                shutil.copyfileobj(src, out)
        else:
            raise ValueError(f"unknown archive kind {kind!r}")
        os.replace(tmp, dest)
    except KeyError as exc:
        raise ValueError(f"{archive_path}: archive has no member {member!r}") from exc
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
        raise ValueError(f"{archive_path}: corrupt archive: {exc}") from exc
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _candidates(source, spec, mirror, cache):
    """Yield (location, expected sha256, is_member, kind) in the order to try."""
    roots = [("cache", cache)] if cache else []
    if mirror:
        roots.append(("mirror", mirror))
    for kind, root in roots:
        yield _join(root, source, spec["name"]), spec.get("sha256"), False, kind
        for alt in spec.get("mirror", []):
            yield _join(root, *alt["path"].split("/")), alt.get("sha256"), \
                alt.get("is_member", False), kind
    if mirror:
        return  # a mirror replaces the canonical hosts: never reach the internet
    if spec.get("url"):
        yield spec["url"], spec.get("sha256"), False, "canonical"
    elif spec.get("openml_id"):
        yield "openml", spec.get("sha256"), False, "canonical"
    for url in spec.get("fallback_urls", []):
        yield url, spec.get("sha256"), False, "fallback"


def fetch_file(source, spec, out_dir, mirror=None, cache=None, lock_file=None,
               retries=3, timeout=60.0, backoff=1.0):
    """Obtain one registered file into ``out_dir``, verified.

    Parameters
    ----------
    source : str
        Registry name of the dataset.
    spec : dict
        The file's registry entry (``name``, ``url``, ``sha256``, ...).
    out_dir : str
        Destination directory (``results/data/raw/<dataset>``).
    mirror, cache, lock_file : str or None
        See the module docstring.

    Returns
    -------
    dict
        ``name`` (file in ``out_dir``), ``sha256``, ``size``, ``checksum``,
        ``served_from``.
    """
    os.makedirs(out_dir, exist_ok=True)
    final_name = spec.get("extract_as") or spec["name"]
    final = os.path.join(out_dir, final_name)
    tried = []
    for location, sha256, is_member, kind in _candidates(source, spec, mirror, cache):
        md5 = spec.get("md5")
        if location == "openml":
            location, md5 = _openml_location(spec, timeout)
        dest = final if (is_member or not spec.get("archive")) else \
            os.path.join(out_dir, spec["name"])
        try:
            tmp = fetch_to_temp(location, dest, retries, timeout, backoff)
        except FileNotFoundError as exc:
            tried.append(str(exc))
            continue
        try:
            # A member served by a mirror has its own checksum; an archive or a
            # plain file is held to the canonical one (or its pin).
            key = f"{source}/{final_name if is_member else spec['name']}"
            actual, status = verify(
                tmp, source, spec["name"] if not is_member else final_name, location,
                sha256=sha256, size=None if is_member else spec.get("size"),
                md5=None if is_member else md5, lock_file=lock_file, lock_key=key,
            )
            if cache and kind != "cache" and not is_member:
                _store_in_cache(tmp, cache, source, spec["name"])
            os.replace(tmp, dest)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        if spec.get("archive") and not is_member:
            try:
                _extract(dest, spec["archive"], spec["member"], final)
            finally:
                os.unlink(dest)  # keep only the member the loader reads
        return {
            "name": final_name,
            "sha256": sha256sum(final) if final != dest else actual,
            "archive_sha256": actual if final != dest else None,
            "size": os.path.getsize(final),
            "checksum": status,
            "served_from": location,
        }
    where = f"mirror {mirror}" if mirror else "the canonical source"
    raise FileNotFoundError(
        f"dataset {source!r} file {spec['name']!r} not available from {where}: "
        + "; ".join(tried)
    )


def _store_in_cache(tmp, cache, source, name):
    dest = os.path.join(cache, source, name)
    if os.path.exists(dest):
        return
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    part = atomic_path(dest)
    try:
        shutil.copyfile(tmp, part)
        os.replace(part, dest)
    finally:
        if os.path.exists(part):
            os.unlink(part)


def fetch_dataset(source, out_dir, mirror=None, cache=None, lock_file=None,
                  retries=3, timeout=60.0, backoff=1.0, entry=None):
    """Download and verify every file of a registered dataset, then write its manifest.

    Parameters
    ----------
    source : str
        Registry name.
    out_dir : str
        Destination directory; ``manifest.json`` there is written last.
    mirror, cache : str, optional
        Default to ``$DPCD_DATA_MIRROR`` / ``$DPCD_DATA_CACHE``; empty means none.
    lock_file : str, optional
        Pin file for checksums not in the registry (default
        ``results/data/checksums.lock.json``).
    entry : dict, optional
        Registry entry to use instead of the registry's (tests).

    Returns
    -------
    dict
        The manifest.
    """
    entry = entry if entry is not None else get_entry(source)
    if "generator" in entry:
        raise ValueError(f"dataset {source!r} is generated (dpcd data generate), not downloaded")
    mirror = mirror or os.environ.get("DPCD_DATA_MIRROR") or None
    cache = cache or os.environ.get("DPCD_DATA_CACHE") or None
    lock_file = lock_file or DEFAULT_LOCK_FILE
    files = [
        fetch_file(source, spec, out_dir, mirror, cache, lock_file, retries, timeout, backoff)
        for spec in entry["files"]
    ]
    manifest = {"source": source, "files": files}
    write_json_atomic(os.path.join(out_dir, "manifest.json"), manifest)
    return manifest
