"""The versioned screening policy against the paper's section 2 lists
(El Emam et al. 2012, appendix)."""

from __future__ import annotations

import pytest

from anonymizers.claims.codes import expand_prefixes
from anonymizers.claims.policy import DEFAULT_POLICY, load_policy
from anonymizers.errors import InputError


@pytest.fixture(scope="module")
def policy():
    return load_policy()


def rule(policy, name):
    return next(r for r in policy.member_rules if r.name == name)


def test_policy_is_versioned(policy):
    assert policy.version == "hhp-2012-v1"
    assert "version: hhp-2012-v1" in DEFAULT_POLICY.read_text()


@pytest.mark.parametrize("name, field, prefixes", [
    ("hiv", "dx", ("042", "043", "044")),
    ("abortive_pregnancy", "dx", ("634", "635", "636", "637", "638", "639")),
    ("ectopic_molar_pregnancy", "dx", ("630", "631", "632", "633")),
    ("abuse_assault", "dx", ("9955", "99581", "99582", "99583", "E95", "E96", "V154")),
    ("substance_abuse", "dx", ("291", "292", "303", "304", "305")),
    ("psychosexual_disorders", "dx", ("302",)),
    ("mental_retardation", "dx", ("317", "318", "319")),
    ("plastic_surgery", "dx", ("V501", "V51")),
    ("rare_visible_disease", "dx", ()),
    ("intersex_surgery", "procedure", ("5597", "5598")),
    ("abortion_procedures", "procedure", ("59100", "59812", "59820", "59821", "59830", "59840",
                                          "59841", "59850", "59851", "59852", "59855", "59856",
                                          "59857")),
    ("substance_abuse_procedures", "procedure", ("897",)),
])
def test_member_lists_are_the_papers(policy, name, field, prefixes):
    r = rule(policy, name)
    assert r.field == field
    assert r.prefixes == prefixes


def test_place_of_service_codes_55_to_57(policy):
    r = rule(policy, "place_of_service_55_57")
    assert r.field == "place_of_service" and r.codes == ("55", "56", "57") and not r.prefixes


def test_claim_rules(policy):
    c = policy.claim_rules
    assert c.newborn_days == 28 and c.newborn_scope == "claim"
    assert c.letter_prefix and c.digit_lengths == (3,) and c.non_medical_scope == "claim"


def test_rare_visible_codes_are_added(policy):
    more = policy.with_rare_visible(["757.1", "7571"])
    assert rule(more, "rare_visible_disease").prefixes == ("7571",)
    assert more.extra_rare_visible == ("7571",)
    assert rule(policy, "rare_visible_disease").prefixes == ()  # the original is unchanged
    assert policy.with_rare_visible([]) is policy


def test_ranges_expand_and_undot():
    assert expand_prefixes(["V22-V28"]) == tuple(f"V{i}" for i in range(22, 29))
    assert expand_prefixes(["995.81", "59850-59852"]) == ("99581", "59850", "59851", "59852")
    with pytest.raises(InputError, match="range"):
        expand_prefixes(["630-63"])
    with pytest.raises(InputError, match="range"):
        expand_prefixes(["639-630"])


@pytest.mark.parametrize("text, problem", [
    ("member_rules: []\n", "version"),
    ("version: x\nmember_rules:\n  - name: a\n    field: nose\n", "field"),
    ("version: x\nmember_rules:\n  - {name: a, field: dx}\n  - {name: a, field: dx}\n",
     "distinct"),
    ("version: x\nclaim_rules:\n  - {name: newborn, scope: family}\n", "scope"),
    ("version: x\nclaim_rules:\n  - {name: teeth}\n", "claim rules"),
    ("version: [unclosed\n", "YAML"),
])
def test_bad_policy_files_are_refused(tmp_path, text, problem):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=problem):
        load_policy(path)


def test_missing_policy_file(tmp_path):
    with pytest.raises(InputError, match="not found"):
        load_policy(tmp_path / "none.yaml")
