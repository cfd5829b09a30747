"""``dpcd budget``: plan a privacy budget without touching data.

Calibrates through the algorithm spec's own ``calibrate``, the one a run
calls, on a problem without data (:class:`~dpcd.algorithms.problem.Probe`:
the shape and unit smoothness constants). Prints the ledger as a table, or
as JSON with ``--json`` (keys ``noise_multiplier``, ``noise_scales``,
``epsilon_target``, ``epsilon_achieved``, ``delta``, ``accountant``,
``mechanisms``, ...).  Bad arguments raise ``ValueError``; the ``dpcd``
dispatcher prints them in one line and exits with code 2.
"""

from __future__ import annotations

import json

import numpy as np

# options that are hyperparameters of a configuration: (option, config key)
HYPERPARAMETER_OPTIONS = (("batch_size", "batch_size"), ("sampling", "sampling"),
                          ("max_batch_size", "max_batch_size"),
                          ("smoothness_fraction", "smoothness_fraction"))


def register(subparsers):
    """Add the ``budget`` subcommand to an argparse ``subparsers`` object."""
    parser = subparsers.add_parser(
        "budget", help="calibrate noise for a target (epsilon, delta) and print the ledger",
        description=__doc__.splitlines()[0])
    parser.add_argument("--algorithm", required=True,
                        help="a private solver (dp_cd, dp_cd_p, dp_gcd, dp_sgd, dp_scd, "
                             "seq_dp_scd, primal_dp_scd, or one registered from outside)")
    parser.add_argument("--epsilon", required=True, type=float)
    parser.add_argument("--delta", type=float, default=None,
                        help="target delta in (0, 1); default 1/n^2, as in a config")
    parser.add_argument("--n", required=True, type=int, help="number of records")
    parser.add_argument("--p", type=int, default=None, help="number of features/coordinates")
    parser.add_argument("--passes", required=True, type=float,
                        help="passes over the data (DP-GCD: iterations)")
    parser.add_argument("--clip", type=float, default=1.0,
                        help="clipping threshold C, as in a config (the CD methods split it "
                             "over the coordinates as their runs do: C/sqrt(p) each here)")
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--smoothness-fraction", type=float, default=None,
                        help="share of epsilon for the private smoothness constants "
                             "(dp_cd_p; default its config default)")
    parser.add_argument("--sampling", choices=("poisson", "without_replacement"), default=None,
                        help="record sampling of dp_scd / seq_dp_scd")
    parser.add_argument("--max-batch-size", default=None,
                        help="seq_dp_scd with Poisson batches: L_max (an int or 'auto', "
                             "the default)")
    parser.add_argument("--penalty", default="none", choices=("l1", "l2", "elastic_net", "none"),
                        help="penalty of the problem (DP-GCD's noise depends on it)")
    parser.add_argument("--alpha", type=float, default=0.0, help="strength of the penalty")
    parser.add_argument("--accountant", choices=("auto", "rdp", "pld", "paper"), default="auto")
    parser.add_argument("--neighbouring", default="paper",
                        choices=("replace_one", "add_or_remove_one", "replace_special", "paper"),
                        help="neighbouring relation (paper: the one the solver's paper used)")
    parser.add_argument("--json", action="store_true", help="print the ledger as JSON")
    parser.set_defaults(func=run)
    return parser


def calibrate_from_args(args):
    """Return the :class:`~dpcd.privacy.Calibration` an argparse namespace asks
    for: the spec's ``calibrate`` on a :class:`~dpcd.algorithms.problem.Probe`."""
    from dpcd import algorithms
    from dpcd.algorithms.problem import Probe
    from dpcd.privacy.validation import check_delta, check_epsilon, check_n, delta_or_default
    from dpcd.problems import make_problem

    spec = algorithms.get(args.algorithm)
    if not spec.private or spec.privacy.calibrate is None:
        raise ValueError(f"--algorithm {args.algorithm}: not a private solver with a "
                         f"calibration; known: {list(algorithms.names(private=True))}")
    check_epsilon(args.epsilon)
    check_n(args.n)
    delta = check_delta(delta_or_default(args.delta, args.n))
    config = {"passes": args.passes, "clip": args.clip}
    names = {hp.name for hp in spec.hyperparameters}
    for option, key in HYPERPARAMETER_OPTIONS:
        value = getattr(args, option)
        if value is None:
            continue
        if key not in names:
            raise ValueError(f"--{option.replace('_', '-')}: {args.algorithm} has no {key}")
        config[key] = int(value) if key == "max_batch_size" and value != "auto" else value
    spec.check_neighbouring(args.neighbouring, config.get("sampling"))
    penalty = make_problem("squares", args.penalty, args.alpha)[1]
    budget = algorithms.Budget(args.epsilon, delta, args.accountant, args.neighbouring)
    return spec.privacy.calibrate(Probe(args.n, args.p, penalty), config, budget)


def _jsonable(x):
    if isinstance(x, np.ndarray):
        return [float(v) for v in x]
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    return x


def budget_dict(cal) -> dict:
    """JSON view of a calibration: the ledger plus the noise the solver adds."""
    out = cal.ledger.to_dict()
    out.update(noise_multiplier=float(cal.noise_multiplier),
               noise_scales=_jsonable(cal.noise_scales), steps=int(cal.steps),
               sampling=cal.sampling, sampling_rate=float(cal.sampling_rate),
               extra=_jsonable(cal.extra))
    return out


def _fmt(value):
    if isinstance(value, (list, tuple)):
        lo, hi = min(value), max(value)
        return f"{lo:.6g}" if lo == hi else f"{lo:.6g}..{hi:.6g}"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def format_table(cal) -> str:
    """Human-readable ledger."""
    led = cal.ledger
    lines = [
        f"algorithm        {led.algorithm}",
        f"neighbouring     {led.neighbouring}",
        f"accountant       {led.accountant}",
        f"epsilon target   {led.epsilon_target:.6g}",
        f"epsilon achieved {led.epsilon_achieved:.6g}",
        f"delta            {led.delta:.6g}",
        f"noise multiplier {cal.noise_multiplier:.6g}",
        f"noise scales     {_fmt(_jsonable(cal.noise_scales))}",
        f"steps            {cal.steps}",
        "",
    ]
    head = ("group", "mechanism", "kind", "sensitivity", "multiplier", "noise scale",
            "count", "sampling")
    rows = [head] + [
        (m.group, m.name, m.kind, _fmt(m.sensitivity), _fmt(float(m.noise_multiplier)),
         _fmt(m.noise_scale), str(m.count),
         m.sampling if m.sampling == "none" else f"{m.sampling} q={m.sampling_rate:.4g}")
        for m in led.mechanisms
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    if len(led.budget) > 1:
        lines.append("")
        lines += [f"budget {b.group}: epsilon {b.epsilon_achieved:.6g} (target "
                  f"{b.epsilon_target:.6g}), delta {b.delta:.3g}, {b.accountant}"
                  for b in led.budget]
    if cal.extra.get("epsilon_per_step_by_composition"):
        lines.append("")
        lines += [f"epsilon per step ({k}): {v:.6g}"
                  for k, v in cal.extra["epsilon_per_step_by_composition"].items()]
    lines.append(f"nonprivate inputs: {', '.join(led.nonprivate_inputs) or 'none'}")
    return "\n".join(lines)


def run(args) -> int:
    """Run ``dpcd budget``; returns the exit code."""
    cal = calibrate_from_args(args)
    if args.json:
        print(json.dumps(budget_dict(cal), indent=2, sort_keys=True))
    else:
        print(format_table(cal))
    return 0
