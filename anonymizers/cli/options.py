"""Command-line options derived from a method's config declaration
(``anonymizers.declare``): each declared field with ``cli=True`` becomes
``--<name-with-dashes>`` (or its declared ``option``), so a parameter is
declared once, in the config.  A command adds only its own file arguments.

Conventions every command follows (``python -m anonymizers --help``):

- **Seed**: a command that draws random numbers takes ``--seed N``, always
  required (whatever the library's default): the command line alone then says
  how to draw the release again.  The command records the seed it used in
  its metrics (in the release file's ``metrics`` or the JSON it prints).
- **Verification**: a command whose method has an independent verifier runs
  it by default and writes nothing when it fails (exit 1); ``--no-verify``
  skips it (not for releases).  ``--verify`` is still accepted, as a no-op.
- **Defaults** come from the config: an option not given is not passed, so
  the config's default applies (shown in ``--help``).
- **Pseudonyms**: a command that writes pseudonymous ids (lda, ugaclip,
  gccens, hhp, dummies) takes ``--pseudonym-key-file PATH`` and draws the
  pseudonym permutation from ``anonymizers.pseudonyms.keyed`` under that
  key.  Without it the command draws a fresh key (``os.urandom(32)``) that is
  never written anywhere, so nobody (not even the operator) can draw the
  permutation again; the seed, which the metrics record, draws the rest of
  the release.  The metrics say which (``"pseudonyms"``: ``KEYED`` or
  ``FRESH``), never the key.  See ``read_key_file`` for the file's format.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import stat
import sys

from anonymizers.declare import declared, describe_range
from anonymizers.errors import InputError
from anonymizers.pseudonyms import FRESH, fresh_key

KEY_OPTION = "--pseudonym-key-file"
KEYED = f"keyed ({KEY_OPTION})"
SHORT_KEY_BYTES = 16  # below this a key can be guessed, and the permutation replayed


def add_config_options(parser: argparse.ArgumentParser, config_class, skip=()) -> None:
    """An option per declared command-line field of ``config_class``."""
    for name, (f, spec) in declared(config_class).items():
        if not spec.cli or name in skip:
            continue
        option = spec.option or "--" + name.replace("_", "-")
        help_text = _help(f, spec)
        if spec.kind == "bool":
            negative = f.default is True
            parser.add_argument("--no-" + option[2:] if negative else option, dest=name,
                                action="store_false" if negative else "store_true",
                                default=argparse.SUPPRESS, help=help_text)
            continue
        required = name == "seed" or f.default is dataclasses.MISSING
        kwargs = {"type": _argument_type(spec.parse) if spec.parse else _PARSERS[spec.kind],
                  "metavar": spec.metavar}
        if spec.kind == "str" and spec.choices is not None:
            kwargs = {"choices": spec.choices}
        elif spec.kind in ("str_list", "int_list") and kwargs["metavar"] is None:
            kwargs["metavar"] = "A,B,..."
        parser.add_argument(option, dest=name, required=required, default=argparse.SUPPRESS,
                            help=help_text, **kwargs)


def config_from_args(config_class, args: argparse.Namespace, **given):
    """``config_class`` built from the options the command line gave (the others
    keep the config's defaults) and ``given`` (what the command read itself)."""
    values = {name: getattr(args, name) for name, (_, spec) in declared(config_class).items()
              if spec.cli and hasattr(args, name)}
    return config_class(**values, **given)


def add_verify_option(parser: argparse.ArgumentParser) -> None:
    """``--no-verify`` (see the module doc); ``--verify`` kept for old scripts."""
    parser.add_argument("--no-verify", dest="verify", action="store_false", default=True,
                        help="skip the independent verifier (faster; not for releases)")
    parser.add_argument("--verify", dest="verify", action="store_true", help=argparse.SUPPRESS)


def add_pseudonym_key_option(parser: argparse.ArgumentParser) -> None:
    """``--pseudonym-key-file PATH`` (see the module doc)."""
    parser.add_argument(KEY_OPTION, dest="pseudonym_key_file", metavar="PATH", default=None,
                        help="file holding the secret key of the pseudonym permutation "
                             "(keep it private, mode 600): the same key and seed draw the "
                             "same pseudonyms again.  Default: a fresh random key, never "
                             "written, so the pseudonyms cannot be drawn again")


@dataclasses.dataclass(frozen=True)
class PseudonymKey:
    """The key a command draws its pseudonyms with, and how the metrics
    describe it (``drawn``: ``KEYED`` or ``FRESH``; never the key)."""

    key: bytes = dataclasses.field(repr=False)
    drawn: str


def pseudonym_key(args: argparse.Namespace) -> PseudonymKey:
    """The key of ``--pseudonym-key-file``, or a fresh one nobody keeps.

    Call it before any work: a key file that cannot be used is an InputError
    (exit 2, nothing written)."""
    path = getattr(args, "pseudonym_key_file", None)
    if path is None:
        return PseudonymKey(fresh_key(), FRESH)
    return PseudonymKey(read_key_file(path), KEYED)


def read_key_file(path) -> bytes:
    """The key in ``path``: its bytes as they are (text or binary), less one
    trailing newline (``\\n`` or ``\\r\\n``, as ``echo`` or an editor
    leaves), so ``openssl rand -hex 32 > key`` gives the 64 hex characters as
    the key.  It is used as given, not derived as the deployment derives its
    key from ``deid_token_key``: the two do not draw the same pseudonyms.

    Missing, unreadable or empty: InputError naming the option and the path,
    never the content.  Readable or writable by group or others: one warning
    line, not a refusal (unlike ssh), because the key file may be shared on
    purpose by a release team's group, and a file system without POSIX
    modes reports every file so; the warning says how to close it.  A key
    shorter than ``SHORT_KEY_BYTES`` is also warned about."""
    where = f"{KEY_OPTION} {path}"
    try:
        with open(path, "rb") as f:
            data = f.read()
            mode = os.fstat(f.fileno()).st_mode
    except OSError as exc:
        raise InputError(where, f"cannot be read ({exc.strerror or type(exc).__name__})") \
            from None
    key = data[:-2] if data.endswith(b"\r\n") else data[:-1] if data.endswith(b"\n") else data
    if not key:
        raise InputError(where, "is empty: it must hold the secret key of the pseudonyms")
    if stat.S_IMODE(mode) & 0o077:
        print(f"warning: {where}: group or others can access the key "
              f"(mode {stat.S_IMODE(mode):o}); run chmod 600 on it", file=sys.stderr)
    if len(key) < SHORT_KEY_BYTES:
        print(f"warning: {where}: the key has fewer than {SHORT_KEY_BYTES} bytes and can be "
              f"guessed; use e.g. openssl rand -hex 32", file=sys.stderr)
    return key


def _help(f: dataclasses.Field, spec) -> str:
    text = spec.doc
    bounds = describe_range(spec)
    if bounds:
        text += f" ({bounds})"
    if f.name == "seed":
        text += " Required; recorded in the metrics."
    elif f.default is not dataclasses.MISSING and spec.kind != "bool":
        default = f.default
        if isinstance(default, (tuple, frozenset)):
            default = ",".join(map(str, sorted(default) if isinstance(default, frozenset)
                                   else default)) or "none"
        text += f" (default {default})"
    return text.replace("%", "%%")


def _argument_type(parse):
    """``parse`` whose ValueError argparse shows as its message (exit 2)."""
    def parsed(text: str):
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    parsed.__name__ = parse.__name__
    return parsed


def _comma_list(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def _comma_ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in _comma_list(text))


_PARSERS = {"int": int, "number": float, "str": str, "str_list": _comma_list,
            "int_list": _comma_ints, "object": str}
