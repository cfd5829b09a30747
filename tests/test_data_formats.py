"""Small files in each source format, a local HTTP server, and download tests.

The generated files mimic the distributed ones (CRLF, missing headers, Adult's
test-file quirks, bz2 LIBSVM, tgz archives, NIPS formats). Other data tests
import the helpers from here. Nothing here touches the internet.
"""

import bz2
import copy
import gzip
import hashlib
import http.server
import io
import json
import os
import tarfile
import threading

import numpy as np
import pytest
import yaml

from dpcd.data import download
from dpcd.data.registry import REGISTRY_PATH

# ---------------------------------------------------------------- format writers


def california_data(n=40, seed=0, crlf=True):
    """cal_housing.data text: 9 comma-separated fields, CRLF, no trailing newline."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        households = rng.integers(50, 500)
        rows.append(",".join(str(v) for v in [
            round(-124 + 10 * rng.random(), 2), round(32 + 9 * rng.random(), 2),
            rng.integers(1, 52), households * rng.integers(3, 8),
            round(households * (1 + rng.random()), 1), households * rng.integers(2, 4),
            households, round(0.5 + 10 * rng.random(), 4),
            float(rng.integers(15000, 500001)),
        ]))
    return ("\r\n" if crlf else "\n").join(rows).encode()


def tgz(members):
    """A .tgz archive of {name: bytes}, the same bytes on every call: the gzip
    header's mtime is 0, not the clock (tests build it twice, once for the
    server and once for the registry's checksums, and failed when the two
    calls fell in different seconds)."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz:
        with tarfile.open(fileobj=gz, mode="w") as tar:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def electricity_arff(n=30, seed=0, crlf=False):
    """OpenML-151-like ARFF: nominal day {1..7}, class {UP,DOWN}."""
    rng = np.random.default_rng(seed)
    head = ["@relation electricity", ""]
    head += ["@attribute date numeric", "@attribute day {1,2,3,4,5,6,7}"]
    head += [f"@attribute {c} numeric" for c in
             ["period", "nswprice", "nswdemand", "vicprice", "vicdemand", "transfer"]]
    head += ["@attribute class {UP,DOWN}", "", "@data"]
    rows = []
    for i in range(n):
        vals = [round(i / n, 6), rng.integers(1, 8)] + list(np.round(rng.random(6), 6))
        rows.append(",".join(str(v) for v in vals) + "," + ("UP" if i % 3 == 0 else "DOWN"))
    nl = "\r\n" if crlf else "\n"
    return (nl.join(head + rows) + nl).encode()


def arff_numeric(n, p, target, nominal_target=None, seed=0):
    """ARFF with p numeric features and a numeric or nominal target (madelon, mtp)."""
    rng = np.random.default_rng(seed)
    lines = ["@RELATION gen", ""] + [f"@ATTRIBUTE V{j + 1} NUMERIC" for j in range(p)]
    if nominal_target:
        lines.append(f"@ATTRIBUTE {target} {{{','.join(nominal_target)}}}")
    else:
        lines.append(f"@ATTRIBUTE {target} NUMERIC")
    lines += ["", "@DATA"]
    for i in range(n):
        x = rng.integers(0, 999, p) if nominal_target else np.round(rng.random(p), 4)
        t = nominal_target[i % 2] if nominal_target else round(float(rng.random()), 4)
        lines.append(",".join(str(v) for v in x) + f",{t}")
    return ("\n".join(lines) + "\n").encode()


