"""``dpcd data``: list, fetch, generate and preprocess datasets."""


def _list(args):
    print("dataset registry: (being written)")
    return 0


def register(subparsers):
    """Add the ``data`` subcommand and its sub-subcommands to ``subparsers``."""
    parser = subparsers.add_parser("data", help="datasets: list, fetch, preprocess")
    sub = parser.add_subparsers(dest="data_command", required=True)
    p = sub.add_parser("list", help="print the dataset registry")
    p.set_defaults(func=_list)
