"""What every stage module shares: reading a stage's JSON, adding a subcommand."""

import json
import logging


def read_json(path):
    with open(path) as fh:
        return json.load(fh)


def add_command(subparsers, name, func, help):
    """A ``dpcd <name>`` subcommand running ``func(args)`` with INFO logging."""
    parser = subparsers.add_parser(name, help=help, description=help)
    parser.set_defaults(func=_with_logging(func))
    return parser


def _with_logging(func):
    def run(args):
        logging.basicConfig(level=logging.INFO,
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
        return func(args)

    return run
