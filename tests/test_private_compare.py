"""Issue 29, item 5: pairing the cells of a search: private run with the fresh
tables of the same experiments tuned on the private data, the verdicts, the
summary section and the figures (dpcd.report.private, dpcd private-compare)."""

import argparse

import pandas as pd
import pytest

from dpcd.report import private as pc
from dpcd.stages.private import cmd_private_compare
from dpcd.tuning.release import released_id


def _fresh(rows):
    return pd.DataFrame([{"solver": s, "epsilon": e, "passes": k, "neighbouring": rel,
                          "config_id": "abc", "rel_error_mean": m / 2, "rel_error_std": 0.0,
                          "fresh_rel_error_mean": m, "fresh_rel_error_std": 0.1 * m,
                          "fresh_n_seeds": 10, "fresh_epsilon_achieved": e, **extra}
                         for s, e, k, rel, m, extra in rows])


def _private(rows):
    return pd.DataFrame([{"solver": s, "epsilon": e, "passes": k, "neighbouring": rel,
                          "config_id": released_id(s, e, k), "rel_error_mean": m,
                          "rel_error_std": 0.2 * m, "n_seeds": 10, "epsilon_achieved": e,
                          **extra} for s, e, k, rel, m, extra in rows])


R1 = "replace_one"


@pytest.fixture
def tables():
    baseline = {
        "cal": _fresh([("dp_cd", 1.0, 2, R1, 0.1, {}), ("dp_sgd", 1.0, 2, R1, 0.3, {}),
                       ("dp_cd", 1.0, 10, R1, 0.05, {}), ("dp_sgd", 1.0, 10, R1, 0.04, {})]),
        "cal_aor": _fresh([("dp_sgd", 1.0, 2, "add_or_remove_one", 0.2, {})]),
        "phish": _fresh([(s, 0.1, 10, "replace_special", 0.5,
                          {"fresh_test_metric_median": acc})
                         for s, acc in (("dp_scd", 0.9), ("dp_sgd", 0.8))]),
    }
    holdout = {"metric": "accuracy", "test_metric_q25": 0.6, "test_metric_q75": 0.9}
    private = {
        "cal": _private([("dp_cd", 1.0, 2, R1, 0.2, {}), ("dp_sgd", 1.0, 2, R1, 5.0, {}),
                         ("dp_cd", 1.0, 10, R1, 0.1, {}), ("dp_sgd", 1.0, 10, R1, 9.0, {})]),
        "cal_aor": _private([("dp_sgd", 1.0, 2, "add_or_remove_one", 0.15, {})]),
        "phish": _private([("dp_scd", 0.1, 10, "replace_special", 0.6,
                            {**holdout, "test_metric_median": 0.7}),
                           ("dp_sgd", 0.1, 10, "replace_special", 0.6,
                            {**holdout, "test_metric_median": 0.75})]),
    }
    return baseline, private


def test_cells_paired_and_verdicts(tables):
    table = pc.comparison_table(*tables)
    assert len(table) == 4 + 1 + 2
    assert set(table["paper"]) == {"DP-CD Table 2", "DP-SCD Figure 1"}
    aor = table[table["solver"] == "dp_sgd (aor)"].iloc[0]
    assert aor["experiment"] == "cal" and aor["neighbouring"] == "add_or_remove_one"
    verdicts = pc.conclusions(table).set_index(["experiment", "passes", "comparison"])
    # pass 2: DP-CD wins both ways; pass 10: DP-SGD won tuned on data, loses privately
    assert verdicts.loc[("cal", 2, "dp_cd vs dp_sgd"), "survives"]
    assert not verdicts.loc[("cal", 10, "dp_cd vs dp_sgd"), "survives"]
    assert verdicts.loc[("cal", 10, "dp_cd vs dp_sgd"), "private_winner"] == "dp_cd"
    # against DP-SGD under add-or-remove: DP-CD won, then lost
    row = verdicts.loc[("cal", 2, "dp_cd vs dp_sgd (aor)")]
    assert row["nonprivate_winner"] == "dp_cd" and row["private_winner"] == "dp_sgd (aor)"
    # DP-SCD Figure 1 on accuracy (higher wins): 0.9 > 0.8, then 0.7 < 0.75
    fig1 = verdicts.loc[("phish", 10, "dp_scd vs dp_sgd")]
    assert fig1["nonprivate_winner"] == "dp_scd" and fig1["private_winner"] == "dp_sgd"


