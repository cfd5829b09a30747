"""Bad input, everywhere a user can give it (DESIGN.md, Reliability).

Every case checks the same promise: an error that names the file, the field or
the value, a non-zero exit, nothing under ``results/`` a later run could take as
done, and no MLflow run marked FINISHED. The layers:

- CONFIG: the workflow's config, checked by ``snakemake -n`` (validation runs
  when the Snakefile is parsed, before any job);
- DATA: raw files served by a local mirror directory or an HTTP server on
  127.0.0.1, through ``dpcd data download`` / ``preprocess`` as the rules call them;
- STAGE: the stage commands (``dpcd solve``, ``smoothness``, ``reference``,
  ``budget``) given what the schema would have refused;
- ESTIMATOR: the scikit-learn estimators;
- and the real console script and the real workflow for a few of them.
"""

import copy
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import yaml
from mlflow.tracking import MlflowClient

from dpcd.cli import main
from dpcd.data import save_dataset
from dpcd.data.registry import REGISTRY_PATH
from dpcd.estimators import DPCoordinateDescentClassifier, DPCoordinateDescentRegressor
from test_data_formats import Handler, california_data, libsvm_text, sha256, write_tree

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TINY = yaml.safe_load((ROOT / "tests" / "workflow" / "tiny.yaml").read_text())


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "DPCD_"))}
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / "results" / ".numba_cache"))
    env.update(extra)
    return env


def _workdir(path, config_text):
    for name in ("Snakefile", "workflow", "envs"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, path / name)
    (path / "config").mkdir()
    (path / "config" / "config.yaml").write_text(config_text)
    return path


def _files_under(path):
    """Files a later run could take as done (Snakemake's own metadata aside)."""
    path = Path(path)
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()) \
        if path.exists() else []


def _finished_runs(db):
    if not Path(db).exists():
        return []
    client = MlflowClient(f"sqlite:///{db}")
    ids = [e.experiment_id for e in client.search_experiments()]
    return [r for r in client.search_runs(ids, max_results=5000) if r.info.status == "FINISHED"]


# ====================================================================== CONFIG
def _exp(config):
    return config["experiments"]["exp_a"]


def _set(path, value):
    """An edit setting config[path...] = value."""

    def edit(config):
        node = config
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return edit


E = ("experiments", "exp_a")
# id -> (edit of the tiny config or replacement text, words the error must contain)
CONFIG_CASES = {
    "malformed-yaml": ("experiments: {exp_a: [\n", ["config/config.yaml", "line 2"]),
    "tab-indented-yaml": ("datasets:\n\tlasso_a: {}\n", ["config/config.yaml", "line 2"]),
    "not-a-mapping": ("- just\n- a list\n", ["config/config.yaml", "mapping", "list"]),
    "unknown-top-level-key": (_set(("extras",), 1), ["extras"]),
    "unknown-experiment-key": (_set((*E, "pases"), [2]), ["pases"]),
    "unknown-dataset-key": (_set(("datasets", "lasso_a", "sead"), 1), ["sead"]),
    "unknown-data-key": (_set(("data",), {"mirrror": "/tmp"}), ["mirrror"]),
    "unknown-solver": (_set((*E, "solvers", "newton"), {"step": [1.0]}), ["newton"]),
    "unknown-solver-parameter": (_set((*E, "solvers", "dp_cd", "lr"), [1.0]), ["lr"]),
    "passes-wrong-type": (_set((*E, "passes"), "ten"), ["passes", "ten"]),
    "seeds-wrong-type": (_set((*E, "seeds"), "3"), ["seeds", "'3'"]),
    "epsilon-wrong-type": (_set((*E, "privacy", "epsilon"), "1"), ["epsilon", "'1'"]),
    "tracking-uri-wrong-type": (_set(("mlflow", "tracking_uri"), 5), ["tracking_uri"]),
    "epsilon-zero": (_set((*E, "privacy", "epsilon"), 0), ["epsilon"]),
    "epsilon-negative": (_set((*E, "privacy", "epsilon"), -1.0), ["epsilon", "-1.0"]),
    "epsilon-list-with-zero": (_set((*E, "privacy", "epsilon"), [1.0, 0]), ["epsilon"]),
    "delta-zero": (_set((*E, "privacy", "delta"), 0), ["delta"]),
    "noise-unknown": (_set((*E, "privacy", "noise"), "exact"), ["noise", "exact"]),
    "delta-one": (_set((*E, "privacy", "delta"), 1), ["delta"]),
    "delta-above-one": (_set((*E, "privacy", "delta"), 1.5), ["delta", "1.5"]),
    "passes-zero": (_set((*E, "passes"), [0]), ["passes"]),
    "passes-negative": (_set((*E, "passes"), [2, -3]), ["passes", "-3"]),
    "passes-empty": (_set((*E, "passes"), []), ["passes"]),
    "seeds-zero": (_set((*E, "seeds"), 0), ["seeds"]),
    "step-grid-empty": (_set((*E, "solvers", "dp_cd", "step"), []), ["step"]),
    "clip-grid-zero": (_set((*E, "solvers", "dp_cd", "clip"), [0.0]), ["clip"]),
    "geomspace-num-zero": (_set((*E, "solvers", "dp_cd", "clip"), {"geomspace": [1, 10, 0]}),
                           ["clip", "geomspace"]),
    "solvers-empty": (_set((*E, "solvers"), {}), ["solvers"]),
    "experiments-empty": (_set(("experiments",), {}), ["experiments"]),
    "datasets-missing": (lambda c: c.pop("datasets"), ["datasets"]),
    "dataset-missing-from-config": (_set((*E, "dataset"), "nowhere"), ["nowhere", "lasso_a"]),
    "source-missing-from-registry": (_set(("datasets", "lasso_a", "source"), "mnist"),
                                     ["datasets.lasso_a.source", "mnist"]),
    "loss-unknown": (_set((*E, "problem", "loss"), "huber"), ["loss", "huber"]),
    "alpha-negative": (_set((*E, "problem", "alpha"), -0.1), ["alpha", "-0.1"]),
    "chunk-core-hours-zero": (_set(("chunk_core_hours",), 0), ["chunk_core_hours"]),
    "validation-split-unknown": (_set((*E, "validation_split"), "per_run"),
                                 ["validation_split", "per_run"]),
    "reserved-experiment-name": (lambda c: c["experiments"].update(summary=_exp(c)),
                                 ["summary"]),
}


