"""DP-SGD at target eps = 1: noise calibrated under add-or-remove-one (the
papers' protocol) against replace-one, per dataset size, batch and passes.

Columns: sigma_AR/C (and the accountant that won), the PLD interval used under
replace-one, the replace-one eps of the add-or-remove noise and its
add-or-remove eps at that same interval (so the relation's effect is read at
equal accountant precision), sigma_RO/C with its eps, and the noise ratio.
Sizes are the training sets of the paper configs (Phishing: DP-SCD's split).

    PYTHONPATH=src python bench/bench_neighbouring.py
"""
import math
import time

from dpcd import privacy
from dpcd.privacy import accounting

CELLS = ([("california", 20640, 1, p, None) for p in (2, 10, 50)]
         + [("electricity", 45312, 1, p, None) for p in (2, 10, 50)]
         + [("madelon", 2600, 1, p, None) for p in (1, 5, 20)]
         + [("dorothea", 800, 1, p, None) for p in (1, 5, 20)]
         + [("phishing", 6218, b, 10, 1e-3) for b in (5, 50, 500)])


def main():
    print("dataset n b passes delta | sigma_AR/C (acct) | interval | eps_RO(sigma_AR) "
          "eps_AR(sigma_AR) same interval | sigma_RO/C eps | sigma_RO/sigma_AR | s")
    for name, n, b, passes, delta in CELLS:
        delta = delta or 1.0 / n**2
        t = time.time()
        ar = privacy.calibrate_dp_sgd(n, b, passes, 1.0, 1.0, delta,
                                      relation="add_or_remove_one")
        steps = math.ceil(passes * n / b)
        spec = ("poisson_gaussian", b / n, steps)
        interval = accounting.pld_interval(spec, "replace_one")
        eps_ro = accounting.epsilon_of(spec, ar.noise_scales, delta, "pld", "replace_one")
        acc = accounting.new_accountant("pld", "ADD_OR_REMOVE_ONE", interval)
        eps_ar = acc.compose(accounting.make_event(spec, ar.noise_scales)).get_epsilon(delta)
        ro = privacy.calibrate_dp_sgd(n, b, passes, 1.0, 1.0, delta, relation="replace_one")
        print(f"{name} {n} {b} {passes} {delta:.3g} | {ar.noise_scales:.4f} "
              f"({ar.ledger.accountant}) | {interval:.2g} | {eps_ro:.3f} {eps_ar:.3f} | "
              f"{ro.noise_scales:.4f} {ro.epsilon_achieved:.4f} | "
              f"{ro.noise_scales / ar.noise_scales:.3f} | {time.time() - t:.0f}", flush=True)


if __name__ == "__main__":
    main()
