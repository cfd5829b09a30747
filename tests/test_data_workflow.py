"""The data rules run by real Snakemake: every registry entry from generated files
served by a local HTTP mirror, a checksum failure, and (when present) the real
California and Electricity copies in ../shared/data used as an offline mirror."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import yaml

from dpcd.data import load_dataset
from dpcd.data.registry import generated_sources
from test_data_formats import served, source_files, test_registry  # noqa: F401

pytestmark = pytest.mark.workflow

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.abspath(os.path.join(REPO, "..", "shared", "data"))
SNAKEMAKE = os.path.join(os.path.dirname(sys.executable), "snakemake")

SNAKEFILE = f"""
configfile: "config.yaml"
wildcard_constraints:
    dataset="[A-Za-z0-9_]+",
    variant="[A-Za-z0-9_]+",
include: "{REPO}/workflow/rules/data_common.smk"
include: "{REPO}/workflow/rules/data.smk"
"""


def run_workflow(workdir, config, targets, env_extra=None):
    os.makedirs(workdir, exist_ok=True)
    with open(os.path.join(workdir, "Snakefile"), "w") as fh:
        fh.write(SNAKEFILE)
    with open(os.path.join(workdir, "config.yaml"), "w") as fh:
        yaml.safe_dump(config, fh)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    env.pop("DPCD_DATA_MIRROR", None)
    env.update(env_extra or {})
    return subprocess.run(
        [SNAKEMAKE, "--cores", "4", "--show-failed-logs", *targets],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=300,
    )


EXPECT = {  # source: (variant, n_features or None, task)
    "california": ("standardize", 8, "regression"),
    "electricity": ("raw", 8, "binary"),
    "phishing": ("maxabs_unitnorm", None, "binary"),
    "adult": ("maxabs_unitnorm", None, "binary"),
    "yearpredictionmsd": ("maxabs_unitnorm", 90, "regression"),
    "madelon": ("raw", 5, "binary"),
    "mtp": ("standardize", 6, "regression"),
    "dorothea": ("raw", None, "binary"),
}


def test_every_registry_entry_through_the_rules(served, tmp_path):  # noqa: F811
    """All downloaded entries via an HTTP mirror (generated files in each format)
    plus all generated entries, through download/generate and preprocess."""
    root, url, _ = served
    reg_path = tmp_path / "registry.yaml"
    test_registry(str(reg_path), source_files(), url)
    datasets = {name: {"source": name} for name in EXPECT}
    for name in generated_sources():
        datasets[f"{name}_small"] = {"source": name,
                                     "params": {"n_samples": 30, "n_features": 12, "seed": 3}}
    datasets["sparse_lasso_small"]["params"]["n_informative"] = 4
    datasets["yearpredictionmsd_standin_small"]["params"]["n_test"] = 6
    # dense enough that no column is empty (preprocessing drops empty ones)
    datasets["sparse_binary_small"]["params"].update(density=0.5, n_informative=4)
    targets = [f"results/data/processed/{k}/{EXPECT.get(k, ('standardize',))[0]}.npz"
               for k in datasets]
    config = {"data": {"mirror": url + "/", "lock_file": "lock.json"}, "datasets": datasets}
    res = run_workflow(str(tmp_path / "wf"), config, targets,
                       {"DPCD_DATA_REGISTRY": str(reg_path)})
    assert res.returncode == 0, res.stderr[-3000:]
    for key, target in zip(datasets, targets):
        ds = load_dataset(str(tmp_path / "wf" / target))
        variant, p, task = EXPECT.get(key, ("standardize", 12, None))
        assert ds.meta["variant"] == variant and ds.meta["dataset"] == key
        if p is not None:
            assert ds.X.shape[1] == p, key
        if ds.meta["task"] == "binary":
            assert set(np.unique(ds.y)) <= {-1.0, 1.0}
        if variant == "maxabs_unitnorm":
            assert ds.X_val is not None and ds.X_test is not None
            norms = np.sqrt(np.asarray((ds.X.multiply(ds.X) if hasattr(ds.X, "multiply")
                                        else ds.X**2).sum(axis=1)).ravel())
            assert np.allclose(norms[norms > 0], 1.0)
    dorothea = load_dataset(str(tmp_path / "wf" / targets[list(datasets).index("dorothea")]))
    assert dorothea.X.format == "csc" and dorothea.X.shape[1] < 100000  # zero columns dropped
    pins = yaml.safe_load((tmp_path / "wf" / "lock.json").read_text())
    assert "phishing/phishing" in pins and "dorothea/dorothea_train.data" in pins


def test_checksum_mismatch_in_workflow_leaves_no_output(served, tmp_path):  # noqa: F811
    """The real registry's adult.data sha256 does not match the generated file:
    the rule fails with both hashes and leaves neither manifest nor processed file."""
    root, url, _ = served
    config = {"data": {"mirror": url + "/"}, "datasets": {"adult": {"source": "adult"}}}
    res = run_workflow(str(tmp_path / "wf"), config,
                       ["results/data/processed/adult/raw.npz"])
    assert res.returncode != 0
    log = (tmp_path / "wf" / "results/logs/data_download/adult.log").read_text()
    assert "checksum mismatch" in log and "5b00264637dbfec36bdeaab5676b0b309ff9eb78" in log
    assert not (tmp_path / "wf" / "results/data/raw/adult/manifest.json").exists()
    assert not (tmp_path / "wf" / "results/data/processed/adult/raw.npz").exists()


@pytest.mark.skipif(not os.path.isdir(SHARED), reason="../shared/data not present")
def test_real_california_and_electricity_offline_from_mirror(tmp_path):
    """Done criterion: with ../shared/data as the mirror the workflow fetches,
    verifies and preprocesses both offline; counts match the MANIFEST."""
    config = {"data": {"mirror": SHARED},
              "datasets": {"california": {"source": "california"},
                           "electricity": {"source": "electricity"}}}
    targets = [f"results/data/processed/{d}/{v}.npz" for d in ("california", "electricity")
               for v in ("raw", "standardize")]
    res = run_workflow(str(tmp_path / "wf"), config, targets)
    assert res.returncode == 0, res.stderr[-3000:]
    cal = load_dataset(str(tmp_path / "wf" / targets[0]))
    assert cal.X.shape == (20640, 8)
    assert cal.meta["feature_names"][:3] == ["MedInc", "HouseAge", "AveRooms"]
    assert abs(cal.y.max() - 5.00001) < 1e-9  # target / 1e5, capped values
    ele = load_dataset(str(tmp_path / "wf" / targets[2]))
    assert ele.X.shape == (45312, 8)
    assert ele.meta["label_balance"] == {"+1": 19237, "-1": 26075}  # UP / DOWN
    std = load_dataset(str(tmp_path / "wf" / targets[3]))
    assert np.allclose(std.X.mean(axis=0), 0, atol=1e-10)
    assert "standardisation" in std.meta["nonprivate_inputs"]
    for d in ("california", "electricity"):
        manifest = (tmp_path / "wf" / f"results/data/raw/{d}/manifest.json").read_text()
        assert '"checksum": "verified"' in manifest
