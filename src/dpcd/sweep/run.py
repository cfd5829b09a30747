"""Run one chunk of a sweep in-process: its seeds and configurations, their
runs, one tidy table."""

from dpcd.privacy.validation import check_positive_int
from dpcd.streams import run_seed
from dpcd.sweep.chunks import chunk_runs
from dpcd.sweep.runner import run_configurations


def run_chunk(spec, chunk, problem, f_star, private_estimates=None, w_star=None):
    """Run every configuration of one chunk over all seeds.

    Parameters
    ----------
    spec : dict
        The solve rule's params (experiment, solver, grid, passes, privacy,
        seeds, base_seed, chunks, ...); ``adapter`` names the solver a named
        variant runs (default: ``solver``).
    chunk : int
        Which chunk of the configurations to run
        (:func:`dpcd.sweep.chunks.chunk_runs`).
    problem : SweepProblem
        Data and constants, loaded once for the whole chunk.
    f_star : float
        Non-private optimum, for the relative error (F - F*) / F*.
    private_estimates : dict, optional
        Output of the private smoothness stage (DP-CD-P only).
    w_star : array, shape (n_features,), optional
        Non-private solution: each run's final iterate is compared with its
        support (columns ``nnz_correct``, ``nnz_incorrect``; NaN without it).

    Returns
    -------
    table : pandas.DataFrame
        One row per (configuration, seed, pass); a non-private solver's runs
        (at the first epsilon) at every epsilon of the spec.
    records : list of ConfigRecord
        One per configuration, for MLflow.
    """
    n_seeds = check_positive_int(spec["seeds"], "seeds")
    seeds = [run_seed(spec["base_seed"], k) for k in range(n_seeds)]
    configs, also_at = chunk_runs(spec, chunk)
    return run_configurations(spec, configs, seeds, problem, f_star, private_estimates,
                              w_star, also_at=also_at)
