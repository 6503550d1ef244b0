"""Reports and the Releases view give the privacy verdict and the utility
verdict apart, with each method's figures beside the paper's
(``deid.utility_summary``).  Real reports are rendered with ``write_report``
and their HTML read back."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import matplotlib.pyplot as plt
import pytest
from deid import utility_summary as us
from deid.methods import METHODS

PPE_OK = {"property": "ppe-policy", "ok": True, "checked": 40, "violations": []}
GATES_OK = [{"table": "released", "expectation": "expect_column_values_to_not_be_null",
             "ok": True}]


def verdicts(*extra: dict) -> dict:
    return {"verdicts": [PPE_OK, *extra], "gates": GATES_OK}


def holds(prop: str) -> dict:
    return {"property": prop, "ok": True, "checked": 10, "violations": []}


def threshold(metric: str, op: str, limit, ok: bool, value) -> dict:
    return {"property": f"threshold {metric} {op} {limit}", "ok": ok, "checked": 1,
            "violations": [] if ok else [f"{metric} = {value}"]}


UGACLIP_SUPPRESSING = {  # what UGACLIP wrote on MEPS at level 2 (benchmarks/RESULTS.md)
    "k": 5, "n_records": 26854, "n_codes": 601, "n_items": 50, "n_generalized_items": 23,
    "largest_item": 5, "il_total": 3.3e-184, "il_log10_total": -183.5, "suppressed_codes": 516,
    "suppressed_occurrences": 97844, "suppressed_share": 0.888}
DISASSOCIATION_GOOD = {"n_records": 1000, "n_codes": 300, "n_clusters": 180,
                       "are_w2": 0.02, "mre_share_in_-5_5": 0.93, "w2_code_set_sizes": "1-2"}


class Text(HTMLParser):
    """The page's text, and the text of each element with a class, by class."""

    def __init__(self, page: str):
        super().__init__()
        self.parts, self.classes, self.stack = [], {}, []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.stack.append((tag, dict(attrs).get("class"), len(self.parts)))

    def handle_endtag(self, tag):
        while self.stack:
            name, cls, start = self.stack.pop()
            if cls:
                self.classes.setdefault(cls, []).append("".join(self.parts[start:]))
            if name == tag:
                break

    def handle_data(self, data):
        self.parts.append(data)

    @property
    def text(self) -> str:
        return "".join(self.parts)


@pytest.fixture
def render(tmp_path, monkeypatch):
    monkeypatch.setenv("DEID_REPORTS_DIR", str(tmp_path / "reports"))

    def render(method, metrics, verdict, params=None, release="r"):
        from deid.report import write_report

        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1])
        path = write_report(release, "manual__1", method, params or {"k": 5}, metrics,
                            verdict, [("a figure", fig)])
        return Text(path.read_text()), path.read_text()

    return render


def headline(page: Text) -> tuple[str, str]:
    """(privacy, utility) sentences of the headline."""
    line = re.search(r"Privacy: (.*?)\.\s*Utility: (.*?)\.\s*Thresholds:", page.text, re.DOTALL)
    assert line, page.text[:500]
    return line[1], line[2]


def test_release_suppressing_most_codes_is_low_utility_while_privacy_holds(render):
    page, _ = render("ugaclip", UGACLIP_SUPPRESSING, verdicts(
        holds("ugaclip-k-protection"), threshold("suppressed_share", "<=", 0.9, True, 0.888)))
    privacy, utility = headline(page)
    assert privacy.startswith("k-protection of every privacy constraint holds")
    assert utility.endswith("low utility")
    assert "code occurrences suppressed: 88.8%" in utility
    assert "distinct codes suppressed: 85.9%" in utility  # 516 of 601
    assert "meets the paper" not in page.text and "success" not in page.text
    assert "share of code occurrences suppressed ≤ 0.9: holds (0.888)" in page.text
    assert "threshold: share of code occurrences suppressed ≤ 0.9 holds, checked" in page.text
    assert "low utility" in " ".join(page.classes["bad"])
    assert privacy in " ".join(page.classes["ok"])