def test_figure_1_mse_lower_wins():
    """On the ridge problem (YearPredictionMSD) Figure 1's metric is the test
    MSE: the lower wins, under both tunings."""
    rs = "replace_special"
    baseline = {"msd": _fresh([(s, 1.0, 50, rs, 0.5, {"fresh_test_metric_median": mse})
                               for s, mse in (("dp_scd", 75.3), ("dp_sgd", 75.4))])}
    holdout = {"metric": "mse", "test_metric_q25": 75.0, "test_metric_q75": 80.0}
    private = {"msd": _private([("dp_scd", 1.0, 50, rs, 0.6, {**holdout, "test_metric_median": 77.0}),
                                ("dp_sgd", 1.0, 50, rs, 0.6, {**holdout, "test_metric_median": 76.0})])}
    verdict = pc.conclusions(pc.comparison_table(baseline, private)).iloc[0]
    assert verdict["paper"] == "DP-SCD Figure 1"
    assert verdict["nonprivate_winner"] == "dp_scd" and verdict["private_winner"] == "dp_sgd"
    assert not verdict["survives"]


def test_command_writes_section_and_figures(tables, tmp_path):
    baseline, private = tables
    (tmp_path / "fresh").mkdir()
    (tmp_path / "tables").mkdir()
    for name, table in baseline.items():
        table.to_csv(tmp_path / "fresh" / f"{name}.csv", index=False)
    for name, table in private.items():
        table.to_csv(tmp_path / "tables" / f"{name}.csv", index=False)
    summary = tmp_path / "summary.md"
    summary.write_text("# Summary across experiments\n\nbody\n")
    args = argparse.Namespace(baseline=tmp_path / "fresh", private=tmp_path / "tables",
                              baseline_runs=None, private_runs=None,
                              summary=summary, section=None, out=tmp_path / "private_tuning.csv",
                              figures=tmp_path)
    cmd_private_compare(args)
    cmd_private_compare(args)  # again: the section replaces itself
    text = summary.read_text()
    assert text.startswith("# Summary across experiments\n\nbody\n")
    assert text.count("## Private tuning against tuning on the private data") == 1
    assert "DP-CD Table 2, dp_cd vs dp_sgd: 1 of 2" in text
    assert (tmp_path / "private_tuning_dpcd_table_2.png").stat().st_size > 1000
    assert (tmp_path / "private_tuning_dpscd_figure_1.png").stat().st_size > 1000
    assert len(pd.read_csv(tmp_path / "private_tuning_conclusions.csv")) == 4


def test_medians_from_the_runs(tables):
    baseline, private = tables
    runs = pd.DataFrame({"solver": "dp_cd", "epsilon": 1.0, "passes": 2, "pass": 2.0,
                         "rel_error": [0.1, 0.2, 1e6], "seed_index": [0, 1, 2],
                         "config_id": "x"})
    table = pc.comparison_table(baseline, private, private_runs={"cal": runs})
    cell = table[(table["solver"] == "dp_cd") & (table["passes"] == 2)].iloc[0]
    assert cell["private_rel_error_median"] == pytest.approx(0.2)
    assert "private_median" in pc.comparison_markdown(table, pc.conclusions(table))


