"""What a sweep's runs become: one :class:`ConfigRecord` per configuration
(for MLflow) and the tidy table, one row per (configuration, seed, pass).

The table is built as columns (a dict of arrays), then a DataFrame for the
callers that read it; a solve job writes the columns to parquet with pyarrow
(:func:`write_columns`) and never imports pandas (0.5 s of its start-up)."""

from dataclasses import dataclass, field, replace

import numpy as np

from dpcd import algorithms
from dpcd.streams import config_id


@dataclass
class ConfigRecord:
    """Everything MLflow gets about one configuration (all its seeds)."""

    config: dict
    config_id: str
    status: str
    objective: np.ndarray  # shape (n_seeds, passes + 1)
    rel_error: np.ndarray  # shape (n_seeds, passes + 1)
    time: np.ndarray  # shape (n_seeds,), seconds in the kernels
    ledgers: list = field(default_factory=list)
    holdout: dict = None  # metric name, validation and test values per seed
    start_ms: int = None  # wall clock of the configuration's first and last seed (MLflow)
    end_ms: int = None
    # each seed's train/validation division (SeedProblems.division), None without one
    splits: list = None
    # the config_id of the run this record gives to another epsilon (a
    # non-private run, not run again: its time is that run's), else None
    copy_of: str = None


def records_run(records):
    """The records of configurations run (a non-private run's copies at other
    epsilons left out: they ran nothing)."""
    return [record for record in records if record.copy_of is None]


def kernel_seconds(records):
    """Seconds in the solver kernels, each run counted once (not once per epsilon)."""
    return float(sum(record.time.sum() for record in records_run(records)))


def tidy_results(spec, runs, seeds, delta, also_at=(), first_seed=0, columns=False):
    """The table and records of configurations run on ``seeds``.

    Parameters
    ----------
    runs : list of tuple
        Per configuration: its :class:`ConfigRecord`, the solver's checkpoints
        (passes done) of its first seed, the passes it ran, its non-private
        inputs (table column) and its support counts (an array of shape
        (n_seeds, 2), or None).
    also_at : list of float
        Other epsilons the runs stand for (:func:`_every_epsilon`: a
        non-private solver's, run at the first epsilon only).
    first_seed : int
        The replicate index of ``seeds[0]`` (the ``seed_index`` column).
    columns : bool
        Return the table as columns (:func:`stack_columns`), not a DataFrame.

    Returns
    -------
    table : pandas.DataFrame, or dict of arrays if ``columns``
    records : list of ConfigRecord
    """
    rows = []
    for record, checkpoints, ran, nonprivate, counts in runs:
        row = record_columns(spec, record, seeds, delta, checkpoints, ran, first_seed)
        row["nonprivate_inputs"] = nonprivate
        n_points = record.objective.shape[1]
        for k, name in enumerate(("nnz_correct", "nnz_incorrect")):
            row[name] = np.nan if counts is None else np.repeat(counts[:, k], n_points)
        rows.append(row)
    table = stack_columns(rows) if rows else empty_columns()
    records = [run[0] for run in runs]
    if also_at:
        table, records = _every_epsilon(table, records, also_at)
    return (table if columns else _frame(table)), records


def record_columns(spec, record, seeds, delta, checkpoints, ran, first_seed=0):
    """The columns of one configuration's rows: arrays of one value per row, or
    scalars that :func:`stack_rows` repeats (the table is built once per chunk;
    a DataFrame per configuration cost ~5 ms each, 1.2 s of a 250-configuration job).
    The held-out metrics are on each seed's last row only."""
    config, objective, ledgers = record.config, record.objective, record.ledgers
    n_seeds, n_points = objective.shape
    indices = np.arange(first_seed, first_seed + n_seeds)
    # The pass column is the solver's own checkpoints (float: 0, 1, ..., and
    # the fractional end), the same for every seed of a configuration.
    pass_index = np.tile(np.asarray(checkpoints, dtype=np.float64), n_seeds)
    # Every pass costs the same, so the time at pass k is k/(passes run) of the total.
    elapsed = np.repeat(record.time, n_points) * pass_index / ran
    columns = {
        "experiment": spec["experiment"],
        "solver": spec["solver"],
        "config_id": record.config_id,
        "epsilon": float(config["epsilon"]),
        "delta": delta,
        "passes": config["passes"],  # int for integer grids, float for fractional ones
        "seed_index": np.repeat(indices, n_points),
        "seed": np.repeat(np.asarray([-1 - k if s is None else s for k, s in zip(indices, seeds)],
                                     dtype=np.int64), n_points),
        "pass": pass_index,
        "objective": objective.ravel(),
        "rel_error": record.rel_error.ravel(),
        "time": elapsed,
        "status": record.status,
    }
    for name in algorithms.table_hyperparameters():
        columns[name] = float(config[name]) if name in config else np.nan
    achieved = [
        ledger.epsilon_achieved if ledger is not None else np.nan for ledger in ledgers
    ]
    columns["epsilon_achieved"] = np.repeat(achieved, n_points)
    # the relation the run's guarantee holds under ("none": not private)
    columns["neighbouring"] = next(
        (ledger.neighbouring for ledger in ledgers if ledger is not None), "none")
    holdout = record.holdout
    if holdout is not None:
        last = np.zeros(n_seeds * n_points, dtype=bool)
        last[n_points - 1::n_points] = True
        columns["metric"] = holdout["metric"]
        for name in ("val", "test"):
            column = np.full(n_seeds * n_points, np.nan)
            column[last] = holdout[name]
            columns[f"{name}_metric"] = column
    return columns


