"""The commands of ``python -m anonymizers``, one module each, and the checks
every command shares (run by ``anonymizers.__main__`` before a command works).
"""

from __future__ import annotations

import os
from pathlib import Path

from anonymizers.errors import InputError

# Options (argparse dests) naming a file a command writes, in any command.  A
# command that adds an output option adds its dest here.
OUTPUT_OPTIONS = ("output", "dummy_map", "key", "map")


def check_output_paths(args) -> None:
    """InputError for an output file that could not be written, before any work.

    Its folder must exist and be writable, and it must not be a folder itself:
    finding that out after the method has run would lose the run.
    """
    for dest in OUTPUT_OPTIONS:
        value = getattr(args, dest, None)
        if value is None:
            continue
        path = Path(value)
        option = "--" + dest.replace("_", "-")
        folder = path.parent
        if not folder.is_dir():
            raise InputError(f"{option} {value}", f"the folder {str(folder)!r} does not exist")
        if path.is_dir():
            raise InputError(f"{option} {value}", "is a folder, not a file")
        if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            raise InputError(f"{option} {value}", "cannot be written (permission denied)")