def test_high_utility_release_meets_the_paper(render):
    page, _ = render("disassociation", DISASSOCIATION_GOOD, verdicts(
        holds("k^m-anonymity (Guarantee 1) of a disassociated release"),
        threshold("are_w2", "<=", 10.0, True, 0.02)))
    privacy, utility = headline(page)
    assert privacy.startswith("k^m-anonymity holds")
    assert utility == "utility meets the paper on the 2 figure(s) measured; 3 not measured"
    assert "93%" in page.text and "Fig. 18" in page.text and "Fig. 17" in page.text
    assert "low utility" not in page.text


def test_disassociation_far_from_the_paper_is_low_utility(render):
    metrics = {**DISASSOCIATION_GOOD, "mre_share_in_-5_5": 0.0033, "mre_share_beyond_10": 0.987}
    page, _ = render("disassociation", metrics, verdicts(holds("k^m-anonymity")))
    _, utility = headline(page)
    assert "utility constraints with MRE in [-5%, 5%): 0.33%" in utility
    assert "utility constraints with MRE off by more than 10%: 98.7%" in utility
    assert "low-utility floor 45%" in utility and utility.endswith("low utility")


def test_missing_metric_is_not_measured_never_zero_or_pass(render):
    page, raw = render("hhp", {"risk": 0.02, "information_loss": 0.2}, verdicts(
        holds("HHP release"), threshold("risk", "<=", 0.05, True, 0.02)))
    _, utility = headline(page)
    assert utility.startswith("utility not measured")
    rows = re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td>.*?<td class='(\w*)'>([^<]*)</td>"
                      r"</tr>", raw.split("Utility beside the paper")[1].split("</table>")[0])
    by_name = {name: (value, verdict) for name, value, _, verdict in rows}
    assert by_name["members whose claims are truncated"] == ("not measured", "not measured")
    assert by_name["claims kept after screening and truncation"] == ("not measured",
                                                                     "not measured")
    assert by_name["information loss of the chosen node"] == ("0.2", "for reference")


@pytest.mark.parametrize("value", [None, float("nan"), "0.5", True])
def test_a_value_that_is_not_a_number_is_not_measured(value):
    f = us.FIGURES["gccens"][0]
    assert f.value({"cul_mean": value}) is None and f.status(None) == us.NOT_MEASURED
    assert f.status(f.value({"cul_mean": 0.0})) == "meets the paper"  # a real zero counts


def test_failing_utility_threshold_is_below_threshold_and_privacy_still_holds(render):
    page, _ = render("ugaclip", {**UGACLIP_SUPPRESSING, "suppressed_share": 0.95}, verdicts(
        holds("ugaclip-k-protection"), threshold("suppressed_share", "<=", 0.9, False, 0.95)))
    privacy, utility = headline(page)
    assert "holds" in privacy and "FAILED" not in privacy
    assert utility.startswith("share of code occurrences suppressed ≤ 0.9: FAILS (0.95): "
                              "below threshold")
    assert utility.endswith("low utility")


def test_risk_words_are_the_pipelines():
    from deid.steps import RISK_KEYS

    assert set(us.RISK_WORDS) == set(RISK_KEYS)


def test_failing_risk_threshold_fails_privacy_not_utility():
    v = verdicts(holds("HHP release"), threshold("risk", "<=", 0.05, False, 0.07))
    ok, words = us.privacy_verdict("hhp", v, {"risk": 0.07})
    assert not ok and "threshold risk <= 0.05" in words
    assert us.utility_verdict("hhp", {"risk": 0.07}, v).level == us.NOT_MEASURED


