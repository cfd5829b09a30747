"""The documentation as a newcomer runs it.

* Every ```python block of README.md, CONTRIBUTING.md, config/README.md and
  docs/ runs as pasted: a page's blocks in order, in one namespace, in a
  fresh directory (one process for all pages: tests/docs_examples_runner.py).
* Every shell command, in a fenced block or inline in code, is exercised
  (``dpcd`` commands run, ``snakemake`` runs in their dry-run form in a
  clone) or listed below in NOT_RUN with the reason.
* Every figure the planner prints, quoted in a ```text block, is what
  ``snakemake -n`` prints today (PLANNER_QUOTES).
"""
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PAGES = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "config" / "README.md",
                *(ROOT / "docs").rglob("*.md")])
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```",
                   re.M | re.S)

# Python blocks that must not run, (page, first line of the block) -> why.
SKIPPED_PYTHON = {}

# Pages whose Python examples are known to fail, with why: reported to their
# authors; the test fails once such a page runs, so that its entry goes.
KNOWN_FAILING = {}

# Pages whose examples need files a reader is told to make first: page ->
# (source in the repository, name in the reader's directory).
SETUP = {"docs/add_your_own_solver.md": ("tests/outside_solver", "my_solvers")}

# Files a page shows whole, as they are in the repository: page -> files. Their
# blocks are not run as session code (the reader's copies are imported).
FILES_SHOWN = {"docs/add_your_own_solver.md": ("tests/outside_solver/noisy_gd_kernel.py",
                                               "tests/outside_solver/noisy_gd.py",
                                               "tests/outside_solver/compare.yaml")}

# Shell commands not run here, each with the reason (whitespace-normalised,
# environment assignments in front removed). Any other command is run:
# `dpcd ...` as written (a synopsis with NAME, <...>, [...] or ... as
# `dpcd <subcommand> --help`), `snakemake ...` with -n in a clone.
COVERED_BY_WORKFLOW_TESTS = ("the same snakemake run, on the tiny config: "
                             "tests/workflow/test_workflow.py")
NOT_RUN = {
    "make run": COVERED_BY_WORKFLOW_TESTS,
    "make defaults-suite": "a benchmark of minutes to hours: tests/test_bench.py imports "
                           "bench/defaults_suite.py, tests/test_defaults.py checks its claims",
    "cp -r tests/outside_solver my_solvers": "what SETUP does for the page's examples",
    "make test": "the whole suite; this test is part of it",
    "python -m pytest tests/test_doc_examples.py -x -q": "this test",
    "mkdocs build --strict": "tests/test_docs.py builds the site so",
    "make ui": "a server that runs until stopped (tests/workflow/test_user_view.py opens the UI)",
    "make dry-run": "snakemake -n on config/config.yaml, as `snakemake -n` below",
    "make defaults-suite": "a benchmark suite run by hand (bench/defaults_suite.py; "
                           "tests/test_bench.py imports it)",
    "make lint": "snakemake --lint and snakefmt: .ci/run runs it",
    ".ci/run": "the CI itself: installs system packages as root",
    "make docs": "mkdocs serve, a server; tests/test_docs.py builds the same site strictly",
    "snakemake --report report.html": "needs a finished run: tests/workflow/test_user_view.py",
    "snakemake --unlock": "needs a killed run's lock: tests/workflow/test_resilience.py",
    "snakemake --cores 2": COVERED_BY_WORKFLOW_TESTS,
    "snakemake -n": "the dry-run form of every snakemake command here",
    "snakemake --cores N --configfile config/paper/<file>.yaml":
        "a synopsis: tests/workflow/test_cluster.py plans every file of config/paper/",
    "snakemake --cores N --configfile ...": "a synopsis, as the line above",
    ".venv/bin/snakemake ...": "a synopsis: any command above with a mirror",
    "snakemake --cores 8": "needs a tracking server: tests/workflow/test_tracking_server.py",
    "snakemake --workflow-profile config/profiles/slurm --configfile config/paper/<file>.yaml":
        "a synopsis: tests/workflow/test_cluster.py plans every paper config through the profile",
    "snakemake --workflow-profile config/profiles/slurm":
        "needs a SLURM cluster: tests/workflow/test_cluster.py runs it on one",
    "nice -n 5 /usr/bin/time -v snakemake --cores 2 --configfile <config> "
    "--workflow-profile config/profiles/default":
        "a synopsis of how the measured runs were timed (docs/papers.md)",
    "pip install mlflow psycopg2-binary": "installs packages",
    "pip install -e '.[cluster]'": "installs packages (make test installs the same extra)",
    "sudo -u postgres createuser --pwprompt mlflow":
        "root on a database host: tests/workflow/test_tracking_server.py makes its own",
    "sudo -u postgres createdb --owner mlflow mlflow": "as the line above",
    "mlflow server": "a server: tests/workflow/test_tracking_server.py starts one",
    "mlflow server --host 0.0.0.0 --port 5000 --backend-store-uri "
    "postgresql://mlflow:PASSWORD@dbhost:5432/mlflow --artifacts-destination "
    "/srv/mlflow/artifacts --serve-artifacts":
        "a server on a database host: tests/workflow/test_tracking_server.py starts one",
    "snakemake --cores 2 --configfile config/paper/private_tuning.yaml compare.yaml":
        "needs the baseline's finished run in A: tests/workflow/test_private_compare_workflow.py",
    "printf 'report:\\n private_baseline: A\\n' > compare.yaml":
        "writes the file the next command reads: the clone fixture runs it",
    "python -X importtime": "a profiling flag, not a command to run",
}
# Benchmarks run by hand (minutes each; tests/test_bench.py imports every
# script so a broken one is named).
BENCH = "a benchmark, run by hand: tests/test_bench.py imports it"


def _rel(page):
    return str(page.relative_to(ROOT))


def python_blocks(page):
    """(line, code) of each ```python block of ``page``."""
    text = page.read_text()
    blocks = []
    for match in FENCE.finditer(text):
        if match.group("lang") == "python":
            line = text[:match.start()].count("\n") + 1
            body = match.group("body")
            indent = match.group("indent")
            code = "\n".join(row[len(indent):] for row in body.splitlines())
            blocks.append((line, code))
    return blocks


def _command_lines(body):
    """Commands of a shell block: continuation lines joined, comments dropped."""
    commands = []
    for row in re.sub(r"\\\n\s*", " ", body).splitlines():
        row = re.sub(r"(^|\s)#.*$", "", row).strip()
        if row:
            commands.append(row)
    return commands


def shell_commands(page):
    """(line, command) of every shell command of ``page``: each line of a
    bash/sh block, and each inline code span that starts with a command."""
    text = page.read_text()
    found = []
    for match in FENCE.finditer(text):
        if match.group("lang") in ("bash", "sh", "shell", "console"):
            line = text[:match.start()].count("\n") + 1
            found += [(line, command) for command in _command_lines(match.group("body"))]
    prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for match in re.finditer(r"`([^`\n]+)`", prose):
        span = match.group(1)
        if re.match(r"(\.venv/bin/)?(dpcd|snakemake|make|mlflow|pip|mkdocs) |\.ci/run$"
                    r"|python (-X|bench/)", span):
            found.append((prose[:match.start()].count("\n") + 1, span))
    return found


def _split_env(command):
    """(environment assignments in front, the command whitespace-collapsed)."""
    command, env = " ".join(command.split()), {}
    while match := re.match(r"^([A-Z_]+)=(\S+) ", command):
        env[match.group(1)] = match.group(2)
        command = command[match.end():]
    return env, command


def _normalise(command):
    return _split_env(command)[1]


def how(command):
    """("skip", reason), ("env", None), ("shell", None) or (kind, argv) with
    kind "dpcd" (run as written) or "dry-run" (snakemake -n in a clone)."""
    command = _normalise(command)
    if command in NOT_RUN:
        return "skip", NOT_RUN[command]
    if command.startswith("export "):
        return "env", None
    if re.match(r"python bench/", command):
        return "skip", BENCH
    argv = shlex.split(command)
    if argv[0] == "dpcd":
        if any(re.search(r"\.\.\.|^[A-Z]+$|^<|^\[", arg) for arg in argv) \
                or argv[-1].startswith("--") or len(argv) == 2:
            # a synopsis, or a subcommand or option named in prose: it exists
            words = [arg for arg in argv[1:3] if re.fullmatch(r"[a-z][a-z-]*", arg)]
            return "dpcd", ("dpcd", *words, "--help")
        return "dpcd", tuple(argv)
    if argv[0] in ("snakemake", ".venv/bin/snakemake") and "..." not in argv \
            and not any("<" in arg for arg in argv):
        # a dry run plans the same jobs on any number of cores: without
        # --cores N, a command given with and without it is planned once
        if "--cores" in argv:
            at = argv.index("--cores")
            argv = argv[:at] + argv[at + 2:]
        return "dry-run", ("snakemake", *(() if "-n" in argv else ("-n",)), *argv[1:])
    return None, None


def all_commands():
    return [(_rel(page), line, command) for page in PAGES if page.exists()
            for line, command in shell_commands(page)]


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A user's clone: the workflow and its configs, no results."""
    path = tmp_path_factory.mktemp("clone")
    for name in ("Snakefile", "workflow", "envs", "config"):
        source = ROOT / name
        shutil.copytree(source, path / name) if source.is_dir() else shutil.copy(source, path)
    for source, name in set(SETUP.values()):
        shutil.copytree(ROOT / source, path / name, ignore=shutil.ignore_patterns("__pycache__"))
    for _, _, command in all_commands():  # files the documented commands read
        if command.startswith("printf "):
            subprocess.run(["bash", "-c", command], cwd=path, check=True)
    return path


