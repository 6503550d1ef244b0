"""Each method's parameters are declared once (``anonymizers.declare``): the
config's validation, the command line and the Airflow Param schema all come
from that declaration, so they agree."""

from __future__ import annotations

import argparse
import dataclasses

import jsonschema
import pytest

from anonymizers.__main__ import COMMANDS, main
from anonymizers.declare import declared
from anonymizers.errors import ParameterError
from anonymizers.methods import METHODS, param_schema

# the smallest valid config of each method (its required fields)
REQUIRED = {"ppe": {"k": 2}, "ugaclip": {"k": 2}, "disassociation": {"k": 2, "m": 1},
            "reconstruct": {"seed": 1}, "gccens": {"k": 2}, "lda": {"k": 2},
            "medco_clusters": {"min_anonymity_set": 2}, "medco": {"seed": 1}, "hhp": {}}
# command -> (its config, whether it draws random numbers, whether it verifies)
COMMAND_CONFIGS = {"ppe": ("ppe", False, True), "ugaclip": ("ugaclip", True, True),
                   "disassociate": ("disassociation", True, True),
                   "reconstruct": ("reconstruct", True, False),
                   "gccens": ("gccens", True, True), "lda": ("lda", True, True),
                   "cluster-codes": ("medco_clusters", False, False),
                   "dummies": ("medco", True, True), "hhp": ("hhp", True, True)}


def bounded_fields():
    for name, config in METHODS.items():
        for field, (_, spec) in declared(config).items():
            if spec.kind in ("int", "number") and (spec.minimum is not None
                                                   or spec.maximum is not None):
                yield name, field, spec


@pytest.mark.parametrize("method", sorted(METHODS))
def test_the_schema_accepts_the_defaults_and_requires_what_the_config_requires(method):
    schema = param_schema(method)
    jsonschema.Draft202012Validator.check_schema(schema)
    config = METHODS[method](**REQUIRED[method])
    values = {f: getattr(config, f) for f in schema["properties"]}
    values = {f: list(v) if isinstance(v, (tuple, frozenset)) else v for f, v in values.items()}
    if method == "disassociation":
        values["sensitive_codes"] = sorted(values["sensitive_codes"])
    jsonschema.validate(values, schema)
    assert set(schema["required"]) == set(REQUIRED[method])
    if REQUIRED[method]:  # leaving out a required field is refused
        with pytest.raises(TypeError):
                METHODS[method](**{k: v for k, v in list(REQUIRED[method].items())[1:]})
    assert "pseudonym_key" not in schema["properties"]  # a secret is never a form field


@pytest.mark.parametrize("method, field, spec", list(bounded_fields()),
                         ids=lambda x: x if isinstance(x, str) else "")
def test_config_and_schema_refuse_the_same_values_just_outside_the_bounds(method, field, spec):
    schema = param_schema(method)
    base = {**REQUIRED[method]}
    step = 1 if spec.kind == "int" else 1e-9
    outside = []
    if spec.minimum is not None:
        outside.append(spec.minimum if spec.exclusive_minimum else spec.minimum - step)
    if spec.maximum is not None:
        outside.append(spec.maximum + step)
    for value in outside:
        value = int(value) if spec.kind == "int" else value
        with pytest.raises(ParameterError) as err:
            METHODS[method](**{**base, field: value})
        assert err.value.field == field
        if field in schema["properties"]:
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate({**base, field: value}, schema)
    inside = spec.maximum if spec.maximum is not None else spec.minimum + (
        step if spec.exclusive_minimum else 0)
    if method == "disassociation" and field == "max_cluster_size":
        inside = max(inside, base["k"])
    kwargs = {**base, field: int(inside) if spec.kind == "int" else inside}
    if method == "lda" and field in ("w_icd", "w_age"):
        kwargs[{"w_icd": "w_age", "w_age": "w_icd"}[field]] = 1 - kwargs[field]
    if method == "lda" and field == "lookahead":  # it scores within the bonus's age block
        kwargs.update(shared_code_bonus=1.0, age_block=16)
    if method == "hhp" and field == "min_iterations":
        kwargs["max_iterations"] = max(2, int(inside))
    METHODS[method](**kwargs)  # the bound itself is allowed


def test_types_are_checked_by_kind_naming_the_field():
    for config, field, bad in [("ugaclip", "re_query_sizes", "12"), ("ppe", "filter", "f3"),
                               ("disassociation", "refine", 1), ("hhp", "qis", ["zip"]),
                               ("lda", "w_icd", float("nan")), ("gccens", "k", True)]:
        with pytest.raises(ParameterError) as err:
            METHODS[config](**{**REQUIRED[config], field: bad})
        assert err.value.field == field


def parser_of(command: str) -> argparse.ArgumentParser:
    import importlib
    parser = argparse.ArgumentParser(prog=command, exit_on_error=False)
    importlib.import_module(f"anonymizers.cli.{COMMANDS[command][0]}").add_arguments(parser)
    return parser


@pytest.mark.parametrize("command", sorted(COMMAND_CONFIGS))
def test_every_command_offers_each_declared_option_once(command):
    method, seeded, verifies = COMMAND_CONFIGS[command]
    parser = parser_of(command)
    dests = {a.dest: a for a in parser._actions}
    for field, (f, spec) in declared(METHODS[method]).items():
        if spec.cli:
            assert field in dests, f"{command} lacks the option of {field}"
            action = dests[field]
            assert action.default is argparse.SUPPRESS  # the config's default applies
            assert action.required == (field == "seed" or f.default is dataclasses.MISSING)
    assert ("seed" in dests and dests["seed"].required) == seeded
    no_verify = [a for a in parser._actions if "--no-verify" in a.option_strings]
    assert bool(no_verify and no_verify[0].default is True) == verifies


def test_help_lists_every_method_under_the_name_anonymizers(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: anonymizers ")
    for command in COMMAND_CONFIGS:
        assert command in out


@pytest.mark.parametrize("command", [c for c, (_, seeded, _) in COMMAND_CONFIGS.items()
                                     if seeded])
def test_a_command_that_draws_random_numbers_requires_seed(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    usage = capsys.readouterr().out
    assert "--seed SEED" in usage and "[--seed" not in usage


def test_form_params_take_a_deployment_default_only_within_the_bounds():
    from anonymizers.methods import params
    form = params("disassociation", ["m", "refine_window"], m=2, refine_window=256)
    assert list(form) == ["m", "refine_window"]
    assert form["m"]["default"] == 2 and form["m"]["maximum"] == 5
    assert form["refine_window"]["type"] == ["integer", "null"]
    with pytest.raises(ParameterError) as err:
        params("disassociation", ["m"], m=6)
    assert err.value.field == "m"
    with pytest.raises(KeyError, match="batch_size"):
        params("disassociation", ["batch_size"])
    assert params("ugaclip", ["k"])["k"]["minimum"] == 1  # each method its own bound
    assert params("disassociation", ["k"])["k"]["minimum"] == 2
