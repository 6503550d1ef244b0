"""The commands of ``python -m anonymizers``, one module each, and the checks
every command shares (run by ``anonymizers.__main__`` before a command works).
"""

from __future__ import annotations

import os
from pathlib import Path

from anonymizers.errors import InputError, ParameterError

# Options (argparse dests) naming a file a command writes, in any command.  A
# command that adds an output option adds its dest here.
OUTPUT_OPTIONS = ("output", "dummy_map", "key", "map")


def refuse_unread_gem(args, module) -> None:
    """ParameterError for a ``--gem`` this run would not read, before any work
    (the release file refuses an unread ``gem`` the same way): an operator who
    names a mapping expects it used.  ``--mixed map-to-icd10`` reads it; a
    command that carries utility policies through it says when, with
    ``gem_carries(args)``."""
    if getattr(args, "gem", None) is None or getattr(args, "mixed", None) == "map-to-icd10":
        return
    carries = getattr(module, "gem_carries", None)
    if carries is None or not carries(args):
        raise ParameterError("gem", "this run would not read it: --gem is read with --mixed "
                             "map-to-icd10, and by ugaclip and disassociate to carry an "
                             "ICD-9-CM utility policy into --code-system icd10cm data")


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
