"""Algorithm specs: one module per algorithm, and the registry that the sweep, the
estimators, the warm-up, the report and the config schema read.

A spec (:class:`Algorithm`) declares an algorithm's name, hyperparameters with
their validators and defaults, supported (loss, penalty) pairs and run (its
kernel in :mod:`dpcd.solvers`), and three small records: its :class:`Privacy`
(calibration through :mod:`dpcd.privacy`, relations, sampling, secure noise,
private-search candidacy), its :class:`Preparation` (what the estimators
compute from the data) and its :class:`Runtime` (kernel family and warm-up,
shared runs, step cost). A solver from outside the package is one module that
builds its spec and calls :func:`register` (docs/add_your_own_solver.md).
"""
from dpcd.algorithms import cd, dp_cd, dp_cd_p, dp_gcd, dp_scd, dp_sgd, scd, sgd
from dpcd.algorithms.base import (
    BATCH_SIZE,
    CLIP,
    GRID,
    INT_GRID,
    STEP,
    Algorithm,
    Budget,
    Hyperparameter,
    Preparation,
    Privacy,
    Runtime,
    choice,
    positive_int,
    positive_number,
)
from dpcd.algorithms.registry import (
    ENTRY_POINTS,
    ENV,
    check_secure,
    get,
    load,
    names,
    plan_facts,
    register,
    warmup,
)
from dpcd.algorithms.registry import _register_builtin
from dpcd.algorithms.schema import check_entry, check_solvers, solvers_schema, variant_schema

# the estimators list the private ones in this order
_BUILTIN_SPECS = (dp_cd.SPEC, dp_cd_p.SPEC, dp_gcd.SPEC, dp_sgd.SPEC, *dp_scd.SPECS,
                  cd.SPEC, scd.SPEC, sgd.SPEC)
for _spec in _BUILTIN_SPECS:
    _register_builtin(_spec)

# The built-in solvers whose runs can be private-search candidates, and why
# the refused private ones cannot (read from their specs).
PRIVATE_CANDIDATES = tuple(sorted(s.name for s in _BUILTIN_SPECS
                                   if s.private and s.privacy.candidate))
PRIVATE_REFUSED = {s.name: s.privacy.refusal for s in _BUILTIN_SPECS
                   if s.private and s.privacy.refusal}


def table_hyperparameters():
    """Hyperparameters that are columns of the tidy and per-experiment tables:
    every registered algorithm's numeric grids (step, clip, batch_size for the
    built-in ones), in registration order."""
    load()
    columns = []
    for name in names():
        for hp in get(name).hyperparameters:
            if hp.is_column and hp.name not in columns:
                columns.append(hp.name)
    return tuple(columns)

__all__ = ["Algorithm", "BATCH_SIZE", "Budget", "CLIP", "ENTRY_POINTS", "ENV", "GRID",
           "Hyperparameter", "INT_GRID", "PRIVATE_CANDIDATES", "PRIVATE_REFUSED",
           "Preparation", "Privacy", "Runtime", "STEP", "check_entry", "check_secure",
           "check_solvers", "choice", "get", "load", "names", "plan_facts",
           "positive_int", "positive_number", "register", "solvers_schema",
           "table_hyperparameters", "variant_schema", "warmup"]
