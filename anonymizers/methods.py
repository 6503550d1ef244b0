"""The methods of ``anonymizers`` by name, each with its one config
declaration (``anonymizers.declare``), for callers that build forms or
commands from them, e.g. the Airflow plugin's per-method Params:

    >>> from anonymizers.methods import param_schema
    >>> param_schema("disassociation")["properties"]["m"]["maximum"]
    5

Names are those of the release files and the plugin (``plugins/deid/methods``).
"""

from __future__ import annotations

from anonymizers.censoring import GCCensConfig
from anonymizers.declare import checked, declared as declared_fields
from anonymizers.claims import HHPConfig
from anonymizers.disassociation import DisassociationConfig
from anonymizers.disassociation.config import ReconstructConfig
from anonymizers.dummies import ClusterConfig, DummyConfig
from anonymizers.longitudinal import LDAConfig
from anonymizers.ppe import PPEConfig
from anonymizers.ugaclip import UGACLIPConfig

METHODS = {
    "ppe": PPEConfig,
    "ugaclip": UGACLIPConfig,
    "disassociation": DisassociationConfig,
    "reconstruct": ReconstructConfig,
    "gccens": GCCensConfig,
    "lda": LDAConfig,
    "medco_clusters": ClusterConfig,
    "medco": DummyConfig,
    "hhp": HHPConfig,
}


def declared(name: str) -> type:
    """The config class of the method ``name`` (KeyError naming the known ones)."""
    try:
        return METHODS[name]
    except KeyError:
        raise KeyError(f"no method {name!r}; the methods are {sorted(METHODS)}") from None


def param_schema(name: str) -> dict:
    """The JSON schema of the parameters an operator may set for ``name``."""
    return declared(name).param_schema()


def params(name: str, only=None, *, limits: dict | None = None, **defaults) -> dict:
    """``{form field: JSON schema}`` of the method's form fields: all it declares,
    or ``only`` those, in that order; ``only`` may map a form's own name to the
    declared field (``{"ppe_filter": "filter"}``).  ``defaults`` (by form name)
    replaces a field's default with a deployment's, checked against the
    declaration, so a form never offers a default the method would refuse.
    ``limits`` (by form name) narrows a field for a deployment, e.g. ``{"k":
    {"minimum": 2, "maximum": 1000}}`` or ``{"seed": {"type": "integer"}}``
    (no null): it may only tighten the declared bounds and types, never widen
    them (``ValueError``).  For Airflow: ``{f: Param(**schema) for f, schema
    in params("disassociation", ["m"], m=2).items()}``."""
    config = declared(name)
    properties = config.param_schema()["properties"]
    chosen = dict(zip(properties, properties) if only is None else
                  only.items() if isinstance(only, dict) else zip(only, only))
    limits = limits or {}
    unknown = [f for f in chosen.values() if f not in properties]
    unknown += [f for f in [*defaults, *limits] if f not in chosen]
    if unknown:
        raise KeyError(f"{name} declares no form field {unknown}; it has {list(properties)}")
    fields = declared_fields(config)
    out = {}
    for form_name, field in chosen.items():
        out[form_name] = _narrowed(form_name, properties[field], limits.get(form_name, {}))
        if form_name in defaults:
            value = checked(field, fields[field][1], defaults[form_name])
            out[form_name]["default"] = _within(form_name, out[form_name], value)
    return out


def _types(schema: dict) -> set:
    t = schema.get("type")
    return {t} if isinstance(t, str) else set(t or ())


def _narrowed(form_name: str, schema: dict, limits: dict) -> dict:
    """``schema`` with ``limits`` applied; ValueError where a limit would widen it."""
    out = dict(schema)
    for key, value in limits.items():
        if key == "type":
            narrower = {value} if isinstance(value, str) else set(value)
            if not narrower <= _types(schema):
                raise ValueError(f"{form_name}: type {value} is not within {schema['type']}")
            out["type"] = value
            if "object" not in narrower:
                out.pop("additionalProperties", None)
            if "null" not in narrower and out.get("default", 0) is None:
                out.pop("default")
        elif key in ("minimum", "maximum"):
            exclusive = key == "minimum" and "exclusiveMinimum" in out
            declared = out.pop("exclusiveMinimum") if exclusive else out.get(key)
            wider = declared is not None and (value < declared if key == "minimum"
                                              else value > declared)
            wider = wider or (exclusive and value == declared)
            if wider:
                raise ValueError(f"{form_name}: {key} {value} widens the declared {declared}")
            out[key] = value
        else:
            raise ValueError(f"{form_name}: a form may narrow type, minimum and maximum, "
                             f"not {key!r}")
    return out


def _within(form_name: str, schema: dict, value):
    """A deployment default must also satisfy the deployment's own limits."""
    too_low = value is not None and "minimum" in schema and value < schema["minimum"]
    too_high = value is not None and "maximum" in schema and value > schema["maximum"]
    if too_low or too_high or (value is None and "null" not in _types(schema)):
        raise ValueError(f"{form_name}: default {value!r} is outside the form's limits")
    return value
