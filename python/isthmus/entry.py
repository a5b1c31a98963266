"""The `isthmus` console script. Ctrl-C (SIGINT) at any moment, the imports of start-up
included, ends the command with the shell's code for it (130) and one line, not a
traceback. A run interrupted while writing leaves a hidden partial folder that the next
run removes (see `isthmus.results.remove_stale_partials`)."""

import os
import signal
import sys


def _interrupted(signum: int, frame: object) -> None:
    sys.stderr.write("interrupted\n")
    sys.stderr.flush()
    os._exit(130)


def main() -> None:
    signal.signal(signal.SIGINT, _interrupted)
    from isthmus.cli import command

    command()()
