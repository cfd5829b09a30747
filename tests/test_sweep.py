"""Grids, chunks and seeds of a sweep."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcd.sweep import chunk_of, configurations, expand_grid
from dpcd.streams import config_id, run_seed


def test_geomspace_grid_matches_numpy():
    assert expand_grid({"geomspace": [1e-3, 1e6, 100]}) == pytest.approx(np.geomspace(1e-3, 1e6, 100))
    assert expand_grid([1, 0.5]) == [1, 0.5]


def test_configurations_are_the_cartesian_product_in_a_fixed_order():
    grid = {"step": [0.1, 1.0], "clip": {"geomspace": [1.0, 100.0, 3]}, "smoothness_fraction": 0.1}
    configs = configurations("dp_cd_p", grid, passes=[2, 5], epsilons=[1.0])
    assert len(configs) == 2 * 3 * 2
    assert all(c["smoothness_fraction"] == 0.1 and c["solver"] == "dp_cd_p" for c in configs)
    assert configs == configurations("dp_cd_p", dict(reversed(grid.items())), [2, 5], [1.0])
    assert len({config_id(c) for c in configs}) == len(configs)


@given(st.integers(1, 60), st.integers(1, 9))
def test_chunks_partition_the_configurations(n_configs, n_chunks):
    configs = [{"i": i} for i in range(n_configs)]
    chunks = [chunk_of(configs, k, n_chunks) for k in range(n_chunks)]
    assert sorted(c["i"] for chunk in chunks for c in chunk) == list(range(n_configs))
    sizes = [len(chunk) for chunk in chunks]
    assert max(sizes) - min(sizes) <= 1
    with pytest.raises(ValueError, match="chunk"):
        chunk_of(configs, n_chunks, n_chunks)


def test_config_id_is_stable_and_order_free():
    assert config_id({"a": 1, "b": 2.0}) == config_id({"b": 2.0, "a": 1})
    assert config_id({"a": 1}) != config_id({"a": 2})
    # Pinned: the id must not change between machines or versions.
    assert config_id({"solver": "dp_cd", "step": 1.0}) == "a8cb80654ef4"


def test_run_seeds_are_distinct_and_reproducible():
    seeds = [run_seed(0, k) for k in range(100)]
    assert len(set(seeds)) == 100
    assert seeds == [run_seed(0, k) for k in range(100)]
    assert run_seed(1, 0) != run_seed(0, 0)


def test_compact_ledger_summarises_only_long_vectors():
    import hashlib

    from dpcd.tracking.payload import compact_ledger

    long = list(np.linspace(0.5, 2.0, 1001))
    ledger = {"epsilon": 1.0, "mechanisms": [{"noise_scale": long, "sensitivity": [0.1, 0.2]}],
              "note": "ok"}
    out = compact_ledger(ledger, limit=1000)
    summary = out["mechanisms"][0]["noise_scale"]
    assert summary["length"] == 1001 and summary["min"] == 0.5 and summary["max"] == 2.0
    assert summary["mean"] == pytest.approx(1.25)
    assert summary["sha256"] == hashlib.sha256(np.asarray(long, "<f8").tobytes()).hexdigest()
    assert out["mechanisms"][0]["sensitivity"] == [0.1, 0.2]
    assert out["epsilon"] == 1.0 and out["note"] == "ok"
    assert compact_ledger(ledger, limit=2000) == ledger


def test_solver_input_densifies_only_dense_ish_sparse_data():
    import scipy.sparse as sp

    from dpcd.sweep.problem import DENSE_ABOVE, as_solver_input

    dense_ish = sp.random(60, 10, density=0.5, format="csr", random_state=0)
    out = as_solver_input(dense_ish)
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, dense_ish.toarray())
    sparse = sp.random(60, 1000, density=DENSE_ABOVE / 10, format="csr", random_state=0)
    out = as_solver_input(sparse)
    assert sp.isspmatrix_csc(out) and out.has_sorted_indices


def _config_columns(passes, n_rows, holdout):
    """One configuration's columns, as :func:`dpcd.sweep.tidy.record_columns` gives them."""
    out = {"experiment": "exp", "config_id": "0123456789ab", "passes": passes,
           "seed": np.arange(n_rows, dtype=np.int64), "objective": np.linspace(1, 2, n_rows),
           "status": "done", "clip": np.nan, "step": 0.5}
    if holdout:
        out.update(metric="mse", val_metric=np.full(n_rows, np.nan))
    out["nonprivate_inputs"] = ""
    return out


CHUNKS = ([_config_columns(2, 3, True), _config_columns(5, 4, True)],  # int passes stay int64
          [_config_columns(2, 3, False), _config_columns(0.5, 2, False)])  # fractional: float64


