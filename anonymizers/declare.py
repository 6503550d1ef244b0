"""Each method parameter declared once: type, bounds, default, documentation,
and whether the command line offers it.

A method's config is a frozen dataclass whose fields are made by ``param``;
its ``__post_init__`` calls ``validate(self)`` (then checks what involves
several fields).  From that one declaration come

- the validation of every value (``ParameterError`` naming the field),
- the command-line options of ``python -m anonymizers`` (``anonymizers.cli.
  options``: ``--max-cluster-size``, ``--no-refine``, required or with the
  declared default),
- the JSON schema of the method's Airflow Params (``param_schema``).

Mechanism chosen: dataclasses with field metadata and this one validation
helper, not pydantic v2 models.  The library depends only on numpy, pandas
and scipy (pydantic comes with Airflow, which ``anonymizers`` must never
need); configs stay dataclasses, so ``dataclasses.replace``, ``fields``,
equality and hashing, which the DAG steps, the benchmarks and HHP's node
assessment use, keep working unchanged; and the schema Airflow needs (type,
bounds, enum, default, description) is a few lines to derive here.

Kinds: ``int``, ``number`` (a real, not NaN; kept as given), ``str`` (with
``choices`` an enum), ``bool``, ``str_list`` (a tuple of non-empty strings;
on the command line ``A,B,...``), ``int_list`` (a non-empty tuple of ints),
and ``object`` (a value only ``check`` can judge: mappings, keys, trees).
``check(name, value) -> value`` normalises or refuses a value after the
kind's own test; ``cli=False`` keeps a field off the command line (a file a
command reads instead, a secret, an object), ``schema=False`` off the Airflow
form.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import textwrap
from collections.abc import Callable
from typing import Any

from anonymizers.errors import ParameterError

KINDS = ("int", "number", "str", "bool", "str_list", "int_list", "object")
_JSON_TYPES = {"int": "integer", "number": "number", "str": "string", "bool": "boolean"}


@dataclasses.dataclass(frozen=True)
class Param:
    """What a config field is (see the module doc)."""

    doc: str
    kind: str
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple | None = None
    nullable: bool = False
    cli: bool = True
    schema: bool = True
    check: Callable[[str, Any], Any] | None = None
    metavar: str | None = None
    json: dict | None = None  # the JSON schema of an 'object' field
    parse: Callable[[str], Any] | None = None  # its command-line text -> value
    option: str | None = None  # its command-line option, if not --<name>


def param(default=dataclasses.MISSING, *, doc: str, kind: str, repr: bool = True,
          compare: bool = True, **details) -> Any:
    """A dataclass field declared with its ``Param`` (module doc).  No
    ``default``: the parameter is required."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}")
    spec = Param(doc=" ".join(doc.split()), kind=kind, **details)
    return dataclasses.field(default=default, repr=repr, compare=compare,
                             metadata={"param": spec})


def declared(config_class) -> dict[str, tuple[dataclasses.Field, Param]]:
    """``{field name: (field, Param)}`` of a config class, in declaration order."""
    return {f.name: (f, f.metadata["param"]) for f in dataclasses.fields(config_class)
            if "param" in f.metadata}


def validate(config) -> None:
    """Check (and normalise, in place) every declared field of a frozen config;
    ``ParameterError`` naming the first field whose value is refused."""
    for name, (_, spec) in declared(type(config)).items():
        value = checked(name, spec, getattr(config, name))
        object.__setattr__(config, name, value)


def checked(name: str, spec: Param, value):
    """``value`` as the field keeps it, or ``ParameterError(name, ...)``."""
    if value is None and spec.nullable:
        return None
    value = _KIND_CHECKS[spec.kind](name, spec, value)
    return spec.check(name, value) if spec.check is not None else value


def _bounds(name: str, spec: Param, value, what: str) -> None:
    low, high = spec.minimum, spec.maximum
    too_low = low is not None and (value <= low if spec.exclusive_minimum else value < low)
    if too_low or (high is not None and value > high):
        raise ParameterError(name, f"must be {what} {describe_range(spec)}, got {value!r}")


def describe_range(spec: Param) -> str:
    """'>= 1', 'in (0, 1]', 'in [0, 100]' or '' for no bound."""
    low, high = spec.minimum, spec.maximum
    if low is not None and high is not None:
        return f"in {'(' if spec.exclusive_minimum else '['}{low:g}, {high:g}]"
    if low is not None:
        return f"{'>' if spec.exclusive_minimum else '>='} {low:g}"
    return f"<= {high:g}" if high is not None else ""


def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _int(name, spec, value):
    if not _is_int(value):
        raise ParameterError(name, f"must be an integer {describe_range(spec)}, got {value!r}")
    _bounds(name, spec, value, "an integer")
    return int(value)


def _number(name, spec, value):
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or math.isnan(value):
        raise ParameterError(name, f"must be a number {describe_range(spec)}, got {value!r}")
    _bounds(name, spec, value, "a number")
    return value


