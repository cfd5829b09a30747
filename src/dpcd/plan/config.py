"""Reading the configuration: solver entries, the alpha_grid expansion, the
data stages' params, and the one JSON rendering of every params string."""

import copy
import json
import os

# Registry entries generated from a seed rather than downloaded
# (tests/test_plan.py checks this matches dpcd.data.registry).
GENERATED_SOURCES = (
    "log1",
    "log2",
    "mtp_standin",
    "sparse_binary",
    "sparse_lasso",
    "yearpredictionmsd_standin",
)


def render(obj):
    """Deterministic JSON for params: Snakemake compares params as strings."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def expand_lambda_grids(experiments):
    """Expand each experiment's ``alpha_grid`` into experiments of their own.

    Parameters
    ----------
    experiments : dict
        The config's experiments (not modified).

    Returns
    -------
    experiments : dict
        The same experiments without ``alpha_grid``, followed by
        ``<name>_lam<k>``: ``<name>`` at the k-th strength.
    groups : dict
        ``<name>_lam<k>`` -> ``{"base": name, "alpha" or "lambda_max_fraction": value}``.
    """
    experiments = copy.deepcopy(experiments)
    groups = {}
    for name in sorted(experiments):
        grid = experiments[name].pop("alpha_grid", None)
        if not grid:
            continue
        ((key, values),) = grid.items()
        setting = "alpha" if key == "alphas" else "lambda_max_fraction"
        for k, value in enumerate(values):
            new = f"{name}_lam{k}"
            if new in experiments:
                raise ValueError(
                    f"config: experiments.{name}.alpha_grid: {new!r} is already an experiment"
                )
            exp = copy.deepcopy(experiments[name])
            exp["problem"][setting] = float(value)
            experiments[new] = exp
            groups[new] = {"base": name, setting: float(value)}
    return experiments, groups


def algorithm_modules(modules, basedir):
    """``DPCD_ALGORITHMS`` for the config's ``algorithms`` (solvers from outside
    dpcd, which every job imports): ``.py`` paths made absolute (relative ones
    are from ``basedir``, the workflow's directory), joined by ``os.pathsep``."""
    return os.pathsep.join(_from_basedir(m, basedir) if m.endswith(".py") else m
                           for m in modules)


def _from_basedir(path, basedir):
    return os.path.normpath(os.path.join(basedir, os.path.expanduser(path)))


def workflow_path(path, basedir, workdir=None):
    """A file a config names, as a rule's input: a relative path is from
    ``basedir``, the workflow's directory (the clone), so ``snakemake -d DIR``
    finds it. It is given relative to ``workdir`` (the working directory), so
    a job's command names no path of the submitting machine; an absolute path
    stays as it is; None stays None."""
    if path is None:
        return None
    path = os.path.expanduser(path)
    if os.path.isabs(path):
        return os.path.normpath(path)
    return os.path.relpath(os.path.join(basedir, path), workdir or os.getcwd())


def experiment_prefix(prefix, configfile, default_configfile):
    """The MLflow experiment names' prefix: ``mlflow.experiment_prefix`` when
    set, else ``dpcd/`` for the embedded default config and ``dpcd/<name>/``
    for a config file ``<name>.yaml``, so that the runs of two configs never
    share an experiment in one tracking store."""
    if prefix is not None:
        return prefix
    if configfile is None or os.path.samefile(configfile, default_configfile):
        return "dpcd/"
    name = os.path.splitext(os.path.basename(configfile))[0]
    return f"dpcd/{name}/"


def solver_entry(exp, name):
    """(solver, grid, passes) of solver entry ``name`` of experiment ``exp``.

    An entry is a solver's own name or a named variant ``{solver: dp_gcd,
    rule: gs_q, ...}``; an entry's ``passes`` replaces the experiment's.
    """
    entry = dict(exp["solvers"][name])
    solver = entry.pop("solver", name)
    passes = entry.pop("passes", exp["passes"])
    return solver, entry, passes


def data_spec(datasets, key, stage):
    """The params of data stage ``stage`` (generate, download, preprocess) for
    dataset ``key``: only the settings that stage reads."""
    if key not in datasets:
        raise ValueError(f"unknown dataset key {key!r}; configured: {sorted(datasets)}")
    dataset = datasets[key]
    reads = {
        "generate": {"params": dataset.get("params") or {}},
        "download": {},
        "preprocess": {"split_seed": dataset.get("split_seed", 0)},
    }
    return {"source": dataset["source"], **reads[stage]}


def raw_path(datasets, key):
    """The raw stage's output for a dataset: generated file or download manifest."""
    spec = data_spec(datasets, key, "download")
    if spec["source"] in GENERATED_SOURCES:
        return f"results/data/raw/{key}/generated.npz"
    return f"results/data/raw/{key}/manifest.json"