def test_lda_gets_levels_ilm_alm_and_avgre(render):
    icd = {"5-digit": 10.0, "4-digit": 15.0, "3-digit": 12.0, "section": 3.0,
           "chapter": 20.0, "any": 40.0}
    age = {f"{2 ** i}-year": v for i, v in enumerate([5, 10, 15, 20, 15, 5, 5, 25])}
    metrics = {"ilm": 0.42, "alm": 0.3, "avg_re": 0.8, "icd_kept_3digit_or_finer": 37.0,
               "age_kept_16year_or_finer": 65.0,
               **{f"icd_levels.{k}": v for k, v in icd.items()},
               **{f"age_levels.{k}": v for k, v in age.items()}}
    page, _ = render("lda", metrics, verdicts(holds("LDA: k-anonymous trajectories")))
    _, utility = headline(page)
    assert utility == "utility meets the paper on the 5 figure(s) measured"  # 37%, 65%
    assert "Generalization levels" in page.text and "ICD values: level" in page.text
    assert "ICD values at the 3-digit level (%)" in page.text  # the flat keys, in words
    nested = us.assess("lda", {"icd_kept_3digit_or_finer": 37.0, "ilm": 0.9})
    assert nested[0].value == pytest.approx(0.37) and nested[2].status == "low utility"


def test_medco_shows_the_least_ratio_this_data_allows_beside_the_paper(render):
    """On 124 patients the proven floor (duplicating code sets) is 63% above
    the theoretical ratio: the report shows it next to the figure the paper's
    10% is read on, for reference, without a verdict of its own."""
    metrics = {"real_ratio": 2.05, "theoretical_ratio": 1.225,
               "ratio_bound_profiles_duplicated": 2.0}
    page, _ = render("medco", metrics, verdicts(holds("MedCo dummies")))
    _, utility = headline(page)
    assert "released code occurrences above the theoretical ratio: 67.3%" in utility
    assert utility.endswith("low utility")
    assert "least any release of this data can be above it (code sets duplicated)" in page.text
    bound = [a for a in us.assess("medco", metrics) if a.figure.name.startswith("least")][0]
    assert bound.value == pytest.approx(2.0 / 1.225 - 1) and bound.status == "for reference"
    assert us.assess("medco", {"real_ratio": 2.05, "theoretical_ratio": 1.225})[1].status == \
        us.NOT_MEASURED


def test_run_record_is_shown(render):
    record = {"triggered_by": "alice (manual)", "scope": "c.clm_from_dt >= '2009-01-01'",
              "overrides": {"k": 10}}
    page, _ = render("medco", {"real_ratio": 11.48, "theoretical_ratio": 10.62},
                     verdicts(holds("MedCo dummies")), params={"k": 5, "run_record": record})
    for words in ("Triggered by", "alice (manual)", "Scope used", "2009-01-01", "Overrides",
                  '{"k": 10}'):
        assert words in page.text
    _, utility = headline(page)
    assert utility.startswith("utility meets the paper")  # 8.1% above the theoretical
    scheduled, _ = render("medco", {}, verdicts(), params={"run_record": {
        "triggered_by": None, "scope": "TRUE", "overrides": {}}})
    assert "Triggered byno user (the schedule)" in scheduled.text
    assert "Overridesnone" in scheduled.text


def test_every_metric_is_named_in_words_and_unknown_keys_stay_keys(render):
    _, raw = render("ugaclip", {**UGACLIP_SUPPRESSING, "a_new_key": 3},
                       verdicts(holds("ugaclip-k-protection")))
    metrics = raw.split("<h2>Metrics</h2>")[1]
    for key in UGACLIP_SUPPRESSING:
        assert f"<td>{us.label(key)}</td><td><code>{key}</code>" in metrics
        assert us.label(key) != key or key == "k"
    assert "<td>a_new_key</td><td><code>a_new_key</code>" in metrics


def test_every_method_declares_a_guarantee_and_figures_with_named_keys():
    assert set(us.FIGURES) == set(METHODS) == set(us.GUARANTEES)
    for method, keys in us.expected_keys().items():
        assert all(us.label(k) != k for k in keys), method


def test_floor_rule():
    higher, lower = us.FIGURES["disassociation"][0], us.FIGURES["gccens"][0]
    assert higher.floor == pytest.approx(0.45)           # half of 90%
    assert lower.floor == pytest.approx(0.092)           # twice 0.046
    ilm = us.FIGURES["lda"][2]
    assert ilm.floor == pytest.approx(0.75)              # half-way from 0.5 to 1
    assert us.FIGURES["ugaclip"][0].floor == 0.5         # declared: no number published
    assert higher.status(0.46) == "below the paper" and higher.status(0.44) == "low utility"


