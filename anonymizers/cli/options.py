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
"""

from __future__ import annotations

import argparse
import dataclasses

from anonymizers.declare import declared, describe_range


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
