"""One working directory per config: ``snakemake -d DIR --configfile FILE``
from anywhere finds the repository's files (the embedded default config, a
paper's published values) from the workflow's directory, and two configs run
side by side into one MLflow store without overwriting each other's results
or experiments (each config file's experiments are named apart)."""

import os
import re
import shutil
import subprocess

import pytest
import yaml
from mlflow.tracking import MlflowClient

from conftest import BIN, ROOT, TINY, snakemake_env

pytestmark = pytest.mark.workflow


def _snakemake(cwd, *args, env=None):
    cmd = [str(BIN / "snakemake"), "--snakefile", str(ROOT / "Snakefile"), "--cores", "2", *args]
    proc = subprocess.run(cmd, cwd=cwd, env=env or snakemake_env(), capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, f"{' '.join(cmd)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return proc.stdout + proc.stderr


@pytest.mark.parametrize("configfile, prefix, repo_file", [
    (None, "dpcd/", None),
    ("config/config.yaml", "dpcd/", None),
    ("config/paper/dpcd_icml22_quick.yaml", "dpcd/dpcd_icml22_quick/",
     "config/paper/dpcd_icml22_published.csv"),
    ("config/paper/dpscd_aaai21_quick.yaml", "dpcd/dpscd_aaai21_quick/",
     "config/paper/dpscd_aaai21_published.csv"),
])
def test_dry_run_in_a_working_directory_of_its_own(tmp_path, configfile, prefix, repo_file):
    """From a directory without the repository's files: planned, the repo's
    files read from the workflow's directory, experiments under the config's prefix."""
    args = ["--configfile", str(ROOT / configfile)] if configfile else []
    out = _snakemake(tmp_path, "-n", "-p", "-d", str(tmp_path / "run"), *args)
    names = set(re.findall(r"--mlflow-experiment '?([^' ]+)'?", out))
    assert names and all(name.startswith(prefix) for name in names), names
    if prefix == "dpcd/":
        assert not any(name.count("/") > 1 for name in names), names
    assert f"{prefix}summary" in names
    if repo_file:  # named from the working directory: no path of this machine
        (published,) = set(re.findall(r"--published (\S+)", out))
        assert not os.path.isabs(published), published
        assert (tmp_path / "run" / published).resolve() == (ROOT / repo_file).resolve()


def _runs(client, name):
    exp = client.get_experiment_by_name(name)
    assert exp is not None, name
    return {r.info.run_id: r.info.status for r in client.search_runs([exp.experiment_id])}


def test_two_configs_side_by_side_in_one_store(finished_workdir, tmp_path):
    """The finished tiny run (the embedded default config), then another config
    with an experiment of the same name in a working directory of its own,
    logging to the first run's store: both kept whole."""
    first = shutil.copytree(finished_workdir, tmp_path / "first", symlinks=True)
    store = f"sqlite:///{first}/results/mlflow.db"
    client = MlflowClient(store)
    before = {name: _runs(client, name) for name in ("dpcd/exp_a", "dpcd/summary")}
    written = {p: p.read_bytes() for p in (first / "results").rglob("*")
               if p.is_file() and p.suffix in (".csv", ".md", ".png", ".parquet")}

    config = yaml.safe_load(TINY.read_text())
    config["experiments"] = {"exp_a": config["experiments"]["exp_a"]}
    config["experiments"]["exp_a"].update(passes=[2], chunks=1, solvers={
        "dp_cd": {"step": [1.0], "clip": [1.0]}})
    (tmp_path / "tiny_b.yaml").write_text(yaml.safe_dump(config))
    env = snakemake_env()
    env["MLFLOW_TRACKING_URI"] = store
    _snakemake(tmp_path, "-d", "second", "--configfile", "tiny_b.yaml", env=env)

    second = tmp_path / "second" / "results"
    assert (second / "tables" / "exp_a.csv").exists() and (second / "summary.md").exists()
    assert not (second / "mlflow.db").exists()  # the exported store, not the config's
    for path, data in written.items():
        assert path.read_bytes() == data, f"{path} overwritten"
    assert {name: _runs(client, name) for name in before} == before
    new = _runs(client, "dpcd/tiny_b/exp_a")
    assert len(new) >= 2 and set(new.values()) == {"FINISHED"}  # the parent and its child
    assert _runs(client, "dpcd/tiny_b/summary")
    assert not set(new) & set(before["dpcd/exp_a"])
    for run_id in new:  # the parent and its child runs carry their dataset, not its data
        (item,) = client.get_run(run_id).inputs.dataset_inputs
        assert item.dataset.name == "lasso_a/raw" and len(item.dataset.digest) == 32
