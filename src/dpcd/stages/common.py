"""What every stage module shares: reading a stage's JSON, adding a subcommand,
a job's overhead ledger."""

import json
import logging
import time


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


class Ledger:
    """A job's overhead ledger: the wall (``seconds``) and CPU
    (``cpu_seconds``) seconds of its parts. On a shared machine a job's wall
    exceeds its CPU; the CPU's ``startup`` is what the process spent before
    the ledger began (the interpreter, the imports)."""

    def __init__(self):
        self.seconds, self.cpu_seconds = {}, {"startup": time.process_time()}
        self._start = self._mark = (time.perf_counter(), time.process_time())

    def lap(self, name=None):
        """The (wall, CPU) seconds since the last lap, added to part ``name``
        (None: to no part; the caller splits them)."""
        now = (time.perf_counter(), time.process_time())
        wall, cpu = now[0] - self._mark[0], now[1] - self._mark[1]
        self._mark = now
        if name:
            self.add(name, wall, cpu)
        return wall, cpu

    def add(self, name, wall, cpu):
        self.seconds[name] = self.seconds.get(name, 0.0) + wall
        self.cpu_seconds[name] = self.cpu_seconds.get(name, 0.0) + cpu

    def close(self):
        """Add ``wall`` (``total`` CPU, the start-up's included) and ``other``:
        what no part took."""
        wall, cpu = time.perf_counter() - self._start[0], time.process_time()
        parts, cpu_parts = sum(self.seconds.values()), sum(self.cpu_seconds.values())
        self.seconds.update(wall=wall, other=wall - parts)
        self.cpu_seconds.update(total=cpu, other=cpu - cpu_parts)