def _env(extra=()):
    env = {**os.environ, **dict(extra)}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID"):
        env.pop(name, None)
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / "results" / ".numba_cache"))
    return env


@cache
def _run(argv, cwd, env=()):
    """Run ``argv`` in ``cwd`` with ``env`` added (tuples), once per session;
    (returncode, output)."""
    proc = subprocess.run(list(argv), cwd=cwd, env=_env(env), capture_output=True, text=True,
                          timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


# -------------------------------------------------------------------- Python
@pytest.fixture(scope="module")
def python_results(tmp_path_factory):
    """Every page's Python blocks, run in one process: page -> None or traceback."""
    root = tmp_path_factory.mktemp("doc_examples")
    pages = []
    for page in PAGES:
        if not page.exists():
            continue
        shown = {(ROOT / path).read_text() for path in FILES_SHOWN.get(_rel(page), ())}
        blocks = [(line, code) for line, code in python_blocks(page)
                  if (_rel(page), code.splitlines()[0]) not in SKIPPED_PYTHON
                  and code + "\n" not in shown]
        if not blocks:
            continue
        cwd = root / _rel(page).replace("/", "_")
        cwd.mkdir()
        if _rel(page) in SETUP:
            source, name = SETUP[_rel(page)]
            shutil.copytree(ROOT / source, cwd / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        pages.append({"page": _rel(page), "cwd": str(cwd), "blocks": blocks})
    (root / "pages.json").write_text(json.dumps(pages))
    env = {**_env(), "MPLBACKEND": "Agg", "MLFLOW_ALLOW_PICKLE_DESERIALIZATION": "true"}
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "docs_examples_runner.py"),
                           str(root / "out.json"), str(root / "pages.json")],
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-5000:]
    return json.loads((root / "out.json").read_text())


