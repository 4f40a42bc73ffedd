"""The ``fedcluster`` console command: the Rust binary's command line, run in
this process (``fedcluster run``, ``reproduce``, ``serve``, ``join``, ``data``,
``list``, ...: the same flags, output and exit statuses).

``pip install ./python`` puts it on ``PATH`` as ``fedcluster``; ``python -m
fedcluster.cli ARGS`` runs it too.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Sequence

from . import _native

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``fedcluster ARGS`` (``argv``: the arguments without the program
    name; default ``sys.argv[1:]``) and returns its exit status: 0 when it
    succeeded, 1 when it failed (the error printed on one line), 2 for a usage
    error.

    Ctrl-C stops the command as it stops the binary: Python's handler, which
    would only raise ``KeyboardInterrupt`` once the Rust code returned, is
    replaced by the default action for the duration of the call (an interrupted
    ``run`` leaves its last checkpoint for ``--resume``, as the binary does).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    sys.stdout.flush()
    sys.stderr.flush()
    previous = signal.getsignal(signal.SIGINT)
    # Only the main thread may set a signal handler (and only it receives SIGINT).
    in_main_thread = threading.current_thread() is threading.main_thread()
    if in_main_thread:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        return _native.main(["fedcluster", *args])
    finally:
        if in_main_thread and previous is not None:
            signal.signal(signal.SIGINT, previous)


if __name__ == "__main__":
    sys.exit(main())
