"""``dpcd smoothness``, ``dpcd private-smoothness``: the rules of ``smoothness.smk``."""

import json

from dpcd.data.io import write_json_atomic as write_json
from dpcd.stages.common import add_command


def cmd_smoothness(args):
    """Exact coordinate-wise smoothness constants of one dataset and loss."""
    from dpcd.data import load_dataset
    from dpcd.sweep.problem import as_solver_input, smoothness_constants

    X = as_solver_input(load_dataset(args.data).X)  # sparse stays sparse (dorothea)
    write_json(args.out, smoothness_constants(X, args.loss, source=args.data))


def cmd_private_smoothness(args):
    """Private smoothness constants per (epsilon, seed), DP-CD Appendix F."""
    from dpcd.data import load_dataset
    from dpcd.streams import run_seed
    from dpcd.sweep.grid import epsilons_of
    from dpcd.sweep.smoothness import private_smoothness_estimates

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