@pytest.fixture
def gcd_tables():
    """A DP-GCD Table 3 problem: DP-GCD (two rules) and DP-CD, DP-SGD at
    passes of their own. Tuned on the data, gs_r beats both rivals at its best
    passes; privately, DP-CD's best passes beat gs_r's best, and gs_q wins at
    every pair of passes against DP-SGD but not against DP-CD."""
    def rows(values):
        return [(s, 1.0, k, R1, m, {}) for s, k, m in values]

    base = [("dp_cd", 1, 0.02), ("dp_cd", 5, 0.01), ("dp_sgd", 1, 0.5), ("dp_sgd", 5, 0.7),
            ("dp_gcd", 4, 0.001), ("dp_gcd", 20, 0.05),
            ("dp_gcd_gs_q", 4, 0.002), ("dp_gcd_gs_q", 20, 0.03)]
    ours = [("dp_cd", 1, 0.3), ("dp_cd", 5, 0.004), ("dp_sgd", 1, 0.9), ("dp_sgd", 5, 2.0),
            ("dp_gcd", 4, 0.005), ("dp_gcd", 20, 1.5),
            ("dp_gcd_gs_q", 4, 0.003), ("dp_gcd_gs_q", 20, 0.4)]
    return {"mad": _fresh(rows(base))}, {"mad": _private(rows(ours))}


def test_dp_gcd_table_3_routing_and_verdicts(gcd_tables, tables):
    baseline, private = tables
    baseline, private = {**baseline, **gcd_tables[0]}, {**private, **gcd_tables[1]}
    table = pc.comparison_table(baseline, private)
    # an experiment with a DP-GCD entry is Table 3's even though it runs dp_cd too;
    # the others keep their papers
    assert set(table.loc[table["experiment"] == "mad", "paper"]) == {"DP-GCD Table 3"}
    assert set(table.loc[table["experiment"] == "cal", "paper"]) == {"DP-CD Table 2"}
    assert set(table.loc[table["experiment"] == "phish", "paper"]) == {"DP-SCD Figure 1"}
    verdicts = pc.conclusions(table)
    gcd = verdicts[verdicts["paper"] == "DP-GCD Table 3"].set_index("comparison")
    # one cell per (experiment, epsilon): each DP-GCD rule against each rival
    assert sorted(gcd.index) == ["dp_gcd vs dp_cd", "dp_gcd vs dp_sgd",
                                 "dp_gcd_gs_q vs dp_cd", "dp_gcd_gs_q vs dp_sgd"]
    assert gcd["passes"].isna().all()
    row = gcd.loc["dp_gcd vs dp_cd"]  # 0.001 @ 4 < 0.01 @ 5, then 0.005 @ 4 > 0.004 @ 5
    assert row["nonprivate_winner"] == "dp_gcd" and row["private_winner"] == "dp_cd"
    assert not row["survives"] and row["private_passes"] == "4 vs 5"
    assert row["nonprivate_passes"] == "4 vs 5"
    row = gcd.loc["dp_gcd_gs_q vs dp_sgd"]  # 0.4 at gs_q's worst passes < 0.9
    assert row["survives"] and row["private_every_passes"]
    row = gcd.loc["dp_gcd vs dp_sgd"]  # wins at its best passes, not at 20 (1.5 > 0.9)
    assert row["survives"] and not row["private_every_passes"]
    row = gcd.loc["dp_gcd_gs_q vs dp_cd"]  # 0.003 @ 4 < 0.004 @ 5; 0.4 @ 20 is not
    assert row["survives"] and not row["private_every_passes"]
    # DP-CD Table 2's verdicts are unchanged by the new paper
    cd = verdicts[verdicts["paper"] == "DP-CD Table 2"]
    assert len(cd) == 3 and cd["private_every_passes"].isna().all()
    text = pc.comparison_markdown(table, verdicts)
    assert "DP-GCD Table 3, dp_gcd vs dp_cd: 0 of 1" in text
    assert "DP-GCD Table 3, dp_gcd vs dp_sgd: 1 of 1" in text


def test_dp_gcd_figure(gcd_tables, tmp_path):
    table = pc.comparison_table(*gcd_tables)
    pc.plot_comparison(table, "DP-GCD Table 3", tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 1000
