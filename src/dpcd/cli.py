"""The ``dpcd`` command: one subcommand per workflow stage, plus planning tools.

Each subpackage that owns a stage exposes ``register(subparsers)``; this module
only collects them, so a rule calls ``dpcd <stage> ...`` and nothing else.
"""

import argparse
import importlib
import signal
import sys

# Modules exposing ``register(subparsers)``, in the order they appear in --help.
SUBCOMMAND_MODULES = (
    "dpcd.data.cli",
    "dpcd.stages",
    "dpcd.algorithms.budget",
)
# The modules registering one top-level command each; every other command is
# a workflow stage's (dpcd.stages). A job builds the parser of its own
# command only: the algorithms package loads every solver's kernels (numba,
# 1 s), which a table or figure job never runs.
OWN_COMMAND = {"data": "dpcd.data.cli", "budget": "dpcd.algorithms.budget"}


class _Version(argparse.Action):
    """``--version``, reading the installed version only when asked: importing
    importlib.metadata costs every job's start-up tens of milliseconds."""

    def __call__(self, parser, namespace, values, option_string=None):
        import importlib.metadata

        print(f"{parser.prog} {importlib.metadata.version('dpcd')}")
        parser.exit()


def build_parser(command=None):
    """Return the argument parser with every registered subcommand, or with
    only the module registering ``command`` when it is one of ours."""
    parser = argparse.ArgumentParser(
        prog="dpcd", description="Differentially private coordinate descent."
    )
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show program's version number and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    modules = SUBCOMMAND_MODULES
    if command is not None:
        modules = (OWN_COMMAND.get(command, "dpcd.stages"),)
    for name in modules:
        importlib.import_module(name).register(sub)
    if command is not None and command not in sub.choices:
        return build_parser()  # --help, or an unknown command: the full list
    return parser


def stop_at_once_on_interrupt():
    """Let SIGINT and SIGTERM end the process at once, as the OS does by default.

    Python turns SIGINT into KeyboardInterrupt only between bytecodes, so a job
    inside a numba kernel call would answer a Ctrl-C (or Snakemake's or
    SLURM's cancel) minutes later. Nothing is lost by dying at once: a job's
    outputs appear atomically, Snakemake discards an interrupted job's, and a
    job's MLflow runs are committed in one transaction (its rerun replaces
    them). Code that must clean up on SIGTERM installs its own handler.
    """
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def main(argv=None):
    """Entry point of the ``dpcd`` console script."""
    if argv is None:  # the process is this command, not a caller (a test) calling it
        stop_at_once_on_interrupt()
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(words[0] if words else None)
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
