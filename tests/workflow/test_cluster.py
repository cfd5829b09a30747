"""The SLURM profile plans every paper configuration (dry run, no cluster needed)."""

import importlib.util
import re
import shutil
import subprocess

import pytest
import yaml

from conftest import BIN, ROOT, snakemake_env

pytestmark = [
    pytest.mark.workflow,
    pytest.mark.skipif(
        importlib.util.find_spec("snakemake_executor_plugin_slurm") is None,
        reason="snakemake-executor-plugin-slurm is not installed (pip install '.[cluster]')",
    ),
]

PAPER = sorted((ROOT / "config" / "paper").glob("*.yaml"))
PROFILE = yaml.safe_load((ROOT / "config" / "profiles" / "slurm" / "config.yaml").read_text())


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A user's clone: the workflow and its configs, no results."""
    path = tmp_path_factory.mktemp("clone")
    for name in ("Snakefile", "workflow", "envs", "config"):
        shutil.copytree(ROOT / name, path / name) if (ROOT / name).is_dir() \
            else shutil.copy(ROOT / name, path / name)
    return path


def _jobs(text):
    """(rule, resources dict, shell command) of every job a dry run prints."""
    jobs = []
    for block in re.split(r"\n(?=\[[^\]]+\]\n(?:local)?rule )", text):
        rule = re.search(r"^(?:local)?rule (\w+):", block, flags=re.M)
        if not rule:
            continue
        res = re.search(r"^\s+resources: (.*)$", block, flags=re.M)
        resources = dict(item.split("=", 1) for item in res.group(1).split(", ")) if res else {}
        command = re.search(r"^Shell command: (.*)$", block, flags=re.M)
        command = command.group(1) if command else ""
        jobs.append((rule.group(1), resources, command))
    return jobs


@pytest.mark.parametrize("config", PAPER, ids=[p.stem for p in PAPER])
def test_slurm_profile_plans_every_paper_config(clone, config):
    proc = subprocess.run(
        [str(BIN / "snakemake"), "--workflow-profile", "config/profiles/slurm", "-n",
         "--printshellcmds", "--configfile", f"config/paper/{config.name}"],
        cwd=clone, env=snakemake_env(), capture_output=True, text=True, timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    jobs = _jobs(out)
    assert {"solve", "aggregate", "summary", "reference"} <= {rule for rule, _, _ in jobs}
    assert all(command.startswith("dpcd ") for rule, _, command in jobs if rule != "all")
    defaults = PROFILE["default-resources"]
    for rule, resources, command in jobs:
        if rule == "all":
            continue
        wanted = {**defaults, **PROFILE.get("set-resources", {}).get(rule, {})}
        for key in ("mem_mb", "runtime", "slurm_account", "slurm_partition"):
            assert key in resources, (rule, resources)
        assert int(resources["mem_mb"]) == wanted["mem_mb"], rule
        assert int(resources["runtime"]) == wanted["runtime"], rule
        # Nothing only the submitting machine has: no absolute paths of this
        # clone or of the interpreter's environment in a job's command.
        assert str(clone) not in command and str(BIN.parent) not in command, command


def _dry_run(clone, *args):
    proc = subprocess.run(
        [str(BIN / "snakemake"), "-n", *args], cwd=clone, env=snakemake_env(),
        capture_output=True, text=True, timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    logged = re.search(
        r"dpcd: estimated solve cost ([0-9.e+]+) core-hours in (\d+) solve jobs "
        r"\(([^)]*)\); largest job ([0-9.e+]+) core-hours", out)
    assert logged, out[-4000:]
    solve_jobs = int(re.search(r"^solve\s+(\d+)$", out, flags=re.M).group(1))
    total, n_jobs, sizing, largest = logged.groups()
    return float(total), int(n_jobs), sizing, float(largest), solve_jobs


def test_exhaustive_grid_is_cut_for_the_cluster(clone):
    """The DP-SCD paper's exhaustive grid (YearPredictionMSD's DP-SGD alone is
    days of one core) through the SLURM profile: the run's estimate is logged
    before any job, and its solve jobs are cut so that the largest is
    estimated at <= chunk_core_hours (2); the default profile keeps the
    configured chunks (and the same total)."""
    config = "config/paper/dpscd_aaai21.yaml"
    total, n_jobs, sizing, largest, solve_jobs = _dry_run(
        clone, "--workflow-profile", "config/profiles/slurm", "--configfile", config)
    assert PROFILE["config"] == ["chunk_core_hours=2", "search=grid"]
    assert sizing == "chunk_core_hours: 2"
    assert n_jobs == solve_jobs and largest <= 2
    assert total > 100  # a cluster's run: the estimate says so before anything runs
    # The same grid on one machine: the configured chunks, the same total.
    local = _dry_run(clone, "--workflow-profile", "config/profiles/default", "--configfile", config,
                     "--config", "search=grid")
    assert local[2] == "chunks as configured" and local[1] == local[4] < solve_jobs
    assert local[3] > 2 and abs(local[0] - total) <= 0.01 * total
    # The config as committed (search: staged) is a fraction of the grid.
    staged = _dry_run(clone, "--workflow-profile", "config/profiles/default", "--configfile", config)
    assert staged[0] < total / 5