PYTHON_PAGES = [_rel(page) for page in PAGES if page.exists() and python_blocks(page)]


@pytest.mark.parametrize("page", PYTHON_PAGES)
def test_python_examples_run_as_pasted(python_results, page):
    if page in KNOWN_FAILING:
        assert python_results[page] is not None, f"{page} runs now: remove it from KNOWN_FAILING"
        pytest.xfail(KNOWN_FAILING[page])
    assert python_results[page] is None, f"{page}:\n{python_results[page]}"


def test_skipped_python_blocks_exist_and_say_why():
    blocks = {(_rel(page), code.splitlines()[0]) for page in PAGES if page.exists()
              for _, code in python_blocks(page)}
    for key, reason in SKIPPED_PYTHON.items():
        assert key in blocks and len(reason) > 10, key


def test_pages_show_their_files_unchanged():
    for page, paths in FILES_SHOWN.items():
        blocks = [match.group("body") for match in FENCE.finditer((ROOT / page).read_text())]
        for path in paths:
            assert (ROOT / path).read_text() in blocks, f"{page} does not show {path} as it is"


# --------------------------------------------------------------------- shell
def test_every_shell_command_is_run_or_listed_with_its_reason():
    unknown = [f"{page}:{line}: {command}" for page, line, command in all_commands()
               if how(command)[0] is None]
    assert not unknown, ("commands neither run by this test nor listed in NOT_RUN:\n"
                         + "\n".join(unknown))
    listed = {_normalise(command) for _, _, command in all_commands()}
    stale = sorted(set(NOT_RUN) - listed)
    assert not stale, f"NOT_RUN lists commands no page gives: {stale}"


