"""Issue 24: the trigger forms' fields come from the methods' one declaration
in ``anonymizers`` (``anonymizers.methods.params``, ``deid.methods.form``);
the plugin declares only what no config declares, and the shipped release
files and today's defaults still pass the derived forms."""

from __future__ import annotations

import dataclasses

import jsonschema
import pytest
from anonymizers import methods as declared_methods
from anonymizers.declare import declared
from anonymizers.errors import ParameterError
from deid.dag_factory import form_params
from deid.methods import COMMON_PARAMS, METHODS, check_params, param_schemas
from deid.releases import load_all_with_errors

# form field -> (anonymizers method, its declared field), for every form
# field that is a config field; the rest are the plugin's own settings
FROM_CONFIG = {
    "medco": {"k": ("ppe", "k"), "min_anonymity_set": ("medco_clusters", "min_anonymity_set"),
              "n_clusters": ("medco_clusters", "n_clusters"), "seed": ("medco", "seed")},
    "ugaclip": {"k": ("ugaclip", "k"), "seed": ("ugaclip", "seed")},
    "disassociation": {f: ("disassociation", f) for f in
                       ("k", "m", "max_cluster_size", "refine", "refine_window", "seed")},
    "gccens": {"k": ("gccens", "k"), "cap": ("gccens", "caps"), "seed": ("gccens", "seed")},
    "lda": {f: ("lda", f) for f in ("k", "w_icd", "alignment", "icd_domain", "seed")},
    "hhp": {"k": ("hhp", "k"), "max_sup": ("hhp", "max_sup"), "p_max": ("hhp", "p_max"),
            "hhp_iterations": ("hhp", "max_iterations"), "seed": ("hhp", "seed")},
}
# the defaults of the hand-written schemas before issue 24 (none differed)
DEFAULTS_BEFORE = {
    "k": 5, "seed": 20081, "ppe_filter": "all-visits", "m": 2, "max_cluster_size": None,
    "refine": True, "refine_window": 256, "cap": 3, "w_icd": 0.5, "alignment": "a-gs",
    "icd_domain": "data", "max_sup": 0.05, "p_max": 5, "hhp_iterations": 1000,
    "min_anonymity_set": 20, "n_clusters": None,
}


def _doc(method: str, field: str) -> str:
    return declared(declared_methods.declared(method))[field][1].doc


@pytest.mark.parametrize("method", sorted(METHODS))
def test_config_fields_on_the_form_are_derived_from_the_declaration(method):
    schemas = param_schemas(method)
    for name, (source, field) in {**FROM_CONFIG[method], "ppe_filter": ("ppe", "filter")}.items():
        assert schemas[name]["description"] == _doc(source, field), name
        assert schemas[name]["default"] == DEFAULTS_BEFORE[name], name


@pytest.mark.parametrize("method", sorted(METHODS))
def test_the_plugin_declares_no_config_field_by_hand(method):
    """A form field whose text is not a declaration's is the plugin's own, and
    then no config of any method declares a field of that name."""
    docs = {spec.doc for m in declared_methods.METHODS
            for _, spec in declared(declared_methods.declared(m)).values()}
    fields = {f for m in declared_methods.METHODS for f in declared(declared_methods.declared(m))}
    own = [n for n, s in param_schemas(method).items() if s["description"] not in docs]
    # not a copy: a policy's name the plugin resolves to disassociation's code
    # groups, and the release's code system (its values from anonymizers.codesystems)
    own = [n for n in own if n not in ("utility_policy", "code_system")]
    assert not set(own) & fields, (method, set(own) & fields)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_k_is_the_methods_own_bound_narrowed_for_releases(method):
    source, field = FROM_CONFIG[method]["k"]
    own = declared_methods.param_schema(source)["properties"][field]["minimum"]
    k = param_schemas(method)["k"]
    assert (k["minimum"], k["maximum"]) == (max(own, 2), 1000)
    for bad in (1, 1001, True, None):
        with pytest.raises(ValueError, match="^k: "):
            check_params(method, {"k": bad})
    check_params(method, {"k": 2})
    with pytest.raises(ValueError, match="^seed: "):
        check_params(method, {"seed": None})  # a release always records its seed


def test_every_shipped_release_parses_and_its_form_validates():
    from airflow.sdk import Param

    releases, errors = load_all_with_errors()
    assert not errors and len(releases) >= 8
    for release in releases:
        check_params(release.method, release.params)
        for name, schema in param_schemas(release.method).items():
            rest = {k: v for k, v in schema.items() if k not in ("default", "title", "description")}
            jsonschema.validate(release.params[name], rest)
        for name, p in form_params(release).items():
            assert p.resolve() == (release.scope if name == "scope" else release.params[name])


def test_common_fields_do_not_hold_a_methods_own():
    assert not {"k", "seed"} & set(COMMON_PARAMS)


def test_a_form_may_only_narrow_the_declaration():
    params = declared_methods.params
    assert params("gccens", {"cap": "caps"}, limits={"cap": {"type": ["integer", "null"]}},
                  cap=3)["cap"]["type"] == ["integer", "null"]
    with pytest.raises(ValueError, match="minimum 0 widens"):
        params("disassociation", ["k"], limits={"k": {"minimum": 0}})
    with pytest.raises(ValueError, match="unplaced_weight: minimum 0 widens"):
        params("ugaclip", ["unplaced_weight"], limits={"unplaced_weight": {"minimum": 0}})
    with pytest.raises(ValueError, match="type"):
        params("ugaclip", ["seed"], limits={"seed": {"type": ["integer", "null"]}})
    with pytest.raises(ValueError, match="outside the form's limits"):
        params("ugaclip", ["k"], limits={"k": {"maximum": 10}}, k=11)
    with pytest.raises(ParameterError):
        params("disassociation", ["m"], m=9)  # beyond the declared maximum
    with pytest.raises(KeyError):
        params("ugaclip", ["k"], seed=1)  # a default of a field not on the form


def test_the_derived_defaults_build_valid_configs():
    """The form's defaults are values the methods themselves accept."""
    for method, fields in FROM_CONFIG.items():
        schemas = param_schemas(method)
        for name, (source, field) in fields.items():
            spec = declared(declared_methods.declared(source))[field][1]
            from anonymizers.declare import checked
            checked(field, spec, schemas[name]["default"])
    assert dataclasses.is_dataclass(declared_methods.declared("hhp"))