def _str(name, spec, value):
    if not isinstance(value, str):
        raise ParameterError(name, f"must be a string, got {value!r}")
    if spec.choices is not None and value not in spec.choices:
        raise ParameterError(name, f"must be one of {list(spec.choices)}, got {value!r}")
    return value


def _bool(name, spec, value):
    if not isinstance(value, bool):
        raise ParameterError(name, f"must be True or False, got {value!r}")
    return value


def _str_list(name, spec, value):
    if isinstance(value, str) or not hasattr(value, "__iter__"):
        raise ParameterError(name, f"must be a list of strings, not {value!r}")
    out = tuple(value)
    if not all(isinstance(v, str) and v.strip() for v in out):
        raise ParameterError(name, f"every element must be a non-empty string, got {list(out)}")
    if spec.choices is not None:
        bad = [v for v in out if v not in spec.choices]
        if bad:
            raise ParameterError(name, f"unknown names {bad}; choose among {list(spec.choices)}")
    return out


def _int_list(name, spec, value):
    if isinstance(value, str) or not hasattr(value, "__iter__"):
        raise ParameterError(name, f"must be a list of integers, not {value!r}")
    out = tuple(_int(name, spec, v) for v in value)
    if not out:
        raise ParameterError(name, "give at least one value")
    return out


_KIND_CHECKS = {"int": _int, "number": _number, "str": _str, "bool": _bool,
                "str_list": _str_list, "int_list": _int_list,
                "object": lambda name, spec, value: value}


def param_schema(config_class) -> dict:
    """The JSON schema (draft 2020-12 subset Airflow's ``Param`` validates) of
    the fields of ``config_class`` an operator may set: ``{"type": "object",
    "properties": {...}, "required": [...]}``; each property carries its type,
    bounds, enum, default and the declaration's documentation."""
    properties, required = {}, []
    for name, (f, spec) in declared(config_class).items():
        if not spec.schema:
            continue
        properties[name] = _property(f, spec)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(name)
    return {"type": "object", "title": config_class.__name__, "properties": properties,
            "required": required, "additionalProperties": False}


def _property(f: dataclasses.Field, spec: Param) -> dict:
    if spec.kind in _JSON_TYPES:
        prop = {"type": _JSON_TYPES[spec.kind]}
    elif spec.kind in ("str_list", "int_list"):
        item = {"type": "string" if spec.kind == "str_list" else "integer"}
        if spec.choices is not None:
            item["enum"] = list(spec.choices)
        prop = {"type": "array", "items": item}
    else:
        prop = dict(spec.json or {})
    if spec.choices is not None and spec.kind == "str":
        prop["enum"] = list(spec.choices)
    bounds = prop["items"] if spec.kind == "int_list" else prop
    if spec.minimum is not None:
        bounds["exclusiveMinimum" if spec.exclusive_minimum else "minimum"] = spec.minimum
    if spec.maximum is not None:
        bounds["maximum"] = spec.maximum
    if spec.nullable and isinstance(prop.get("type"), str):
        prop["type"] = [prop["type"], "null"]
    if f.default is not dataclasses.MISSING:
        prop["default"] = _jsonable(f.default)
    prop["title"] = f.name.replace("_", " ").capitalize()
    prop["description"] = spec.doc
    return prop


def _jsonable(value):
    if isinstance(value, (tuple, list, frozenset, set)):
        return sorted(value) if isinstance(value, (frozenset, set)) else list(value)
    return value


def parameters(config_class):
    """Class decorator of a config: appends a numpydoc "Parameters" section
    written from the declarations to its docstring and gives it the
    classmethod ``param_schema()``."""
    lines = ["", "Parameters", "----------"]
    for name, (f, spec) in declared(config_class).items():
        default = "" if f.default is dataclasses.MISSING else f", default {f.default!r}"
        if not f.repr:
            default = ", default None" if f.default is None else ""
        bounds = describe_range(spec)
        choices = f", one of {list(spec.choices)}" if spec.choices else ""
        kind = spec.kind + (" or None" if spec.nullable else "")
        lines.append(f"{name} : {kind}{' ' + bounds if bounds else ''}{choices}{default}")
        lines.extend(textwrap.wrap(spec.doc, 76, initial_indent="    ",
                                   subsequent_indent="    "))
    doc = (config_class.__doc__ or "").rstrip()
    config_class.__doc__ = doc + "\n" + "\n".join("    " + line if line else "" for line in lines)
    config_class.param_schema = classmethod(param_schema)
    return config_class


def pseudonym_key():
    """The ``pseudonym_key`` field of every method that draws pseudonyms: a
    secret, so never on a command line, a form or in a repr."""
    return param(None, kind="object", nullable=True, cli=False, schema=False, repr=False,
                 doc="Secret key of the pseudonym permutation (anonymizers.pseudonyms): "
                 "with it the permutation cannot be drawn again from the seed alone.  Not "
                 "shown in the config's repr.")
