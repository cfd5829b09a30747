"""Expand a solver's hyperparameter grid into configurations and chunks (their
identities and seeds: :mod:`dpcd.streams`)."""

import itertools

import numpy as np


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


def configurations(solver, grid, passes, epsilons):
    """All configurations of one solver, in a deterministic order.

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
    list of dict
        One dict per configuration with keys ``solver``, ``epsilon``,
        ``passes`` and the hyperparameters.
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
    configs = []
    for combo in itertools.product(*(axes[name] for name in names)):
        cfg = {"solver": solver, **dict(zip(names, combo)), **constants}
        configs.append(cfg)
    return configs


def chunk_of(configs, chunk, n_chunks):
    """Configurations of one chunk (round-robin, so chunks cost about the same)."""
    if not 0 <= chunk < n_chunks:
        raise ValueError(f"chunk {chunk} is outside [0, {n_chunks})")
    return configs[chunk::n_chunks]