def stack_rows(rows):
    """One DataFrame from the configurations' columns (:func:`stack_columns`)."""
    return _frame(stack_columns(rows))


def stack_columns(rows):
    """One table's columns from the configurations' (see :func:`record_columns`).

    Scalars are repeated over their configuration's rows; the concatenated
    columns get the dtypes ``pd.concat`` of one DataFrame per configuration
    gave (int64 ``passes`` unless some configuration's passes are fractional).
    """
    data = {}
    for name in rows[0]:
        parts = []
        for columns in rows:
            value, n_rows = columns[name], len(columns["objective"])
            if np.ndim(value) == 0:
                # object for strings: numpy's fixed-width unicode is not what pandas stores
                value = np.full(n_rows, value, dtype=object if isinstance(value, str) else None)
            parts.append(value)
        data[name] = np.concatenate(parts)
    return data


def empty_table():
    """The table of no runs, with every column."""
    return _frame(empty_columns())


def empty_columns():
    """The columns of no runs."""
    columns = [
        "experiment", "solver", "config_id", "epsilon", "delta", "passes",
        "seed_index", "seed", "pass", "objective", "rel_error", "time", "status",
        *algorithms.table_hyperparameters(), "epsilon_achieved", "neighbouring", "nonprivate_inputs",
        "metric", "val_metric", "test_metric", "nnz_correct", "nnz_incorrect",
    ]
    return {name: np.empty(0) for name in columns}  # float, as pandas makes an empty list


def _frame(columns):
    import pandas as pd

    return pd.DataFrame(columns)


def write_table(tables, path):
    """Write a solve job's table as parquet: a sweep chunk's, as columns, with
    pyarrow alone (:func:`write_columns`); else (a fresh job's, one DataFrame
    per solver) their concatenation, with pandas."""
    if len(tables) == 1 and isinstance(tables[0], dict):
        write_columns(tables[0], path)
        return
    import pandas as pd

    table = tables[0] if len(tables) == 1 else pd.concat(tables, ignore_index=True)
    table.to_parquet(path, index=False)


def write_columns(columns, path):
    """Write a table's columns (:func:`stack_columns`) as parquet, with pyarrow
    alone: ``pandas.read_parquet`` reads back the DataFrame of the same
    columns, as if pandas had written it (the types it writes: NaN as null,
    strings as large strings; no index: a range, as pandas reads it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_arrays([_arrow(pa, values) for values in columns.values()],
                                 names=list(columns))
    pq.write_table(table, path)


def _arrow(pa, values):
    """One column as an arrow array, built from its buffers: ``pyarrow.array``
    would import pandas (half a second of a solve job) to look for its types."""
    n = len(values)
    if values.dtype == object and all(isinstance(v, str) for v in values):
        data = [v.encode() for v in values]
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum([len(b) for b in data], out=offsets[1:])
        return pa.Array.from_buffers(pa.large_string(), n,
                                     [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])
    if values.dtype.kind not in "fi":
        return pa.array(values, from_pandas=True)  # no such column today
    values = np.ascontiguousarray(values)
    missing = np.isnan(values) if values.dtype.kind == "f" else np.zeros(n, dtype=bool)
    validity = pa.py_buffer(np.packbits(~missing, bitorder="little")) if missing.any() else None
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), n,
                                 [validity, pa.py_buffer(values)], null_count=int(missing.sum()))


def _every_epsilon(table, records, epsilons):
    """A non-private solver's runs at the first epsilon, given to each of
    ``epsilons``: the rows and records each cell reads, each with its epsilon
    and that configuration's id, as if run there (the same results bit for bit:
    the streams are keyed without epsilon, :func:`dpcd.streams.stream_identity`)."""
    tables, copies = [table], list(records)
    for epsilon in epsilons:
        ids = {}
        for record in records:
            config = {**record.config, "epsilon": float(epsilon)}
            ids[record.config_id] = config_id(config)
            copies.append(replace(record, config=config, config_id=ids[record.config_id],
                                  copy_of=record.config_id))
        n_rows = len(table["config_id"])
        tables.append({**table, "epsilon": np.full(n_rows, float(epsilon)),
                       "config_id": np.array([ids[cid] for cid in table["config_id"]],
                                             dtype=object)})
    return {name: np.concatenate([part[name] for part in tables]) for name in table}, copies
