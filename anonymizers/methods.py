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


def params(name: str, only=None, **defaults) -> dict:
    """``{field: JSON schema}`` of the method's form fields: all it declares for a
    schema, or ``only`` those, in that order; ``defaults`` replaces a field's
    default with a deployment's (checked against the declaration, so a form
    never offers a default the method would refuse).  For Airflow: ``{f:
    Param(**schema) for f, schema in params("disassociation", ["m"], m=2).items()}``."""
    config = declared(name)
    properties = config.param_schema()["properties"]
    chosen = list(properties) if only is None else list(only)
    unknown = [f for f in [*chosen, *defaults] if f not in properties]
    if unknown:
        raise KeyError(f"{name} declares no form field {unknown}; it has {list(properties)}")
    fields = declared_fields(config)
    out = {}
    for field in chosen:
        out[field] = dict(properties[field])
        if field in defaults:
            out[field]["default"] = checked(field, fields[field][1], defaults[field])
    return out
