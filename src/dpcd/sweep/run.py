"""One chunk of a sweep, in-process: which configurations it runs (its
stage's share of the spec's grid, :mod:`dpcd.sweep.staged`; a non-private
solver's at the first epsilon only; cut round-robin into the spec's chunks),
and their runs over its seeds, as one tidy table."""

from dpcd import algorithms
from dpcd.privacy.validation import check_positive_int
from dpcd.streams import run_seed
from dpcd.sweep import staged
from dpcd.sweep.grid import epsilons_of, expanded_grid
from dpcd.sweep.runner import run_configurations


def _chunk_slice(chunk, n_chunks):
    """Chunk ``chunk`` of ``n_chunks``, round-robin so that chunks cost about the same."""
    if not 0 <= chunk < n_chunks:
        raise ValueError(f"chunk {chunk} is outside [0, {n_chunks})")
    return slice(chunk, None, n_chunks)


def chunk_of(items, chunk, n_chunks):
    """The items of one chunk (round-robin, so chunks cost about the same)."""
    return items[_chunk_slice(chunk, n_chunks)]


def chunk_runs(spec, chunk):
    """What chunk ``chunk`` of a solve spec runs.

    A non-private solver runs at the first epsilon only: its runs are the same
    at every epsilon (:func:`dpcd.streams.stream_identity`), and stand for its
    runs at the others (a staged search keeps the same ones at every epsilon).

    Returns
    -------
    configs : list of dict
        The configurations the chunk runs.
    also_at : list of float
        The other epsilons their runs stand for (none for a private solver).
    """
    part = _chunk_slice(chunk, spec["chunks"])
    epsilons = epsilons_of(spec["privacy"])
    axes, configs = expanded_grid(spec["solver"], spec["grid"], spec["passes"], epsilons)
    # staged search: the screen's lattice, the refine's neighbours, the confirm's kept
    configs = staged.stage_configurations(spec, configs, axes)
    if algorithms.get(spec.get("adapter", spec["solver"])).private:
        return configs[part], []
    at_first = [config for config in configs if config["epsilon"] == axes["epsilon"][0]]
    return at_first[part], axes["epsilon"][1:]


def run_chunk(spec, chunk, problem, f_star, private_estimates=None, w_star=None, columns=False):
    """Run every configuration of one chunk over all seeds.

    Parameters
    ----------
    spec : dict
        The solve rule's params (experiment, solver, grid, passes, privacy,
        seeds, base_seed, chunks, ...); ``adapter`` names the solver a named
        variant runs (default: ``solver``); ``first_seed`` (default 0) the
        index of the first of its ``seeds`` seeds.
    chunk : int
        Which chunk of the configurations to run
        (:func:`chunk_runs`).
    problem : SweepProblem
        Data and constants, loaded once for the whole chunk.
    f_star : float
        Non-private optimum, for the relative error (F - F*) / F*.
    private_estimates : dict, optional
        Output of the private smoothness stage (DP-CD-P only).
    w_star : array, shape (n_features,), optional
        Non-private solution: each run's final iterate is compared with its
        support (columns ``nnz_correct``, ``nnz_incorrect``; NaN without it).
    columns : bool, default=False
        Return the table as columns, a dict of arrays (a solve job writes them
        without pandas: :func:`dpcd.sweep.tidy.write_columns`).

    Returns
    -------
    table : pandas.DataFrame, or dict of arrays if ``columns``
        One row per (configuration, seed, pass); a non-private solver's runs
        (at the first epsilon) at every epsilon of the spec.
    records : list of ConfigRecord
        One per configuration, for MLflow.
    """
    configs, also_at = chunk_runs(spec, chunk)
    n_seeds = check_positive_int(spec["seeds"], "seeds")
    first = spec.get("first_seed", 0)  # a staged confirm's: the screen ran the first
    seeds = [run_seed(spec["base_seed"], k) for k in range(first, first + n_seeds)]
    return run_configurations(spec, configs, seeds, problem, f_star, private_estimates,
                              w_star, also_at=also_at, first_seed=first, columns=columns)