# The schema's own cases are also checked in-process (milliseconds each); these
# go through `snakemake -n` too: one of each kind (an unknown key, a wrong
# type, a bound, an empty grid: the same schema validation for every key), and
# every check the Snakefile makes itself.
DRY_RUN_CASES = [
    "malformed-yaml", "tab-indented-yaml", "not-a-mapping", "unknown-top-level-key",
    "unknown-solver", "passes-wrong-type", "epsilon-zero", "delta-above-one",
    "step-grid-empty", "dataset-missing-from-config", "source-missing-from-registry",
    "reserved-experiment-name",
]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def _config(edit):
    if isinstance(edit, str):
        return edit
    config = copy.deepcopy(TINY)
    edit(config)
    return yaml.safe_dump(config, sort_keys=False)


@pytest.mark.parametrize(
    "case", sorted(c for c in CONFIG_CASES if not isinstance(CONFIG_CASES[c][0], str)
                   and c not in ("dataset-missing-from-config", "source-missing-from-registry",
                                 "reserved-experiment-name",
                                 # the registry refuses it when the workflow plans
                                 # (solvers may be registered from outside dpcd)
                                 "unknown-solver"))
)
def test_bad_config_is_refused_by_the_schema(case):
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    edit, words = CONFIG_CASES[case]
    with pytest.raises(WorkflowError) as err:
        validate(yaml.safe_load(_config(edit)), str(SCHEMA))
    for word in words:
        assert word in str(err.value), f"{word!r} not in:\n{err.value}"


@pytest.mark.workflow
@pytest.mark.parametrize("case", DRY_RUN_CASES)
def test_bad_config_fails_at_parse_time(tmp_path, case):
    edit, words = CONFIG_CASES[case]
    workdir = _workdir(tmp_path, _config(edit))
    proc = subprocess.run([str(BIN / "snakemake"), "-n", "--cores", "1"], cwd=workdir,
                          env=_env(), capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-2000:]
    for word in words:
        assert word in out, f"{word!r} not in:\n{out[-3000:]}"
    assert not (workdir / "results").exists()


