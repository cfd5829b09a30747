"""Expand a solver's hyperparameter grid into its axes and configurations
(their identities and seeds: :mod:`dpcd.streams`; a solve job's share of them:
:func:`dpcd.sweep.run.chunk_runs`)."""

import itertools

import numpy as np


def epsilons_of(privacy_spec):
    """The target epsilons of a ``privacy`` block, as a list (one value or several)."""
    eps = privacy_spec["epsilon"]
    return list(eps) if isinstance(eps, (list, tuple)) else [eps]


def expand_grid(values):
    """Return the list of values a grid entry stands for.

    Parameters
    ----------
    values : list of float or dict
        Either explicit values, or ``{"geomspace": [start, stop, num]}``
        for ``num`` log-spaced values (the papers' grids).

    Returns
    -------
    list of float
    """
    if isinstance(values, dict):
        start, stop, num = values["geomspace"]
        return [float(v) for v in np.geomspace(start, stop, int(num))]
    return [v if isinstance(v, int) else float(v) for v in values]


def _passes(value):
    """Integral values as int (ids unchanged for integer grids), others as float."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    value = float(value)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"passes must be finite and > 0, got {value!r}")
    return value


def expanded_grid(solver, grid, passes, epsilons):
    """The axes of one solver's grid and all its configurations, in a
    deterministic order.

    Parameters
    ----------
    solver : str
        Solver name.
    grid : dict
        Hyperparameter name -> grid entry (see :func:`expand_grid`); scalar
        entries (e.g. ``smoothness_fraction``) are constants, not axes.
    passes : list of int or float
        Numbers of passes; each is a separate run since the noise depends on it.
        Kept as given: integers stay integers (so DP-CD configurations keep
        their ids), fractions such as 0.001 stay floats (DP-GCD paper, Table 2).
    epsilons : list of float
        Target epsilons; each is a separate run.

    Returns
    -------
    axes : dict
        Name -> values: ``epsilon``, ``passes``, then the hyperparameters in
        name order.
    configs : list of dict
        One dict per configuration with keys ``solver``, the axes' names and
        the constants, the last axis varying fastest.
    """
    axes = {"epsilon": [float(e) for e in epsilons], "passes": [_passes(k) for k in passes]}
    constants = {}
    for name in sorted(grid):
        value = grid[name]
        if isinstance(value, (list, dict)):
            axes[name] = expand_grid(value)
        else:
            constants[name] = value
    empty = [name for name, values in axes.items() if not values]
    if empty:
        raise ValueError(f"solver {solver}: empty grid for {', '.join(empty)}")
    names = list(axes)
    configs = [{"solver": solver, **dict(zip(names, combo)), **constants}
               for combo in itertools.product(*(axes[name] for name in names))]
    return axes, configs


def configurations(solver, grid, passes, epsilons):
    """All configurations of one solver (:func:`expanded_grid`)."""
    return expanded_grid(solver, grid, passes, epsilons)[1]


def grid_size(spec):
    """Configurations of a solve spec's whole grid (every stage's share is of these)."""
    return len(configurations(spec["solver"], spec["grid"], spec["passes"],
                              epsilons_of(spec["privacy"])))
