"""``dpcd select``: the select stage of ``search: staged`` (workflow rule
``select``): the screen's tables in, the kept configurations out."""

import json
import logging

log = logging.getLogger("dpcd")


def cmd_select(args):
    """Keep the best ``keep`` configurations per (solver, epsilon, passes)."""
    import pandas as pd

    from dpcd.data.io import atomic_write
    from dpcd.report.search import keep_best

    spec = json.loads(args.spec)
    runs = pd.concat([pd.read_parquet(path) for path in args.runs], ignore_index=True)
    table = keep_best(runs, spec["select_by"], spec["keep"])
    log.info(
        "kept %d of %d configurations (%d per solver, epsilon and passes)",
        table["config_id"].nunique(), runs["config_id"].nunique(), spec["keep"],
    )
    atomic_write(args.out, lambda tmp: table.to_csv(tmp, index=False))


def register(subparsers):
    """Add ``select`` to the ``dpcd`` command."""
    p = subparsers.add_parser("select", help="staged search: keep the screen's best")
    p.add_argument("--spec", required=True, help="JSON: select_by, keep")
    p.add_argument("--runs", nargs="+", required=True, help="the screen's tables")
    p.add_argument("--out", required=True, help="selection CSV")
    p.set_defaults(func=cmd_select)