# ======================================================================== DATA
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """An HTTP server on 127.0.0.1 over a directory the cases fill
    (``/truncate/...`` cuts a body short, ``/corrupt/...`` flips a byte)."""
    root = tmp_path_factory.mktemp("http")
    handler = lambda *a, **k: Handler(*a, directory=str(root), **k)  # noqa: E731
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def _cal_rows(edit_row=None, n=30):
    lines = california_data(n=n, crlf=False).decode().split("\n")
    if edit_row:
        lines = edit_row(lines)
    return "\n".join(lines).encode()


def _field(row, col, value):
    def edit(lines):
        fields = lines[row].split(",")
        fields[col] = value
        lines[row] = ",".join(fields)
        return lines

    return edit


# id -> (source, served bytes, recorded-bytes (None = the served ones), how it is
#        served: "mirror" dir, "http", "truncate" or "corrupt", variant, words)
GOOD_CAL = _cal_rows()
DATA_CASES = {
    "nan-feature": ("california", _cal_rows(_field(2, 3, "nan")), None, "mirror", "raw",
                    ["line 3", "totalRooms", "cal_housing.data"]),
    "inf-feature": ("california", _cal_rows(_field(4, 7, "inf")), None, "mirror", "raw",
                    ["row 4", "MedInc", "inf"]),
    "nan-label": ("california", _cal_rows(_field(1, 8, "nan")), None, "mirror", "raw",
                  ["line 2", "medianHouseValue", "'nan'"]),
    "text-in-numeric-column": ("california", _cal_rows(_field(0, 2, "old")), None, "mirror",
                               "raw", ["line 1", "housingMedianAge"]),
    "one-row-n-below-2": ("california", _cal_rows(n=1), None, "mirror", "raw",
                          ["'ds'", "1 training rows (need >= 2)"]),
    "empty-file": ("california", b"", None, "mirror", "raw", ["cal_housing.data"]),
    "label-outside-set": ("phishing", libsvm_text(20, 68, ["0", "1", "2"]), None, "mirror",
                          "raw", ["phishing", "label", "2"]),
    "every-column-zero": ("phishing", b"1\n-1\n1 \n", None, "mirror", "raw",
                          ["'ds'", "every column", "all-zero"]),
    "unknown-variant": ("california", GOOD_CAL, None, "mirror", "whitened",
                        ["'whitened'", "standardize"]),
    "wrong-sha256": ("california", GOOD_CAL, GOOD_CAL[:-1] + b"?", "mirror", "raw",
                     ["cal_housing.data", "checksum mismatch", sha256(GOOD_CAL)]),
    "truncated-in-mirror": ("california", GOOD_CAL[: len(GOOD_CAL) // 2], GOOD_CAL, "mirror",
                            "raw", ["cal_housing.data", "size mismatch"]),
    "truncated-transfer": ("california", GOOD_CAL, None, "truncate", "raw",
                           ["cal_housing.data", "interrupted transfer"]),
    "corrupted-transfer": ("california", GOOD_CAL, None, "corrupt", "raw",
                           ["cal_housing.data", "checksum mismatch"]),
    "missing-on-server": ("california", None, GOOD_CAL, "http", "raw",
                          ["cal_housing.data", "HTTP 404"]),
}


def _registry(path, source, recorded, url):
    """A registry copy whose ``source`` has one plain file with ``recorded``'s checksum."""
    reg = yaml.safe_load(Path(REGISTRY_PATH).read_text())
    entry = reg[source]
    name = entry["files"][0].get("extract_as") or entry["files"][0]["name"]
    entry["files"] = [{"name": name, "url": url + f"/{source}/{name}", "sha256": sha256(recorded),
                       "size": len(recorded)}]
    Path(path).write_text(yaml.safe_dump(reg))
    return name


@pytest.mark.parametrize("case", sorted(DATA_CASES))
def test_bad_data_through_the_data_commands(tmp_path, server, monkeypatch, capsys, case):
    source, served, recorded, how, variant, words = DATA_CASES[case]
    root, url = server
    sub = root / case
    base = f"{url}/{case}" if how == "http" else f"{url}/{how}/{case}"
    name = _registry(tmp_path / "registry.yaml", source,
                     recorded if recorded is not None else served, base)
    if served is not None:
        write_tree(str(sub if how != "mirror" else tmp_path / "mirror"),
                   {f"{source}/{name}": served})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPCD_DATA_REGISTRY", str(tmp_path / "registry.yaml"))
    for var in ("DPCD_DATA_MIRROR", "DPCD_DATA_CACHE", "DPCD_DATA_LOCK_FILE"):
        monkeypatch.delenv(var, raising=False)
    spec = json.dumps({"source": source})
    raw_dir = "results/data/raw/ds"
    mirror = ["--mirror", str(tmp_path / "mirror")] if how == "mirror" else []
    rc = main(["data", "download", "--dataset", "ds", "--spec", spec, "--out-dir", raw_dir,
               "--retries", "1", *mirror])
    downloaded = rc == 0
    if downloaded:
        rc = main(["data", "preprocess", "--dataset", "ds", "--spec", spec,
                   "--variant", variant, "--raw-dir", raw_dir,
                   "--out", f"results/data/processed/ds/{variant}.npz"])
    err = capsys.readouterr().err
    assert rc == 2, err
    for word in words:
        assert word in err, f"{word!r} not in {err!r}"
    files = _files_under(tmp_path / "results")
    assert not [f for f in files if f.endswith(".part") or f.startswith("data/processed")]
    if not downloaded:  # nothing of a download that failed verification
        assert files == [], files


# ======================================================================= STAGE
@pytest.fixture(scope="module")
def stage(tmp_path_factory):
    """Valid inputs of the solve stage, made by the stage commands themselves."""
    root = tmp_path_factory.mktemp("stage")
    cwd = os.getcwd()
    old = os.environ.get("MLFLOW_TRACKING_URI")
    os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{root}/results/mlflow.db"
    os.chdir(root)
    try:
        gen = {"source": "sparse_lasso",
               "params": {"n_samples": 40, "n_features": 8, "n_informative": 3}}
        problem = {"loss": "squares", "penalty": "l1", "alpha": 0.05}
        for argv in (
            ["data", "generate", "--dataset", "d", "--spec", json.dumps(gen),
             "--out", "results/data/raw/d/generated.npz"],
            ["data", "preprocess", "--dataset", "d", "--spec", json.dumps(gen), "--variant",
             "raw", "--raw-dir", "results/data/raw/d", "--out", "results/data/d.npz"],
            ["smoothness", "--data", "results/data/d.npz", "--loss", "squares",
             "--out", "results/smoothness.json"],
            ["reference", "--data", "results/data/d.npz", "--problem", json.dumps(problem),
             "--out", "results/reference.json"],
        ):
            assert main(argv) == 0, argv
    finally:
        os.chdir(cwd)
        if old is None:
            os.environ.pop("MLFLOW_TRACKING_URI")
        else:
            os.environ["MLFLOW_TRACKING_URI"] = old
    spec = {"dataset": "d", "variant": "raw", "problem": problem,
            "privacy": {"epsilon": 1.0}, "passes": [2], "seeds": 2, "base_seed": 0,
            "experiment": "e", "solver": "dp_cd", "grid": {"step": [1.0], "clip": [1.0]},
            "chunks": 1}
    return root, spec


def _spec_edit(path, value):
    def edit(spec):
        _set(path, value)(spec)
        return spec

    return edit


# id -> (edit of a valid solve spec, words)
SOLVE_CASES = {
    "epsilon-zero": (_spec_edit(("privacy", "epsilon"), 0.0), ["epsilon", "> 0", "0.0"]),
    "epsilon-negative": (_spec_edit(("privacy", "epsilon"), -2.0), ["epsilon", "-2.0"]),
    "epsilon-not-a-number": (_spec_edit(("privacy", "epsilon"), "x"), ["'x'"]),
    "delta-zero": (_spec_edit(("privacy", "delta"), 0.0), ["delta", "(0, 1)"]),
    "delta-one": (_spec_edit(("privacy", "delta"), 1.0), ["delta", "(0, 1)"]),
    "passes-zero": (_spec_edit(("passes",), [0]), ["passes", "0"]),
    "passes-negative": (_spec_edit(("passes",), [-1]), ["passes", "-1"]),
    "step-grid-empty": (_spec_edit(("grid", "step"), []), ["empty grid", "step"]),
    "clip-zero": (_spec_edit(("grid", "clip"), [0.0]), ["clip", "> 0"]),
    "step-negative": (_spec_edit(("grid", "step"), [-1.0]), ["step", "-1.0"]),
    "seeds-zero": (_spec_edit(("seeds",), 0), ["seeds", "0"]),
    "solver-unknown": (_spec_edit(("solver",), "newton"), ["newton"]),
    "chunk-outside": (lambda spec: spec, ["chunk 3"]),
}


@pytest.mark.parametrize("case", sorted(SOLVE_CASES))
def test_bad_solve_spec(stage, monkeypatch, capsys, case):
    root, spec = stage
    edit, words = SOLVE_CASES[case]
    out = root / "results" / "runs" / case / "chunk0.parquet"
    monkeypatch.chdir(root)
    rc = main(["solve", "--spec", json.dumps(edit(copy.deepcopy(spec))),
               "--chunk", "3" if case == "chunk-outside" else "0",
               "--data", "results/data/d.npz", "--smoothness", "results/smoothness.json",
               "--reference", "results/reference.json",
               "--mlflow-runs", str(out.with_suffix(".mlflow.jsonl.gz")), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2, err
    for word in words:
        assert word in err, f"{word!r} not in {err!r}"
    assert not out.parent.exists() or not list(out.parent.iterdir())
    assert _finished_runs(root / "results" / "mlflow.db") == []


def _processed(path, X, y):
    save_dataset(str(path), X, y, {"dataset": "x", "task": "regression"})
    return str(path)


# id -> (argv builder given a tmp dir, words)
def _zero_column(tmp):
    X = np.random.default_rng(0).normal(size=(10, 4))
    X[:, [1, 3]] = 0.0
    return ["smoothness", "--data", _processed(tmp / "z.npz", X, np.ones(10)),
            "--loss", "squares", "--out", str(tmp / "results" / "s.json")]


def _nan_reference(tmp):
    X = np.random.default_rng(0).normal(size=(10, 4))
    X[2, 1] = np.nan
    return ["reference", "--data", _processed(tmp / "n.npz", X, np.ones(10)),
            "--problem", '{"loss": "squares", "penalty": "l1", "alpha": 0.1}',
            "--out", str(tmp / "results" / "r.json")]


def _logistic_labels(tmp):
    X = np.random.default_rng(0).normal(size=(10, 4))
    y = np.arange(10.0) % 3
    return ["reference", "--data", _processed(tmp / "l.npz", X, y),
            "--problem", '{"loss": "logistic", "penalty": "l2", "alpha": 0.1}',
            "--out", str(tmp / "results" / "r.json")]


def _budget(**bad):
    args = {"epsilon": "1", "delta": "1e-5", "n": "100", "p": "5", "passes": "2", **bad}
    return lambda tmp: ["budget", "--algorithm", "dp_cd",
                        *[x for k, v in args.items() for x in (f"--{k}", v)]]


STAGE_CASES = {
    "smoothness-zero-columns": (_zero_column, ["z.npz", "[1, 3]", "M_j = 0"]),
    "reference-nan": (_nan_reference, ["NaN"]),
    "reference-labels-outside-pm1": (_logistic_labels, ["labels", "y[0] = 0.0"]),
    "smoothness-missing-file": (lambda tmp: ["smoothness", "--data", str(tmp / "no.npz"),
                                             "--loss", "squares", "--out",
                                             str(tmp / "results" / "s.json")], ["no.npz"]),
    "budget-epsilon-zero": (_budget(epsilon="0"), ["epsilon", "> 0"]),
    "budget-delta-one": (_budget(delta="1"), ["delta", "(0, 1)"]),
    "budget-n-one": (_budget(n="1"), ["n must be", "1"]),
    "budget-passes-zero": (_budget(passes="0"), ["passes"]),
}


@pytest.mark.parametrize("case", sorted(STAGE_CASES))
def test_bad_stage_input(tmp_path, monkeypatch, capsys, case):
    build, words = STAGE_CASES[case]
    monkeypatch.chdir(tmp_path)
    rc = main(build(tmp_path))
    err = capsys.readouterr().err
    assert rc == 2, err
    for word in words:
        assert word in err, f"{word!r} not in {err!r}"
    assert _files_under(tmp_path / "results") == []


def test_console_script_exits_non_zero(tmp_path):
    """The real ``dpcd`` command: one line naming the value, exit status 2."""
    proc = subprocess.run(
        [str(BIN / "dpcd"), "data", "generate", "--dataset", "d", "--spec",
         '{"source": "sparse_lasso", "params": {"n_samples": 1, "n_features": 5}}',
         "--out", "results/d.npz"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith("dpcd data: error:") and "n_samples" in proc.stderr
    assert _files_under(tmp_path / "results") == []


# =================================================================== ESTIMATOR
def _regression(n=30, p=5):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, p))
    return X, X @ rng.normal(size=p)


def _with(X, i, j, value):
    X = X.copy()
    X[i, j] = value
    return X


X0, Y0 = _regression()
# id -> (estimator, fit arguments, words)
ESTIMATOR_CASES = {
    "nan-feature": (DPCoordinateDescentRegressor(), (_with(X0, 3, 1, np.nan), Y0), ["NaN"]),
    "inf-feature": (DPCoordinateDescentRegressor(), (_with(X0, 0, 2, np.inf), Y0),
                    ["infinity"]),
    "nan-target": (DPCoordinateDescentRegressor(), (X0, np.where(np.arange(30) == 4, np.nan, Y0)),
                   ["NaN"]),
    # all-zero columns are accepted (issue 31: tests/test_estimators_practitioner.py)
    "one-sample": (DPCoordinateDescentRegressor(), (X0[:1], Y0[:1]), ["minimum of 2"]),
    "no-sample": (DPCoordinateDescentRegressor(), (X0[:0], Y0[:0]), ["0 sample"]),
    "no-feature": (DPCoordinateDescentRegressor(), (X0[:, :0], Y0), ["0 feature"]),
    "three-classes": (DPCoordinateDescentClassifier(), (X0, np.arange(30) % 3),
                      ["binary"]),
    "one-class": (DPCoordinateDescentClassifier(), (X0, np.ones(30)), ["1 class"]),
    "epsilon-zero": (DPCoordinateDescentRegressor(epsilon=0.0), (X0, Y0), ["epsilon", "> 0"]),
    "epsilon-negative": (DPCoordinateDescentRegressor(epsilon=-1.0), (X0, Y0), ["epsilon"]),
    "epsilon-text": (DPCoordinateDescentRegressor(epsilon="one"), (X0, Y0), ["epsilon", "one"]),
    "delta-zero": (DPCoordinateDescentRegressor(delta=0.0), (X0, Y0), ["delta", "(0, 1)"]),
    "delta-one": (DPCoordinateDescentRegressor(delta=1.0), (X0, Y0), ["delta", "(0, 1)"]),
    "passes-zero": (DPCoordinateDescentRegressor(passes=0), (X0, Y0), ["passes"]),
    "passes-negative": (DPCoordinateDescentRegressor(passes=-3), (X0, Y0), ["passes"]),
}


@pytest.mark.parametrize("case", sorted(ESTIMATOR_CASES))
def test_bad_estimator_call(case):
    estimator, (X, y), words = ESTIMATOR_CASES[case]
    with pytest.raises(ValueError) as err:
        estimator.fit(X, y)
    for word in words:
        assert word in str(err.value), f"{word!r} not in {str(err.value)!r}"
    assert not hasattr(estimator, "coef_")


# ==================================================================== WORKFLOW
@pytest.mark.workflow
def test_bad_data_stops_the_workflow_cleanly(tmp_path):
    """NaN in a downloaded file: the real workflow fails at preprocessing, its log
    names the line and the column, and nothing downstream exists or is FINISHED."""
    data = _cal_rows(_field(5, 4, "nan"))
    write_tree(str(tmp_path / "mirror"), {"california/cal_housing.data": data})
    _registry(tmp_path / "registry.yaml", "california", data, "http://127.0.0.1:9")
    config = copy.deepcopy(TINY)
    config["datasets"] = {"cal": {"source": "california"}}
    config["experiments"] = {"exp_a": {**_exp(config), "dataset": "cal"}}
    (tmp_path / "wf").mkdir()
    workdir = _workdir(tmp_path / "wf", yaml.safe_dump(config))
    env = _env(DPCD_DATA_MIRROR=str(tmp_path / "mirror"),
               DPCD_DATA_REGISTRY=str(tmp_path / "registry.yaml"))
    proc = subprocess.run([str(BIN / "snakemake"), "--cores", "2"], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    log = (workdir / "results/logs/data_preprocess/cal/raw.log").read_text()
    assert "line 6" in log and "totalBedrooms" in log and "cal_housing.data" in log
    produced = _files_under(workdir / "results")
    for stage in ("data/processed", "smoothness", "reference", "runs", "tables", "figures",
                  "summary"):
        assert not [f for f in produced if f.startswith(stage)], produced
    assert _finished_runs(workdir / "results" / "mlflow.db") == []