def _dpcd_commands():
    """(page, argv, env) of every dpcd command to run."""
    return sorted({(page, how(c)[1], tuple(sorted(_split_env(c)[0].items())))
                   for page, _, c in all_commands() if how(c)[0] == "dpcd"})


DRY_RUNS = sorted({how(c)[1] for _, _, c in all_commands() if how(c)[0] == "dry-run"})


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """A fresh directory per command and environment (command -> its path), for
    the pages that tell the reader to copy nothing: a command several pages
    give runs once there (_run keeps its result)."""
    root = tmp_path_factory.mktemp("reader")

    def directory(argv, env=()):
        path = root / hashlib.sha1(repr((argv, env)).encode()).hexdigest()[:16]
        path.mkdir(exist_ok=True)
        return str(path)

    return directory


@pytest.mark.parametrize("page, argv, env", _dpcd_commands(),
                         ids=[f"{p}: {' '.join(a)}" for p, a, _ in _dpcd_commands()])
def test_dpcd_commands_run(page, argv, env, tmp_path, reader):
    """In a fresh directory holding what the page tells the reader to copy."""
    if page in SETUP:
        cwd = tmp_path / "reader"
        cwd.mkdir()
        source, name = SETUP[page]
        shutil.copytree(ROOT / source, cwd / name, ignore=shutil.ignore_patterns("__pycache__"))
        cwd = str(cwd)
    else:
        cwd = reader(argv, env)
    code, out = _run(argv, cwd, env)
    assert code == 0, f"{page}: {' '.join(argv)} failed:\n{out[-3000:]}"


def test_options_named_in_prose_exist(reader):
    """`dpcd budget --neighbouring ...` and the like: the subcommand's help lists the option."""
    for page, line, command in all_commands():
        kind, argv = how(command)
        if kind == "dpcd" and argv[-1] == "--help":
            code, out = _run(argv, reader(argv))
            named = re.findall(r"(?<=\s)--[a-z][a-z-]*", " " + _normalise(command))
            missing = [option for option in named if option not in out]
            assert code == 0 and not missing, f"{page}:{line}: {command}: {missing or out}"


@pytest.mark.parametrize("argv", DRY_RUNS, ids=" ".join)
def test_snakemake_commands_plan(argv, clone):
    if "config/profiles/slurm" in argv:
        pytest.importorskip("snakemake_executor_plugin_slurm")
    code, out = _run(argv, str(clone))
    assert code == 0, f"{' '.join(argv)} failed:\n{out[-3000:]}"
    if "--default-resources" in argv:
        # a command-line list replaces the profile's: it must keep mem_mb and runtime
        profile = yaml.safe_load((clone / "config/profiles/slurm/config.yaml").read_text())
        wanted = profile["default-resources"]["mem_mb"]
        resources = re.findall(r"^\s+resources: (.*)$", out, flags=re.M)
        assert resources, out[-3000:]
        for line in resources:
            assert "runtime=" in line and int(re.search(r"mem_mb=(\d+)", line).group(1)) >= wanted, \
                f"{' '.join(argv)} drops the profile's resources: {line}"


# ------------------------------------------------------ the planner's figures
def planner_quotes():
    """(page, line, quote, argv): each ```text block of planner output (its
    lines start with "dpcd: ") and the dry run of the last command of the
    bash block before it, which prints it."""
    quotes = []
    for page in PAGES:
        if not page.exists():
            continue
        text, command = page.read_text(), None
        for match in FENCE.finditer(text):
            if match.group("lang") in ("bash", "sh"):
                commands = _command_lines(match.group("body"))
                command = commands[-1] if commands else None
            elif match.group("lang") == "text" and match.group("body").startswith("dpcd: "):
                line = text[:match.start()].count("\n") + 1
                argv = how(command)[1] if command and how(command)[0] == "dry-run" else None
                quotes.append((_rel(page), line, match.group("body"), argv))
    return quotes