def test_releases_view_rows_show_utility_and_run_record():
    from deid.releases_view import _run_row

    run = {"run_id": "manual__1", "method": "ugaclip", "outcome": "loaded", "seed": 1,
           "params": {"k": 5, "utility_policy": "icd9-level-2"},
           "metrics": {"extract": {"rows": 10}, "ugaclip": UGACLIP_SUPPRESSING},
           "verdicts": verdicts(holds("ugaclip-k-protection")), "error": None,
           "report_path": "/x/r/manual__1.html", "ended_at": "2026-11-27 10:00:00",
           "output_rows": 5}
    row = Text(_run_row("r", run))
    assert "all verdicts hold" in row.text
    assert "low utility: code occurrences suppressed: 88.8%" in row.text
    assert "Utility policy" in row.text and "share of code occurrences suppressed" in row.text
    with_record = Text(_run_row("r", {**run, "triggered_by": "bob", "scope": "TRUE",
                                      "overrides": {"k": 7}}))
    assert "bob" in with_record.text and 'overrides: {"k": 7}' in with_record.text
    assert "scope used" in with_record.text


def test_lda_opt_in_deviations_are_named_beside_the_utility_figures(render):
    """A release made with LDA's opt-in deviations (the shipped release file
    uses both) says beside its utility figures, in the headline and under
    the table, that they are not the thesis' algorithm, each with its value."""
    from deid.methods import lda

    figures = {"ilm": 0.42, "alm": 0.3, "avg_re": 0.8, "icd_kept_3digit_or_finer": 37.0,
               "age_kept_16year_or_finer": 65.0}
    metrics = {**figures, **lda._deviation_metrics({"member_weighted": True,
                                                    "refine_rounds": 4})}
    page, raw = render("lda", metrics, verdicts(holds("LDA: k-anonymous trajectories")))
    _, utility = headline(page)
    assert utility.startswith("utility meets the paper on the 5 figure(s) measured; figures of "
                              "the algorithm with opt-in deviations from the paper: "
                              "member_weighted = true (")
    assert "; refine_rounds = 4 (" in utility
    beside = raw.split("Utility beside the paper")[1].split("<h2>")[0]
    note = Text(beside).classes["warn"][0]
    assert note.startswith("Not the paper's algorithm:")
    assert "member_weighted = true" in note and "refine_rounds = 4" in note
    assert "The utility figures above are those of the modified algorithm." in note
    assert "opt-in deviations from the paper's algorithm" in Text(
        raw.split("<h2>Metrics</h2>")[1]).text

    one = {**figures, **lda._deviation_metrics({"refine_rounds": 2})}
    _, utility = headline(render("lda", one, verdicts())[0])
    assert utility.endswith("opt-in deviations from the paper: refine_rounds = 2 (rounds of "
                            "moves and swaps between clusters after MDAV, not in the thesis' IV.3.2)")
    assert "member_weighted" not in utility

    thesis = {**figures, **lda._deviation_metrics({"member_weighted": False,
                                                   "refine_rounds": 0})}
    page, raw = render("lda", thesis, verdicts(holds("LDA: k-anonymous trajectories")))
    assert thesis == figures
    assert headline(page)[1] == "utility meets the paper on the 5 figure(s) measured"
    assert "Not the paper's algorithm" not in raw and "deviations" not in raw


def test_releases_view_names_the_deviations_with_the_utility():
    from deid.methods import lda
    from deid.releases_view import _utility_text

    metrics = {"ilm": 0.42, **lda._deviation_metrics({"member_weighted": True})}
    _, sentence = _utility_text({"method": "lda", "metrics": {"lda": metrics},
                                 "verdicts": verdicts()})
    assert "opt-in deviations from the paper: member_weighted = true" in sentence
