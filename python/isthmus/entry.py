"""The `isthmus` console script. Ctrl-C (SIGINT) or SIGTERM at any moment from this
module's first lines on ends the command with the shell's code for it (130, 143) and
one line, not a traceback, and removes the run folder it was writing, if any (see
`isthmus.results`). The handlers are installed before anything else is imported, so
that the start-up's imports are covered too; only Python's own start-up, before this
package is reached, is not ours to cover."""

import os
import sys

# The C module under `signal`: `signal` itself imports enum and its dependencies
# (milliseconds of start-up during which Ctrl-C would still print a traceback).
from _signal import SIGINT, SIGTERM, signal

_MESSAGES = {SIGINT: "interrupted", SIGTERM: "terminated"}


def _interrupted(signum: int, frame: object) -> None:
    # Only a process that has imported the writer can be writing a run folder; the
    # handler must not import it (pyarrow) while the process is being stopped.
    results = sys.modules.get("isthmus.results")
    if results is not None:
        results.abandon_partials()
    sys.stderr.write(_MESSAGES.get(signum, "stopped") + "\n")
    sys.stderr.flush()
    os._exit(128 + signum)


for _signum in _MESSAGES:
    signal(_signum, _interrupted)


def main() -> None:
    from isthmus.cli import command

    command()()
