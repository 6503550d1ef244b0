"""What the project's commands (``python -m deid.synpuf_loader``...) share:
their result alone on stdout, log lines on stderr, an error as one line."""

from __future__ import annotations

import contextlib
import sys


@contextlib.contextmanager
def logs_to_stderr():
    """Airflow's logging writes to stdout (the warehouse's "using the embedded
    PostgreSQL" warning, Python warnings): while the block runs, stdout is
    stderr, so that a command's stdout holds only what it prints after."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def fail(exc: Exception, status: int) -> int:
    """Print ``error: <message>`` on stderr and return ``status``."""
    print(f"error: {exc}", file=sys.stderr)
    return status