def libsvm_text(n, p, labels, seed=0, density=0.5):
    """svmlight text with 1-based sorted indices and the given label values."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n):
        idx = np.flatnonzero(rng.random(p) < density) + 1
        feats = " ".join(f"{j}:{rng.random():.4f}" for j in idx)
        lines.append(f"{labels[i % len(labels)]} {feats}".rstrip())
    return ("\n".join(lines) + "\n").encode()


ADULT_ROW = ("39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, "
             "Not-in-family, White, Male, 2174, 0, 40, United-States, {label}")
ADULT_ROW2 = ("50, ?, 83311, HS-grad, 9, Married-civ-spouse, ?, Husband, Black, "
              "Female, 0, 0, 13, ?, {label}")


def adult_files(n_train=40, n_test=20):
    """adult.data / adult.test as UCI serves them (test: header line, labels with '.')."""
    train = [(ADULT_ROW if i % 2 else ADULT_ROW2).format(label="<=50K" if i % 3 else ">50K")
             for i in range(n_train)]
    test = [(ADULT_ROW2 if i % 2 else ADULT_ROW).format(label="<=50K." if i % 3 else ">50K.")
            for i in range(n_test)]
    return ("\n".join(train) + "\n\n").encode(), \
        ("|1x3 Cross validator\n" + "\n".join(test) + "\n").encode()


def nips_sparse(n=20, p=100000, seed=0):
    """dorothea_train.data (1-based indices of ones per line) and .labels (+-1)."""
    rng = np.random.default_rng(seed)
    rows = [" ".join(str(j) for j in np.sort(rng.choice(np.arange(1, 60), 5, replace=False)))
            for _ in range(n)]
    labels = ["1" if i % 2 else "-1" for i in range(n)]
    return ("\n".join(rows) + "\n").encode(), ("\n".join(labels) + "\n").encode()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def source_files():
    """{registry name: {relative mirror path: bytes}} for every downloaded entry."""
    adult_data, adult_test = adult_files()
    dorothea_data, dorothea_labels = nips_sparse()
    return {
        "california": {"california/cal_housing.tgz": tgz(
            {"CaliforniaHousing/cal_housing.data": california_data()})},
        "electricity": {"electricity/electricity.arff": electricity_arff()},
        "phishing": {"phishing/phishing": libsvm_text(40, 68, ["0", "1"])},
        "adult": {"adult/adult.data": adult_data, "adult/adult.test": adult_test},
        "yearpredictionmsd": {
            "yearpredictionmsd/YearPredictionMSD.bz2":
                bz2.compress(libsvm_text(40, 90, ["2001", "1999.0"], density=1.0)),
            "yearpredictionmsd/YearPredictionMSD.t.bz2":
                bz2.compress(libsvm_text(12, 90, ["1985"], seed=1, density=1.0)),
        },
        "madelon": {"madelon/madelon.arff": arff_numeric(30, 5, "Class", ["1", "2"])},
        "mtp": {"mtp/mtp.arff": arff_numeric(30, 6, "oz203")},
        "dorothea": {"dorothea/dorothea_train.data": dorothea_data,
                     "dorothea/dorothea_train.labels": dorothea_labels},
    }


def write_tree(root, files):
    for rel, data in files.items():
        path = os.path.join(root, *rel.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)


def test_registry(path, files_by_source, server_url):
    """Write a registry copy whose URLs point at ``server_url`` and whose recorded
    sha256 are those of the generated files (None stays None: pinned on first use)."""
    with open(REGISTRY_PATH) as fh:
        reg = yaml.safe_load(fh)
    for name, files in files_by_source.items():
        for spec in reg[name]["files"]:
            data = files[f"{name}/{spec['name']}"]
            spec["url"] = f"{server_url}/{name}/{spec['name']}"
            spec.pop("openml_id", None)
            spec.pop("md5", None)
            spec.pop("fallback_urls", None)
            spec.pop("mirror", None)
            if spec.get("sha256"):
                spec["sha256"] = sha256(data)
    with open(path, "w") as fh:
        yaml.safe_dump(reg, fh)
    return reg


test_registry.__test__ = False  # a helper, not a test

# ---------------------------------------------------------------- HTTP server


class Handler(http.server.SimpleHTTPRequestHandler):
    """Serve the tree; ``/truncate/...`` cuts the body short, ``/corrupt/...``
    flips a byte, ``/flaky/...`` answers 503 to the first request of a path."""

    seen = set()

    def log_message(self, *args):
        pass

    def do_GET(self):
        mode, _, rest = self.path.lstrip("/").partition("/")
        if mode not in ("truncate", "corrupt", "flaky"):
            return super().do_GET()
        path = os.path.join(self.directory, *rest.split("/"))
        if not os.path.isfile(path):
            self.send_error(404)
            return
        data = open(path, "rb").read()
        if mode == "flaky" and self.path not in Handler.seen:
            Handler.seen.add(self.path)
            self.send_error(503)
            return
        if mode == "corrupt":
            data = data[:-1] + bytes([data[-1] ^ 0xFF])
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if mode == "truncate":
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(data)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(root dir, base URL) of a local server holding every source's files."""
    root = tmp_path_factory.mktemp("served")
    files = source_files()
    for per_source in files.values():
        write_tree(str(root), per_source)
    handler = lambda *a, **k: Handler(*a, directory=str(root), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    flat = {rel: data for per_source in files.values() for rel, data in per_source.items()}
    yield str(root), f"http://127.0.0.1:{server.server_address[1]}", flat
    server.shutdown()


def _entry(name, url_base, files, **overrides):
    with open(REGISTRY_PATH) as fh:
        entry = copy.deepcopy(yaml.safe_load(fh)[name])
    for spec in entry["files"]:
        spec["url"] = f"{url_base}/{name}/{spec['name']}"
        spec.pop("openml_id", None)
        spec.pop("md5", None)
        spec.pop("mirror", None)
        spec.pop("fallback_urls", None)
        spec["sha256"] = overrides.get("sha256", sha256(files[f"{name}/{spec['name']}"]))
    entry["name"] = name
    return entry


def _leftovers(directory):
    return sorted(os.listdir(directory)) if os.path.isdir(directory) else []


# ---------------------------------------------------------------- download tests


@pytest.mark.parametrize("name", sorted(source_files()))
def test_canonical_download_every_format(served, tmp_path, name):
    """Each source format comes through the canonical-URL path, verified."""
    _, url, files = served
    entry = _entry(name, url, files)
    out = tmp_path / "raw"
    manifest = download.fetch_dataset(name, str(out), entry=entry,
                                      lock_file=str(tmp_path / "lock.json"), backoff=0)
    assert {f["checksum"] for f in manifest["files"]} == {"verified"}
    assert (out / "manifest.json").exists()
    assert not [f for f in _leftovers(out) if f.endswith(".part")]
    if name == "california":  # the archive member is extracted, the archive dropped
        assert _leftovers(out) == ["cal_housing.data", "manifest.json"]


def test_checksum_mismatch_names_file_and_hashes(served, tmp_path):
    _, url, files = served
    entry = _entry("electricity", url, files, sha256="0" * 64)
    with pytest.raises(download.ChecksumError) as err:
        download.fetch_dataset("electricity", str(tmp_path / "raw"), entry=entry,
                               lock_file=str(tmp_path / "lock.json"), backoff=0)
    msg = str(err.value)
    assert "electricity.arff" in msg and "0" * 64 in msg
    assert sha256(files["electricity/electricity.arff"]) in msg and "Delete" in msg
    assert _leftovers(tmp_path / "raw") == []


def test_corrupted_download_fails_and_leaves_nothing(served, tmp_path):
    _, url, files = served
    entry = _entry("phishing", url, files)
    entry["files"][0]["url"] = f"{url}/corrupt/phishing/phishing"
    with pytest.raises(download.ChecksumError):
        download.fetch_dataset("phishing", str(tmp_path / "raw"), entry=entry,
                               lock_file=str(tmp_path / "lock.json"), backoff=0)
    assert _leftovers(tmp_path / "raw") == []


def test_interrupted_transfer_is_retried_then_fails_cleanly(served, tmp_path, capsys):
    _, url, files = served
    entry = _entry("mtp", url, files)
    entry["files"][0]["url"] = f"{url}/truncate/mtp/mtp.arff"
    with pytest.raises(OSError, match="interrupted transfer|after 3 attempts"):
        download.fetch_dataset("mtp", str(tmp_path / "raw"), entry=entry, retries=2,
                               lock_file=str(tmp_path / "lock.json"), backoff=0)
    assert "retrying" in capsys.readouterr().err
    assert _leftovers(tmp_path / "raw") == []


def test_transient_server_error_is_retried(served, tmp_path):
    _, url, files = served
    entry = _entry("madelon", url, files)
    entry["files"][0]["url"] = f"{url}/flaky/madelon/madelon.arff"
    manifest = download.fetch_dataset("madelon", str(tmp_path / "raw"), entry=entry,
                                      lock_file=str(tmp_path / "lock.json"), backoff=0)
    assert manifest["files"][0]["checksum"] == "verified"


def test_trust_on_first_use_pins_then_verifies(served, tmp_path, capsys):
    root, url, files = served
    entry = _entry("phishing", url, files, sha256=None)
    lock = tmp_path / "lock.json"
    m1 = download.fetch_dataset("phishing", str(tmp_path / "a"), entry=entry,
                                lock_file=str(lock), backoff=0)
    assert m1["files"][0]["checksum"] == "pinned on first use"
    assert "trust on first use" in capsys.readouterr().err
    pins = json.loads(lock.read_text())
    assert pins["phishing/phishing"]["sha256"] == sha256(files["phishing/phishing"])
    m2 = download.fetch_dataset("phishing", str(tmp_path / "b"), entry=entry,
                                lock_file=str(lock), backoff=0)
    assert m2["files"][0]["checksum"] == "verified against pin"
    assert "trust on first use" not in capsys.readouterr().err  # warned once
    entry["files"][0]["url"] = f"{url}/corrupt/phishing/phishing"
    with pytest.raises(download.ChecksumError, match="pinned on first use"):
        download.fetch_dataset("phishing", str(tmp_path / "c"), entry=entry,
                               lock_file=str(lock), backoff=0)


def test_mirror_replaces_canonical_host(served, tmp_path):
    """A mirror (local dir or base URL) serves <mirror>/<source>/<file>; the
    canonical URL (unreachable here) is never tried."""
    root, url, files = served
    entry = _entry("adult", "http://127.0.0.1:9/unreachable", files)
    for mirror in (root, url + "/"):
        out = tmp_path / ("dir" if mirror == root else "url")
        manifest = download.fetch_dataset("adult", str(out), mirror=mirror, entry=entry,
                                          lock_file=str(tmp_path / "lock.json"), timeout=5)
        assert [f["served_from"].startswith(mirror.rstrip("/")) for f in manifest["files"]] \
            == [True, True]
    with pytest.raises(FileNotFoundError, match="not available from mirror"):
        download.fetch_dataset("adult", str(tmp_path / "none"), mirror=str(tmp_path / "empty"),
                               entry=entry, lock_file=str(tmp_path / "lock.json"))


def test_mirror_may_serve_extracted_member(tmp_path):
    """California: a mirror holding only the extracted cal_housing.data (as
    ../shared/data does) is accepted against that file's own sha256."""
    data = california_data()
    write_tree(str(tmp_path / "m"), {"california/cal_housing.data": data})
    with open(REGISTRY_PATH) as fh:
        entry = yaml.safe_load(fh)["california"]
    entry["files"][0]["mirror"][0]["sha256"] = sha256(data)
    out = tmp_path / "raw"
    manifest = download.fetch_dataset("california", str(out), mirror=str(tmp_path / "m"),
                                      entry=entry, lock_file=str(tmp_path / "lock.json"))
    assert manifest["files"][0]["sha256"] == sha256(data)
    assert (out / "cal_housing.data").read_bytes() == data


def test_cache_is_filled_then_used(served, tmp_path):
    _, url, files = served
    entry = _entry("mtp", url, files)
    cache = tmp_path / "cache"
    download.fetch_dataset("mtp", str(tmp_path / "a"), cache=str(cache), entry=entry,
                           lock_file=str(tmp_path / "lock.json"))
    assert (cache / "mtp" / "mtp.arff").exists()
    entry["files"][0]["url"] = "http://127.0.0.1:9/unreachable"
    manifest = download.fetch_dataset("mtp", str(tmp_path / "b"), cache=str(cache),
                                      entry=entry, lock_file=str(tmp_path / "lock.json"))
    assert manifest["files"][0]["served_from"].startswith(str(cache))


def test_generated_source_cannot_be_downloaded(tmp_path):
    with pytest.raises(ValueError, match="generated"):
        download.fetch_dataset("sparse_lasso", str(tmp_path))


def test_unknown_dataset_lists_known_names(tmp_path):
    with pytest.raises(ValueError, match="unknown dataset 'nope'.*california"):
        download.fetch_dataset("nope", str(tmp_path))
