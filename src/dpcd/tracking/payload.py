"""The MLflow payload of a sweep: one child run per configuration, as plain data.

:func:`mlflow_runs` turns the sweep's records (:func:`dpcd.sweep.run.run_chunk`)
into what MLflow gets (params, per-pass curves, tags, the privacy ledger
artifact); the solve job writes them to a runs file
(:mod:`dpcd.tracking.runs_file`) and the experiment's aggregate job ingests
that (:mod:`dpcd.tracking.ingest`). A private search's runs get the tags of
their role (:func:`private_search_runs`: candidates, the researcher's private
record; the released run). Nothing here imports MLflow.
"""

import hashlib
import json

import numpy as np

from dpcd.privacy.ledger import nonprivate_inputs

# Per-coordinate vectors longer than this are summarised in the MLflow ledger
# artifact: on dorothea (88 119 coordinates) the full vectors made it 8.6 MB per
# run and MLflow logging took 320 of a job's 350 s.  The summary keeps the
# extremes and a hash of the exact values.
VECTOR_LIMIT = 1000

# A run's per-pass metrics, in the order each pass lists them.
CURVES = ("objective", "rel_error", "rel_error_min", "rel_error_max")


def compact_ledger(item, limit=VECTOR_LIMIT):
    """A ledger's JSON form with numeric lists longer than ``limit`` summarised.

    Each such list becomes ``{"length", "min", "max", "mean", "sha256"}``, the
    hash being that of the values as little-endian float64 bytes.
    """
    if isinstance(item, dict):
        return {k: compact_ledger(v, limit) for k, v in item.items()}
    if isinstance(item, list):
        if all(isinstance(v, (int, float)) for v in item):
            if len(item) <= limit:  # kept whole, not walked value by value
                return item
            values = np.asarray(item, dtype="<f8")
            return {"length": int(values.size), "min": float(values.min()),
                    "max": float(values.max()), "mean": float(values.mean()),
                    "sha256": hashlib.sha256(values.tobytes()).hexdigest()}
        return [compact_ledger(v, limit) for v in item]
    return item


def mlflow_runs(records, spec, problem):
    """One MLflow child run per configuration: params, per-pass curves, budget.

    Seeds are summarised (mean, min, max per pass) so a sweep of thousands of
    configurations stays thousands of runs, not tens of thousands; the
    per-seed values are in the job's parquet table.
    """
    runs = []
    problem_spec = spec["problem"]
    for record in records:
        config = record.config
        params = {
            "solver": spec["solver"],
            "dataset": spec["dataset"],
            "variant": spec["variant"],
            "loss": problem_spec["loss"],
            "penalty": problem_spec["penalty"],
            "alpha": getattr(problem, "alpha", problem_spec.get("alpha", 0.0)),
            "n_samples": problem.n_samples,
            "n_features": problem.n_features,
            "seeds": spec["seeds"],
            "base_seed": spec["base_seed"],
            **({"search_stage": spec["stage"]} if "stage" in spec else {}),
            **({"search_fidelity": spec["fidelity"]} if "fidelity" in spec else {}),
            **({"lambda_max_fraction": problem_spec["lambda_max_fraction"]}
               if "lambda_max_fraction" in problem_spec else {}),
            **{k: v for k, v in config.items() if k != "solver"},
        }
        # each pass's curves, over the seeds, as Python floats (numpy's per-value
        # calls cost a sweep's payload more than the rest): the objective's mean
        # on contiguous rows, summed as each pass's column alone was (pairwise)
        curves = zip(np.ascontiguousarray(record.objective.T).mean(axis=1).tolist(),
                     record.rel_error.mean(axis=0).tolist(),
                     record.rel_error.min(axis=0).tolist(),
                     record.rel_error.max(axis=0).tolist())
        metrics = [(name, value, step) for step, values in enumerate(curves)
                   for name, value in zip(CURVES, values)]
        final = record.rel_error[:, -1]
        metrics += [
            ("final_rel_error_mean", final.mean(), 0),
            ("final_rel_error_std", final.std(ddof=1) if final.size > 1 else 0.0, 0),
            ("time_mean", record.time.mean(), 0),
        ]
        if record.holdout is not None:
            for name in ("val", "test"):
                values = record.holdout[name]
                if np.isfinite(values).any():
                    metric = f"{name}_{record.holdout['metric']}_median"
                    metrics.append((metric, float(np.nanmedian(values)), 0))
        ledger = record.ledgers[0]
        tags = {
            "dpcd.experiment": spec["experiment"],
            "dpcd.solver": spec["solver"],
            "sweep.config_id": record.config_id,
            "status": record.status,
            "privacy.nonprivate_inputs": nonprivate_inputs(problem, ledger),
        }
        artifacts = {}
        if ledger is None:
            tags["privacy.private"] = "false"
        else:
            tags["privacy.private"] = "true"
            tags["privacy.accountant"] = ledger.accountant
            # e.g. privacy.invalid_bound=true: the stated epsilon is no guarantee
            tags.update({f"privacy.{caveat}": "true" for caveat in ledger.caveats})
            params.update(ledger.flat_params())
            metrics += [(k, v, 0) for k, v in ledger.flat_metrics().items()]
            # The optimisation mechanism is the last one (DP-CD-P's estimate comes first).
            metrics += [
                ("privacy.noise_multiplier", ledger.mechanisms[-1].noise_multiplier, 0),
                ("privacy.n_releases", sum(m.count for m in ledger.mechanisms), 0),
            ]
            # seeds share one ledger unless the noise depended on the seed
            # (DP-CD-P's private constants); compare objects, serialise once
            same = all(item == ledger for item in record.ledgers)
            shown = ledger.to_dict() if same else [item.to_dict() for item in record.ledgers]
            artifacts["privacy_ledger.json"] = json.dumps(
                compact_ledger(shown), indent=1, sort_keys=True
            )
        if spec.get("validation_split", "fixed") != "fixed":
            # a data-independent redraw of the hold-out per run seed: said, not a
            # non-private input (selecting on validation is: hyperparameter_selection)
            tags["dpcd.validation_split"] = spec["validation_split"]
        if record.splits is not None:
            # the seed of the division each seed ran on: the dataset's split_seed
            # (fixed), or each run seed (per_seed, in the table's seed_index order)
            kind = record.splits[0]["validation_split"]
            seeds = [str(split["seed"]) for split in record.splits]
            params["validation_split"] = kind
            params["validation_split_seed"] = ",".join(seeds) if kind == "per_seed" else seeds[0]
        name = f"{spec['solver']}-{record.config_id}"
        if spec.get("seed_set") == "fresh":
            # A re-run of a selected configuration on new seeds: a release of its
            # own, with its own ledger, never folded into the selection runs' claim.
            tags["dpcd.seed_set"] = "fresh"
            tags["privacy.release"] = "fresh_seeds"
            name += "-fresh"
        runs.append(
            {"name": name, "params": params, "tags": tags, "metrics": metrics,
             "status": record.status, "artifacts": artifacts,
             "start_time": record.start_ms, "end_time": record.end_ms}
        )
    return runs


