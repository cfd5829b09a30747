"""The floating-point attack at full size: the bounds docs/fp_attack.md reports.

Each line is a 95 % Clopper–Pearson lower bound on ε, against a claim of
ε = 1 (δ = 1e-5 for DP-CD), for the attacks of :mod:`dpcd.privacy.fp_attack`:

* DP-CD-P's smoothness release (numpy's inverse-CDF Laplace rebuilt bit for
  bit), fast and secure, ``--laplace-runs`` per side;
* one DP-CD run of 512 updates (p = 2048) and one single DP-CD update
  (p = 1), fast and secure, with the low-bit test (``--dp-cd-runs`` and
  ``--single-runs`` per side);
* with ``--dpl-python``, diffprivlib's ``Laplace`` mechanism with its
  default, OS-seeded randomness and its four-uniform sampler, on the values
  0 and 1 (sensitivity 1), with the low-bit test, ``--laplace-runs`` per
  side. diffprivlib is not a dependency of dpcd, and 0.6.6 does not import
  under scikit-learn >= 1.6: ``--dpl-python`` names an interpreter that has
  it (``diffprivlib==0.6.6 scikit-learn==1.5.2``), which draws the releases.

Usage: ``python bench/bench_fp_attack.py [--dpl-python VENV/bin/python]``
(about 12 minutes on 2 busy cores).
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dpcd.privacy import fp_attack

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from dp_cd_fp_attack import attack_dp_cd  # noqa: E402  (runs the solver)


# Run by the interpreter that has diffprivlib: n releases of 0 (D) and of 1 (D').
DPL_WORKER = """
import sys
import numpy as np
from diffprivlib.mechanisms import Laplace
n, out = int(sys.argv[1]), sys.argv[2]
mechanism = Laplace(epsilon=1.0, sensitivity=1.0)  # random_state None: OS entropy
np.save(out, [[mechanism.randomise(v) for _ in range(n)] for v in (0.0, 1.0)])
"""


def _diffprivlib(python, n_runs):
    """diffprivlib's Laplace(ε = 1, Δ = 1) on 0 (D) and 1 (D'), low-bit test."""
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "y.npy")
        subprocess.run([python, "-c", DPL_WORKER, str(n_runs), out], check=True)
        y = np.load(out)
    hits = [int(np.count_nonzero(fp_attack.off_grid(side, 1.0))) for side in y]
    return fp_attack.epsilon_bound(hits[0], hits[1], n_runs, epsilon_claimed=1.0,
                                   positive="D")


def _line(name, runs, result, seconds):
    print(f"{name:<44} {runs:>9,} {result.epsilon_lb:>7.2f} {result.tpr_lo:>9.4f} "
          f"{result.fpr_hi:>10.3g} {seconds:>7.0f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--laplace-runs", type=int, default=1_000_000)
    parser.add_argument("--dp-cd-runs", type=int, default=20_000)
    parser.add_argument("--single-runs", type=int, default=100_000)
    parser.add_argument("--dpl-python", help="an interpreter with diffprivlib 0.6.6")
    args = parser.parse_args()

    print(f"{'release':<44} {'runs/side':>9} {'eps_lb':>7} {'TPR_lo':>9} {'FPR_hi':>10} "
          f"{'wall s':>7}")
    attacks = [
        ("smoothness (Laplace), fast", args.laplace_runs,
         lambda n: fp_attack.attack_smoothness("fast", n_runs=n)),
        ("smoothness (Laplace), secure", args.laplace_runs,
         lambda n: fp_attack.attack_smoothness("secure", n_runs=n)),
        ("DP-CD, 512 updates, fast", args.dp_cd_runs,
         lambda n: attack_dp_cd("fast", n_runs=n)),
        ("DP-CD, 512 updates, secure", args.dp_cd_runs,
         lambda n: attack_dp_cd("secure", n_runs=n)),
        ("DP-CD, one update, fast", args.single_runs,
         lambda n: attack_dp_cd("fast", n_runs=n, n_features=1, passes=1)),
        ("DP-CD, one update, secure", args.single_runs,
         lambda n: attack_dp_cd("secure", n_runs=n, n_features=1, passes=1)),
    ]
    if args.dpl_python:
        attacks.append(("diffprivlib Laplace (4 uniforms, OS entropy)", args.laplace_runs,
                        lambda n: _diffprivlib(args.dpl_python, n)))
    for name, runs, attack in attacks:
        start = time.perf_counter()
        result = attack(runs)
        _line(name, runs, result, time.perf_counter() - start)


if __name__ == "__main__":
    main()
