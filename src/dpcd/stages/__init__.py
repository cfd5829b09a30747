"""Entry points of the workflow stages after the data stage.

One module per rule file of ``workflow/rules/`` (the data stage's is
:mod:`dpcd.data.cli`), each exposing ``register(subparsers)``. Each
subcommand is what one Snakemake rule runs: read the rule's inputs and
params, call the library, write the rule's outputs atomically (a failed job
leaves nothing Snakemake could take as done). :mod:`dpcd.stages.plan` is
what the planner (workflow/rules/common.smk) is given, no subcommand.
"""

import importlib

# workflow/rules/<name>.smk -> dpcd.stages.<name>, in the workflow's order
MODULES = ("smoothness", "calibrate", "solve", "private", "aggregate", "fresh", "summary", "report")


def register(subparsers):
    """Add every stage's subcommands to the ``dpcd`` parser."""
    for name in MODULES:
        importlib.import_module(f"dpcd.stages.{name}").register(subparsers)