#: Tag of every candidate run: the researcher's private record, not a release.
PRIVATE_RECORD = ("candidate run: the researcher's private record, not released; "
                  "publishing it, or the number of candidates, voids the release's epsilon")


def private_search_tags(role):
    """The MLflow tags of a private search's run from its ``role``
    (:func:`dpcd.tuning.workflow.run_private_chunk`): a candidate is the
    researcher's private record; the released run names the configuration it
    was and carries its noisy score (never K nor the other candidates)."""
    if role["role"] == "candidate":
        return {"role": "candidate", "dpcd.search": "private",
                "dpcd.candidate": str(role["candidate"]), "privacy.released": "false",
                "privacy.private_record": PRIVATE_RECORD}
    return {"role": "released", "dpcd.search": "private",
            "dpcd.released_config_id": role["config_id"], "privacy.released": "true",
            "privacy.noisy_score": repr(role["noisy_score"])}


def private_search_runs(records, spec, problem):
    """The MLflow runs of a private search's candidates and released runs
    (``records``: pairs of a run and its role): :func:`mlflow_runs` with each
    run's tags (:func:`private_search_tags`), a name of its own, and, for the
    released run, the training's noise multiplier as
    ``privacy.noise_multiplier``: its last mechanism is the score, the one
    before it the training's steps (DP-GCD: its gradient entry, as its
    candidates report; DP-CD-P: its Gaussian steps, after its smoothness
    release)."""
    runs = mlflow_runs([record for record, _ in records], spec, problem)
    for run, (record, role) in zip(runs, records):
        run["tags"].update(private_search_tags(role))
        run["params"]["search"] = "private"
        cell = f"eps{record.config['epsilon']:g}-passes{record.config['passes']:g}"
        suffix = f"candidate{role['candidate']}" if role["role"] == "candidate" else "released"
        run["name"] = f"{spec['solver']}-private-seed{spec['chunk']}-{cell}-{suffix}"
        if role["role"] == "released":
            training = record.ledgers[0].mechanisms[-2]
            run["metrics"] = [m for m in run["metrics"] if m[0] != "privacy.noise_multiplier"]
            run["metrics"].append(("privacy.noise_multiplier", training.noise_multiplier, 0))
    return runs
