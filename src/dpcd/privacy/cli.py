"""``dpcd budget``: plan a privacy budget (stub, being implemented)."""


def register(subparsers):
    """Add the ``budget`` subcommand to ``subparsers``."""
    parser = subparsers.add_parser("budget", help="plan a privacy budget")
    parser.set_defaults(func=lambda args: 1)
    return parser
