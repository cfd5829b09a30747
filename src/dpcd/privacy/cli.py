"""``dpcd budget``: plan a privacy budget without touching data.

Prints the ledger of a calibration as a table, or as JSON with ``--json``
(keys ``noise_multiplier``, ``noise_scales``, ``epsilon_target``,
``epsilon_achieved``, ``delta``, ``accountant``, ``mechanisms``, ...).  Bad
arguments raise ``ValueError``; the ``dpcd`` dispatcher prints them in one
line and exits with code 2.
"""

from __future__ import annotations

import json

import numpy as np

ALGORITHMS = ("dp_cd", "dp_cd_p", "dp_gcd", "dp_scd", "seq_dp_scd", "primal_dp_scd", "dp_sgd")


def register(subparsers):
    """Add the ``budget`` subcommand to an argparse ``subparsers`` object."""
    parser = subparsers.add_parser(
        "budget", help="calibrate noise for a target (epsilon, delta) and print the ledger",
        description=__doc__.splitlines()[0])
    parser.add_argument("--algorithm", required=True, choices=ALGORITHMS)
    parser.add_argument("--epsilon", required=True, type=float)
    parser.add_argument("--delta", required=True, type=float)
    parser.add_argument("--n", required=True, type=int, help="number of records")
    parser.add_argument("--p", type=int, default=None, help="number of features/coordinates")
    parser.add_argument("--passes", type=float, default=None)
    parser.add_argument("--iterations", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--clip", type=float, default=1.0,
                        help="clipping threshold (all coordinates for CD methods)")
    parser.add_argument("--smoothness-fraction", type=float, default=0.1,
                        help="fraction of epsilon for private smoothness (dp_cd_p)")
    parser.add_argument("--sampling", choices=("poisson", "without_replacement"), default=None,
                        help="record sampling of dp_sgd / dp_scd / seq_dp_scd")
    parser.add_argument("--max-batch-size", default=None,
                        help="seq_dp_scd with Poisson batches: L_max (an int or 'auto', "
                             "the default)")
    parser.add_argument("--accountant", choices=("auto", "rdp", "pld", "paper"), default="auto")
    parser.add_argument("--neighbouring", default="paper",
                        choices=("replace_one", "add_or_remove_one", "replace_special", "paper"),
                        help="neighbouring relation (paper: the one the solver's paper used)")
    parser.add_argument("--json", action="store_true", help="print the ledger as JSON")
    parser.set_defaults(func=run)
    return parser


def _require(value, name, algorithm):
    if value is None:
        raise ValueError(f"--{name} is required for --algorithm {algorithm}")
    return value


def calibrate_from_args(args):
    """Return the :class:`~dpcd.privacy.Calibration` an argparse namespace asks for."""
    from dpcd import privacy
    from dpcd.privacy.gcd import calibrate_dp_gcd

    alg = args.algorithm
    # Checks common to every algorithm, before the algorithm-specific ones.
    from dpcd.privacy.validation import check_delta, check_epsilon, check_n
    check_epsilon(args.epsilon)
    check_delta(args.delta)
    check_n(args.n)
    if args.batch_size is not None and args.batch_size > args.n and alg != "primal_dp_scd":
        raise ValueError(f"batch_size must be <= n = {args.n}, got {args.batch_size}")
    if alg in ("dp_cd", "dp_cd_p"):
        p = _require(args.p, "p", alg)
        passes = _require(args.passes, "passes", alg)
        clip = np.full(p, args.clip) if p > 0 else args.clip
        if alg == "dp_cd":
            return privacy.calibrate_dp_cd(args.n, p, passes, clip, args.epsilon, args.delta,
                                           accountant=args.accountant, relation=args.neighbouring)
        return privacy.calibrate_dp_cd_p(args.n, p, passes, clip, args.epsilon, args.delta,
                                         smoothness_fraction=args.smoothness_fraction,
                                         accountant=args.accountant, relation=args.neighbouring)
    if alg == "dp_gcd":
        p = _require(args.p, "p", alg)
        iterations = _require(args.iterations, "iterations", alg)
        return calibrate_dp_gcd(args.n, p, iterations, args.clip, args.epsilon, args.delta,
                                accountant=args.accountant, relation=args.neighbouring)
    if alg == "dp_sgd":
        return privacy.calibrate_dp_sgd(
            args.n, _require(args.batch_size, "batch-size", alg),
            _require(args.passes, "passes", alg), args.clip, args.epsilon, args.delta,
            sampling=args.sampling or "poisson", accountant=args.accountant,
            relation=args.neighbouring)
    variant = {"dp_scd": "dual", "seq_dp_scd": "seq", "primal_dp_scd": "primal"}[alg]
    max_batch = args.max_batch_size
    if max_batch not in (None, "auto"):
        max_batch = int(max_batch)
    return privacy.calibrate_dp_scd(
        args.n, _require(args.p, "p", alg), _require(args.batch_size, "batch-size", alg),
        args.clip, args.epsilon, args.delta, iterations=args.iterations, passes=args.passes,
        variant=variant, sampling=args.sampling, accountant=args.accountant,
        relation=args.neighbouring,
        max_batch_size=max_batch)


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