@pytest.mark.parametrize("page, line, quote, argv", planner_quotes(),
                         ids=[f"{p}:{n}" for p, n, _, _ in planner_quotes()])
def test_planner_figures_are_what_snakemake_n_prints(page, line, quote, argv, clone):
    assert argv, f"{page}:{line}: planner output without the snakemake command before it"
    if "config/profiles/slurm" in argv:
        pytest.importorskip("snakemake_executor_plugin_slurm")
    code, out = _run(argv, str(clone))
    assert code == 0, out[-3000:]
    printed = " ".join(" ".join(row.split()) for row in out.splitlines()
                       if row.startswith("dpcd: "))
    for part in " ".join(quote.split()).split("..."):
        part = part.strip(" ;")
        assert part in printed, f"{page}:{line}: {part!r} is not in what {' '.join(argv)} prints"


# ------------------------------------------------------------ other promises
def test_python_page_lists_every_dpcd_subcommand(reader):
    """docs/python.md names every subcommand `dpcd --help` lists."""
    code, out = _run(("dpcd", "--help"), reader(("dpcd", "--help")))
    assert code == 0
    subcommands = re.search(r"\{([a-z,-]+)\}", out).group(1).split(",")
    text = (ROOT / "docs" / "python.md").read_text()
    missing = [name for name in subcommands if f"`{name}`" not in text]
    assert not missing, f"docs/python.md does not list dpcd subcommand(s) {missing}"


def test_readme_is_at_most_150_lines():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150


# A configuration's running time has one home: docs/papers.md's Measured table
# (earlier runs: docs/history.md). Another page stating one restates it.
DURATION = re.compile(r"\b\d+ min\b|\b\d+ minutes\b|\b\d+ h \d+ min|"
                      r"\b\d{1,2}:\d\d(:\d\d)? wall\b|\b\d{1,2}:\d\d[,(]| \d{1,2}:\d\d \(")
A_RUN = re.compile(r"[a-z0-9_]+\.yaml\b|quick config|paper config|make run|snakemake --|"
                   r"DP-[A-Z]+ quick")


def test_configuration_run_times_live_in_the_measured_table():
    restated = []
    for page in [*PAGES, ROOT / "CHANGELOG.md", *(ROOT / "config").rglob("*.yaml")]:
        if not page.exists() or page.name == "history.md":
            continue
        text = page.read_text()
        if page.name == "papers.md":
            text = re.sub(r"\n## Measured\n.*?(?=\n## )", "\n", text, flags=re.S)
        for paragraph in re.split(r"\n\s*\n", text):
            if (duration := DURATION.search(paragraph)) and A_RUN.search(paragraph):
                restated.append(f"{_rel(page)}: {duration.group(0)!r} in {paragraph[:120]!r}")
    assert not restated, ("run times outside docs/papers.md's Measured table (link to it):\n"
                          + "\n".join(restated))


REPO_PATH = re.compile(r"^(?:(?:src|tests|bench|workflow|config|envs|docs|\.ci)/[\w./-]+"
                       r"|Snakefile|Makefile|mkdocs\.yml|pyproject\.toml)$")


def test_files_the_docs_name_exist():
    """Every repository path a page names in code (`src/...`, `tests/...`,
    `workflow/rules/x.smk`, ...) and every top-level `NAME.md` it cites exists."""
    missing = []
    for page in PAGES:
        if not page.exists():
            continue
        text = page.read_text()
        for match in re.finditer(r"`([^`\n]+)`", text):
            path = re.sub(r"::.*$", "", match.group(1).split(" ")[0].rstrip(",.;:"))
            if REPO_PATH.match(path) and not (ROOT / path).exists():
                missing.append(f"{_rel(page)}: {path}")
        for name in set(re.findall(r"\b[A-Z][A-Z_]+\.md\b", text)):
            if not (ROOT / name).exists():
                missing.append(f"{_rel(page)}: {name}")
    assert not missing, "pages name files the repository does not have:\n" + "\n".join(missing)