def test_chunk_table_matches_one_frame_per_configuration():
    """The chunk table is built once from columns; it must equal what one
    DataFrame per configuration, concatenated, gave (values, dtypes, order)."""
    import pandas as pd

    from dpcd.sweep.tidy import stack_rows

    for rows in CHUNKS:
        expected = pd.concat([pd.DataFrame(c) for c in rows], ignore_index=True)
        pd.testing.assert_frame_equal(stack_rows(rows), expected)


def test_a_table_written_from_columns_reads_as_pandas_wrote_it(tmp_path):
    """A solve job writes its table's columns with pyarrow alone (no pandas in
    its start-up): every reader (``pandas.read_parquet``) gets the table that
    pandas writing the DataFrame gave, values, dtypes and index; the empty
    table too."""
    import pandas as pd
    import pyarrow.parquet as pq

    from dpcd.sweep.tidy import empty_columns, empty_table, stack_columns, stack_rows, write_columns

    for k, (columns, frame) in enumerate([*((stack_columns(rows), stack_rows(rows))
                                            for rows in CHUNKS),
                                          (empty_columns(), empty_table())]):
        write_columns(columns, tmp_path / f"{k}.parquet")
        frame.to_parquet(tmp_path / f"{k}-pandas.parquet", index=False)
        got, want = (pd.read_parquet(tmp_path / f"{k}{end}.parquet") for end in ("", "-pandas"))
        pd.testing.assert_frame_equal(got, want, check_exact=True)
        pd.testing.assert_frame_equal(got, frame.reset_index(drop=True), check_exact=True)
        # and the same arrow table, types and nulls (a reader without pandas),
        # pandas' own metadata apart
        arrow = [pq.read_table(tmp_path / f"{k}{end}.parquet").replace_schema_metadata(None)
                 for end in ("", "-pandas")]
        assert arrow[0].equals(arrow[1])


@pytest.mark.parametrize("per_block", [None, 3])
def test_dp_sgd_configurations_run_together_give_each_run_alone(per_block, monkeypatch):
    """A chunk runs DP-SGD's configurations of one seed in one kernel call
    (its spec's run_many), in blocks that bound the final iterates held at once (``per_block``
    configurations of the 32 here): its table must be the one-run-at-a-time
    table, bit for bit apart from the times (amortised shares of the calls)."""
    import pandas as pd

    from dpcd.sweep import runner

    if per_block is not None:
        monkeypatch.setattr(runner, "TOGETHER_ENTRIES", per_block * 3 * 4)  # 3 seeds, 4 features

    from dpcd.problems import make_problem
    from dpcd.algorithms import Budget, get
    from dpcd.algorithms.dp_sgd import run as run_dp_sgd
    from dpcd.streams import run_entropy, run_identity, run_seed
    from dpcd.sweep.problem import SweepProblem
    from dpcd.sweep.run import chunk_runs
    from dpcd.sweep.runner import run_configurations

    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, 4))
    y = X @ rng.standard_normal(4) + 0.1 * rng.standard_normal(50)
    datafit, penalty = make_problem("squares", "l1", 0.05)
    problem = SweepProblem(X=X, y=y, datafit=datafit, penalty=penalty,
                           smoothness=datafit.coordinate_smoothness(X),
                           global_smoothness=datafit.global_smoothness(X),
                           max_abs=np.abs(X).max(axis=0), loss="squares", alpha=0.05)
    spec = {"experiment": "e", "solver": "dp_sgd", "dataset": "d", "variant": "raw",
            "problem": {"loss": "squares", "penalty": "l1", "alpha": 0.05},
            "privacy": {"epsilon": [1.0, 5.0], "delta": 1e-4},
            "grid": {"step": [0.1, 1.0], "clip": [0.1, 1.0], "batch_size": [1, 5]},
            "passes": [2, 3.5], "seeds": 3, "base_seed": 0, "chunks": 1}
    assert get("dp_sgd").runtime.run_many is not None
    configs, _ = chunk_runs(spec, 0)
    seeds = [run_seed(0, k) for k in range(3)]
    together, records = run_configurations(spec, configs, seeds, problem, 0.01)
    alone, _ = run_configurations(spec, configs, seeds, problem, 0.01, together=False)
    pd.testing.assert_frame_equal(together.drop(columns="time"), alone.drop(columns="time"))
    # the one-run adapter is the same run again, with the same ledger
    entropy = run_entropy(seeds[1], run_identity(spec["experiment"], configs[5]))
    result, ledger = run_dp_sgd(problem, configs[5], entropy,
                                Budget(configs[5]["epsilon"], 1e-4))
    np.testing.assert_array_equal(result.objective, records[5].objective[1])
    assert ledger.to_dict() == records[5].ledgers[1].to_dict()
