"""The ``dpcd`` command: one subcommand per workflow stage, plus planning tools.

Each subpackage that owns a stage exposes ``register(subparsers)``; this module
only collects them, so a rule calls ``dpcd <stage> ...`` and nothing else.
"""

import argparse
import importlib
import sys

# Modules exposing ``register(subparsers)``, in the order they appear in --help.
SUBCOMMAND_MODULES = (
    "dpcd.data.cli",
    "dpcd.stages",
    "dpcd.privacy.cli",
    "dpcd.search_cli",
)


def build_parser():
    """Return the argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="dpcd", description="Differentially private coordinate descent."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv=None):
    """Entry point of the ``dpcd`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except (ValueError, OSError) as exc:
        # Bad input (or a failed download, a full disk) is reported in one line
        # naming what was wrong.
        print(f"dpcd {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
