"""The conda environment and pyproject.toml declare the same dependencies."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement):
    return re.split(r"[<>=!~ ]", requirement, maxsplit=1)[0].strip().lower().replace("_", "-")


def test_conda_env_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pip_deps = {_name(r): r for r in project["dependencies"]}
    env = yaml.safe_load((ROOT / "envs" / "dpcd.yaml").read_text())
    conda_deps = {
        _name(d): d for d in env["dependencies"] if isinstance(d, str) and _name(d) not in ("python", "pip")
    }
    assert set(conda_deps) == set(pip_deps)
    # Same version bounds, written the same way.
    for name, requirement in pip_deps.items():
        assert conda_deps[name].replace(" ", "") == requirement.replace(" ", ""), name
    # The environment installs the package itself.
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert any(".." in entry for entry in pip_section)


def test_oldest_versions_are_the_lower_bounds():
    """.ci/oldest.txt pins every dependency at its pyproject.toml lower bound
    (the CI's oldest-versions step installs exactly these)."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lower = {}
    for text in project["dependencies"]:
        req = Requirement(text)
        (bound,) = [s.version for s in req.specifier if s.operator == ">="]
        lower[_name(req.name)] = Version(bound)
    pins = {}
    for line in (ROOT / ".ci" / "oldest.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[_name(name)] = Version(version)
    assert pins == lower


# The rules of workflow/rules/*.smk, counted by hand: the test below must see
# them all, not pass on none (a moved directory, a changed rule syntax).
N_RULES = 21


def test_every_rule_uses_the_conda_env_and_logs():
    counted = 0
    for path in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        text = path.read_text()
        n_rules = len(re.findall(r"^\s*rule \w+:", text, flags=re.M))
        counted += n_rules
        assert text.count('"../../envs/dpcd.yaml"') == n_rules, path.name
        assert text.count("log:") == n_rules, path.name
        assert text.count("benchmark:") == n_rules, path.name
    assert counted == N_RULES


def test_cli_start_leaves_heavy_modules_unimported():
    """Every workflow job starts ``dpcd``; most only read calibrations from the
    cache. What only some functions need is imported there, not when the
    command line is built: dp_accounting (with scipy.signal and scipy.stats,
    1.1 s) by the functions that account; scipy.optimize and scipy.integrate
    (0.4 s) by DP-GCD's step calibration and noisy-max quadrature; opendp by
    the secure noise mode's samplers."""
    import subprocess
    import sys

    heavy = ("dp_accounting", "scipy.optimize", "scipy.integrate", "opendp")
    code = ("import sys; from dpcd.cli import build_parser; build_parser(); "
            "import dpcd.privacy, dpcd.stages; "
            f"print([m for m in {heavy!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_a_table_job_leaves_figures_and_mlflow_unimported():
    """``dpcd fresh`` writes tables only, and the summary and the lambda table
    wait for it: the report package loads seaborn and matplotlib (2 s) only
    for a figure, the tracking package MLflow only to log."""
    import subprocess
    import sys

    heavy = ("seaborn", "matplotlib", "mlflow")
    code = ("import sys; from dpcd.stages.fresh import cmd_fresh; "
            "from dpcd.report.fresh import fresh_markdown, fresh_table; "
            "from dpcd.report.tables import read_table; "
            f"print([m for m in {heavy!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_version_and_warmup_from_a_terminal(tmp_path):
    """``dpcd --version`` names the installed version; ``dpcd warmup`` needs no
    ``--out`` (it prints its record; the workflow's marker file is optional),
    and waits while another warm-up holds the numba cache's lock (the
    workflow's warm-up jobs, one per kernel family, compile one at a time)."""
    import fcntl
    import importlib.metadata
    import json
    import os
    import subprocess
    import sys

    dpcd = Path(sys.executable).parent / "dpcd"
    proc = subprocess.run([str(dpcd), "--version"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == f"dpcd {importlib.metadata.version('dpcd')}"
    env = {**os.environ}
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / "results" / ".numba_cache"))
    # where dpcd compiles: the given directory's subdirectory for these sources
    cache = subprocess.run([sys.executable, "-c", "import os, dpcd; print(os.environ["
                            "'NUMBA_CACHE_DIR'])"], env=env, capture_output=True, text=True,
                           check=True).stdout.strip()
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, "warmup.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another warm-up compiling
        proc = subprocess.Popen([str(dpcd), "warmup", "--families", "reference"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=tmp_path)
        waited = any("waiting for another warm-up" in line for line in proc.stderr)
        assert waited and proc.poll() is None
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-2000:]
    assert json.loads(stdout)["families"] == ["reference"]
    assert not list(tmp_path.iterdir())
