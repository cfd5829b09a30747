"""``dpcd data``: list, fetch, generate and preprocess datasets.

The Snakemake rules in ``workflow/rules/data.smk`` call ``generate``,
``download`` and ``preprocess``; ``list`` and ``fetch`` are for people.
"""

import json
import os

from .registry import format_table, get_entry


def _spec(text):
    spec = json.loads(text) if text else {}
    if not isinstance(spec, dict):
        raise ValueError(f"--spec must be a JSON object, got {text!r}")
    return spec


def _list(args):
    print(format_table())
    return 0


def _generate(args):
    from .io import save_dataset
    from .synthetic import generate

    spec = _spec(args.spec)
    source = spec.get("source", args.dataset)
    X, y, w_true, settings = generate(source, spec.get("params"))
    meta = {
        "dataset": args.dataset,
        "source": source,
        "task": get_entry(source)["task"],
        "generator": {"name": get_entry(source)["generator"], "settings": settings},
        "w_true": w_true.tolist(),
    }
    save_dataset(args.out, X, y, meta)
    print(f"generated {args.dataset} ({source}): {X.shape[0]} x {X.shape[1]} -> {args.out}")
    return 0


def _preprocess(args):
    from .loaders import load_raw
    from .preprocess import preprocess_to_file

    spec = _spec(args.spec)
    source = spec.get("source", args.dataset)
    entry = get_entry(source)
    files = None
    manifest = os.path.join(args.raw_dir, "manifest.json")
    if "generator" not in entry:
        if not os.path.exists(manifest):
            raise FileNotFoundError(f"download manifest not found: {manifest}")
        with open(manifest) as fh:
            files = {f["name"]: f["sha256"] for f in json.load(fh)["files"]}
    raw = load_raw(entry, args.raw_dir, files)
    meta = preprocess_to_file(
        raw,
        args.dataset,
        args.variant,
        args.out,
        seed=int(spec.get("split_seed", 0)),
        extra_meta={"source": source},
    )
    print(
        f"preprocessed {args.dataset}/{args.variant}: "
        f"{meta['n_samples']} x {meta['n_features']} -> {args.out}"
    )
    return 0


def _download(args):
    from .download import fetch_dataset

    spec = _spec(args.spec)
    source = spec.get("source", args.dataset)
    out_dir = args.out_dir or os.path.join("results", "data", "raw", args.dataset)
    manifest = fetch_dataset(
        source,
        out_dir,
        mirror=args.mirror,
        lock_file=args.lock_file or os.environ.get("DPCD_DATA_LOCK_FILE") or None,
        cache=args.cache,
        retries=args.retries,
        timeout=args.timeout,
    )
    for f in manifest["files"]:
        print(f"{f['name']}: {f['sha256']} ({f['checksum']}) from {f['served_from']}")
    return 0


def _add_fetch_options(p):
    p.add_argument("--mirror", default=None,
                   help="local directory or base URL replacing canonical hosts "
                        "(default: $DPCD_DATA_MIRROR)")
    p.add_argument("--cache", default=None,
                   help="shared cache directory: read first, filled after download "
                        "(default: $DPCD_DATA_CACHE)")
    p.add_argument("--lock-file", default=None,
                   help="JSON file of sha256 pinned on first use "
                        "(default: $DPCD_DATA_LOCK_FILE, else results/data/checksums.lock.json)")
    p.add_argument("--retries", type=int, default=3)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per request")


def register(subparsers):
    """Add the ``data`` subcommand and its sub-subcommands to ``subparsers``."""
    parser = subparsers.add_parser("data", help="datasets: list, fetch, preprocess")
    sub = parser.add_subparsers(dest="data_command", required=True)

    p = sub.add_parser("list", help="print the dataset registry")
    p.set_defaults(func=_list)

    p = sub.add_parser("fetch", help="download and verify a dataset (outside the workflow)")
    p.add_argument("dataset", help="registry name, e.g. california")
    p.add_argument("--out-dir", default=None, help="default: results/data/raw/NAME")
    p.set_defaults(func=_download, spec=None)
    _add_fetch_options(p)

    p = sub.add_parser("download", help="(rule) download a configured dataset")
    p.add_argument("--dataset", required=True, help="dataset key from the config")
    p.add_argument("--spec", default=None, help="JSON: {source: registry name}")
    p.add_argument("--out-dir", required=True)
    _add_fetch_options(p)
    p.set_defaults(func=_download)

    p = sub.add_parser("generate", help="(rule) generate a synthetic dataset")
    p.add_argument("--dataset", required=True)
    p.add_argument("--spec", default=None, help="JSON: {source, params}")
    p.add_argument("--out", required=True)
    p.set_defaults(func=_generate)

    p = sub.add_parser("preprocess", help="(rule) apply a preprocessing variant")
    p.add_argument("--dataset", required=True)
    p.add_argument("--spec", default=None, help="JSON: {source, split_seed}")
    p.add_argument("--variant", required=True)
    p.add_argument("--raw-dir", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(func=_preprocess)
