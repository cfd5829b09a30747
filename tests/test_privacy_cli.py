"""``dpcd budget``: through dpcd.cli.main and through the console script."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpcd import algorithms, privacy
from dpcd.cli import main

DPCD = Path(sys.executable).parent / "dpcd"
BASE = ["budget", "--epsilon", "1", "--delta", "1e-6", "--n", "1000"]


@pytest.mark.parametrize("extra", [
    ["--algorithm", "dp_cd", "--p", "5", "--passes", "3"],
    ["--algorithm", "dp_cd_p", "--p", "5", "--passes", "3", "--smoothness-fraction", "0.2"],
    ["--algorithm", "dp_gcd", "--p", "5", "--passes", "20"],
    ["--algorithm", "dp_scd", "--p", "5", "--batch-size", "10", "--passes", "2"],
    ["--algorithm", "seq_dp_scd", "--p", "5", "--batch-size", "10", "--passes", "1"],
    ["--algorithm", "primal_dp_scd", "--p", "5", "--batch-size", "2", "--passes", "2"],
    ["--algorithm", "dp_sgd", "--batch-size", "10", "--passes", "2", "--accountant", "rdp"],
])
def test_budget_json(extra, capsys):
    assert main(BASE + extra + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("noise_multiplier", "noise_scales", "epsilon_target", "epsilon_achieved",
                "delta", "accountant", "mechanisms"):
        assert key in out
    assert 0.99 <= out["epsilon_achieved"] <= 1.0
    assert main(BASE + extra) == 0
    assert "noise multiplier" in capsys.readouterr().out


def test_budget_delta_defaults_to_one_over_n_squared(capsys):
    """Without --delta, delta = 1/n^2 (a config's null): the same ledger as
    --delta 1/n^2 given, another than --delta 1e-3."""
    args = ["budget", "--algorithm", "dp_cd", "--epsilon", "1", "--n", "1000", "--p", "5",
            "--passes", "3", "--json"]
    ledgers = []
    for extra in ([], ["--delta", str(1 / 1000**2)], ["--delta", "1e-3"]):
        assert main(args + extra) == 0
        ledgers.append(json.loads(capsys.readouterr().out))
    assert ledgers[0]["delta"] == pytest.approx(1e-6, rel=1e-12)
    assert ledgers[0] == ledgers[1]
    assert ledgers[2]["noise_multiplier"] < ledgers[0]["noise_multiplier"]


@pytest.mark.parametrize("bad,word", [
    (["--epsilon", "0"], "epsilon"), (["--epsilon", "-1"], "epsilon"),
    (["--delta", "0"], "delta"), (["--delta", "1.5"], "delta"), (["--n", "1"], "n"),
    (["--batch-size", "5000"], "batch_size"),
])
def test_budget_bad_arguments(bad, word, capsys):
    args = ["budget", "--algorithm", "dp_sgd", "--epsilon", "1", "--delta", "1e-6", "--n",
            "1000", "--batch-size", "10", "--passes", "1"]
    for flag, value in zip(bad[::2], bad[1::2]):
        args[args.index(flag) + 1] = value
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and word in err


def test_console_script_california():
    proc = subprocess.run(
        [str(DPCD), "budget", "--algorithm", "dp_cd", "--epsilon", "1", "--delta",
         str(1 / 20640**2), "--n", "20640", "--p", "8", "--passes", "10", "--json"],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["accountant"] in ("rdp", "pld")
    assert 40 < out["noise_multiplier"] < 69.06  # below Theorem 3.1's 69.06
    bad = subprocess.run([str(DPCD), "budget", "--algorithm", "dp_cd", "--epsilon", "0",
                          "--delta", "0.1", "--n", "10", "--p", "2", "--passes", "1"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1


P, C = 5, 1.0
SPLIT = np.full(P, C / np.sqrt(P))  # the CD methods' C_j at equal constants


@pytest.mark.parametrize("extra, direct", [
    (["--algorithm", "dp_cd", "--p", "5", "--passes", "3"],
     lambda: privacy.calibrate_dp_cd(1000, P, 3, SPLIT, 1.0, 1e-6)),
    (["--algorithm", "dp_gcd", "--p", "5", "--passes", "20", "--penalty", "l1",
      "--alpha", "0.1"],
     lambda: privacy.calibrate_dp_gcd(1000, P, 20, SPLIT, 1.0, 1e-6, accountant="auto",
                                      smoothness=np.ones(P), penalty="l1", alpha=0.1)),
    (["--algorithm", "dp_scd", "--p", "5", "--batch-size", "10", "--passes", "2"],
     lambda: privacy.calibrate_dp_scd(1000, P, 10, C, 1.0, 1e-6, passes=2)),
    (["--algorithm", "seq_dp_scd", "--p", "5", "--batch-size", "10", "--passes", "1",
      "--neighbouring", "replace_one"],
     lambda: privacy.calibrate_dp_scd(1000, P, 10, C, 1.0, 1e-6, passes=1, variant="seq",
                                      relation="replace_one")),
    (["--algorithm", "dp_sgd", "--batch-size", "10", "--passes", "2", "--accountant", "rdp"],
     lambda: privacy.calibrate_dp_sgd(1000, 10, 2, C, 1.0, 1e-6, accountant="rdp")),
])
def test_budget_is_the_calibration_a_run_gets(extra, direct, capsys):
    """The spec's calibrate on a data-free probe equals the privacy function
    the run calls (whose tests check it against dp-accounting)."""
    assert main(BASE + extra + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    cal = direct()
    assert out["noise_multiplier"] == cal.noise_multiplier
    assert out["epsilon_achieved"] == cal.epsilon_achieved
    assert out["neighbouring"] == cal.ledger.neighbouring
    np.testing.assert_allclose(out["noise_scales"], cal.noise_scales, rtol=1e-12)


def test_budget_asks_for_what_the_calibration_reads(capsys):
    assert main(BASE + ["--algorithm", "dp_cd", "--passes", "3"]) == 2
    assert "number of features (p)" in capsys.readouterr().err
    assert main(BASE + ["--algorithm", "dp_cd", "--p", "5", "--passes", "3",
                        "--batch-size", "10"]) == 2
    assert "dp_cd has no batch_size" in capsys.readouterr().err
    assert main(BASE + ["--algorithm", "cd", "--p", "5", "--passes", "3"]) == 2
    assert "not a private solver" in capsys.readouterr().err


def test_budget_of_a_solver_from_outside(capsys):
    """A registered outside algorithm is planned through its own calibrate."""
    algorithms.load([str(Path(__file__).parent / "outside_solver" / "noisy_gd.py")])
    assert main(BASE + ["--algorithm", "noisy_gd", "--p", "5", "--passes", "4",
                        "--neighbouring", "replace_one", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["algorithm"] == "noisy_gd" and 0.99 <= out["epsilon_achieved"] <= 1.0
