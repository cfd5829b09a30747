"""The calibrate stage (workflow/rules/calibrate.smk): every private solver
entry's noise calibrated once before its solve jobs, which only read it; an
edit calibrates only its new events and reruns only the jobs it changes."""

import json
import shutil
import subprocess
import sys

import yaml

from conftest import planned_jobs, snakemake, snakemake_env

PRIVATE = {("exp_a", "dp_cd"), ("exp_a", "dp_sgd"), ("exp_b", "dp_cd")}


def _entries(results):
    return {path.name for path in (results / "calibration").glob("*/*.json")}


def _records(results, dataset):
    """The calibrate jobs' records of one dataset: output name -> record."""
    return {path.name: json.loads(path.read_text())
            for path in (results / "calibrated" / dataset).rglob("*.json")}


def test_solve_jobs_read_every_calibration_the_stage_made(finished_workdir):
    results = finished_workdir / "results"
    records = {**_records(results, "lasso_a"), **_records(results, "lasso_b")}
    # one per private entry (none for the non-private cd)
    assert sorted(r["spec"]["solver"] for r in records.values()) == ["dp_cd", "dp_cd", "dp_sgd"]
    for record in records.values():
        assert record["noise"] and all(0 < row["epsilon_achieved"] <= row["epsilon"] == 5.0
                                       for row in record["noise"])
    for experiment, solver in PRIVATE:
        timings = list((results / "runs" / experiment / solver).glob("chunk*.timing.json"))
        assert timings
        for path in timings:  # asked for calibrations, computed none
            calibrations = json.loads(path.read_text())["calibrations"]
            assert calibrations["calls"] > 0 and calibrations["computed"] == 0


def test_a_calibration_read_from_the_cache_imports_no_dp_accounting(finished_workdir):
    code = (
        "import json, sys\n"
        "from dpcd import algorithms\n"
        "from dpcd.algorithms.problem import Probe\n"
        "from dpcd.privacy import cache\n"
        "shape = json.load(open(sys.argv[1]))\n"
        "n = shape['n_samples']\n"
        "cal = algorithms.get('dp_cd').privacy.calibrate(\n"
        "    Probe(n, shape['n_features']), {'passes': 2, 'clip': 1.0, 'step': 1.0},\n"
        "    algorithms.Budget(5.0, 1.0 / n ** 2))\n"
        "print(json.dumps([cache.STATS['computed'], 'dp_accounting' in sys.modules]))\n"
    )
    results = finished_workdir / "results"
    env = {**snakemake_env(), "DPCD_CALIBRATION_CACHE": str(results / "calibration")}
    smoothness = next((results / "smoothness" / "lasso_b").rglob("squares.json"))
    out = subprocess.run([sys.executable, "-c", code, str(smoothness)], env=env, check=True,
                         capture_output=True, text=True).stdout
    assert json.loads(out) == [0, False]


def test_a_new_epsilon_calibrates_only_its_events(finished_workdir, tmp_path):
    workdir = tmp_path / "copy"
    shutil.copytree(finished_workdir, workdir, symlinks=True)
    path = workdir / "config" / "config.yaml"
    config = yaml.safe_load(path.read_text())
    config["experiments"]["exp_b"]["privacy"]["epsilon"] = [5.0, 2.0]
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    jobs = planned_jobs(workdir)
    assert jobs["calibrate"] == 1 and jobs["solve"] == 1  # exp_b's dp_cd only
    results = workdir / "results"
    before, (old,) = _entries(results), _records(results, "lasso_b").values()
    snakemake(workdir, "--until", "calibrate")
    records = _records(results, "lasso_b")
    assert len(records) == 2  # the old file stays, read by nothing
    (new,) = [record for record in records.values() if record != old]
    added = _entries(results) - before
    # the new epsilon's calibrations computed, each stored once; the old read
    assert added and new["calibrations"]["computed"] == len(added)
    assert [row for row in new["noise"] if row["epsilon"] == 5.0] == old["noise"]
    assert {row["epsilon"] for row in new["noise"]} == {5.0, 2.0}
    # exp_a's solve jobs and calibrations stay done
    jobs = planned_jobs(workdir)
    assert "calibrate" not in jobs and jobs["solve"] == 1
