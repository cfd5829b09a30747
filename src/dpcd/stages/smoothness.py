"""``dpcd smoothness``, ``dpcd private-smoothness``: the rules of ``smoothness.smk``."""

import json

import numpy as np

from dpcd.data.io import write_json_atomic as write_json
from dpcd.stages.common import add_command


def cmd_smoothness(args):
    """Exact coordinate-wise smoothness constants of one dataset and loss."""
    from dpcd.data import load_dataset
    from dpcd.problems import make_problem
    from dpcd.sweep.problem import as_solver_input

    dataset = load_dataset(args.data)
    X = as_solver_input(dataset.X)  # sparse stays sparse (dorothea)
    datafit, _ = make_problem(args.loss, "none", 0.0)
    max_abs = np.ravel(abs(X).max(axis=0).toarray() if hasattr(X, "toarray")
                       else np.abs(X).max(axis=0)).tolist()
    if not getattr(datafit, "smooth", True):
        # hinge: no smoothness constants exist; the solvers that need them refuse it
        write_json(args.out, {"loss": args.loss, "n_samples": int(X.shape[0]),
                              "n_features": int(X.shape[1]), "smoothness": None,
                              "global_smoothness": None, "max_abs": max_abs})
        return
    smoothness = datafit.coordinate_smoothness(X)
    zero = np.flatnonzero(smoothness <= 0)
    if zero.size:
        raise ValueError(
            f"{args.data}: column(s) {zero.tolist()} are all zero, so M_j = 0; "
            "drop them in preprocessing"
        )
    write_json(
        args.out,
        {
            "loss": args.loss,
            "n_samples": int(X.shape[0]),
            "n_features": int(X.shape[1]),
            "smoothness": smoothness.tolist(),
            "global_smoothness": float(datafit.global_smoothness(X)),
            "max_abs": max_abs,
        },
    )


def cmd_private_smoothness(args):
    """Private smoothness constants per (epsilon, seed), DP-CD Appendix F."""
    from dpcd.data import load_dataset
    from dpcd.sweep.grid import run_seed
    from dpcd.sweep.run import epsilons_of, private_smoothness_estimates

    spec = json.loads(args.spec)
    X = load_dataset(args.data).X
    if hasattr(X, "toarray"):
        raise ValueError(
            f"{args.data}: sparse X; the private smoothness estimate (dp_cd_p) takes "
            "dense data, and sparse datasets are never densified"
        )
    seeds = [run_seed(spec["base_seed"], k) for k in range(spec["seeds"])]
    estimates = private_smoothness_estimates(
        X, spec["loss"], spec["smoothness_fraction"], epsilons_of(spec["privacy"]),
        seeds, spec["experiment"], noise=spec["privacy"].get("noise", "fast"))
    write_json(args.out, estimates)


def register(subparsers):
    """Add ``smoothness`` and ``private-smoothness`` to the ``dpcd`` parser."""
    p = add_command(subparsers, "smoothness", cmd_smoothness,
                    "exact coordinate-wise smoothness constants")
    p.add_argument("--data", required=True)
    p.add_argument("--loss", required=True)
    p.add_argument("--out", required=True)

    p = add_command(subparsers, "private-smoothness", cmd_private_smoothness,
                    "private smoothness constants (DP-CD App. F)")
    p.add_argument("--data", required=True)
    p.add_argument("--spec", required=True,
                   help="JSON: experiment, privacy, seeds, base_seed, loss, smoothness_fraction")
    p.add_argument("--out", required=True)
