"""HTML pieces the report (``deid.report``) and the Releases view
(``deid.releases_view``) both show: the headline verdicts, the utility
figures beside the paper's, metrics named in words, and the run record.
Plain strings, every value escaped; no matplotlib, so the web server's
view can import it cheaply."""

from __future__ import annotations

import html
import json

from deid import utility_summary as us

STYLE = (".ok{color:#17692b}.bad{color:#b00020}.warn{color:#8a5a00}"
         "table.t td,table.t th{border-bottom:1px solid #ddd;padding:.25em .5em;text-align:left;"
         "vertical-align:top}table.t{border-collapse:collapse}")
UTILITY_CLASS = {"meets the paper": "ok", "within the floor": "ok", "below the paper": "warn",
                 us.NOT_MEASURED: "warn", "low utility": "bad", "below threshold": "bad"}
RUN_RECORD = (("triggered_by", "Triggered by"), ("scope", "Scope used"),
              ("overrides", "Overrides"))

e = html.escape


def value_text(value) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str)
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def headline(method: str, metrics: dict, verdicts: dict) -> str:
    """Privacy and utility verdicts apart, then the release's thresholds."""
    ok, privacy = us.privacy_verdict(method, verdicts, metrics)
    utility = us.utility_verdict(method, metrics, verdicts)
    limits = us.thresholds(verdicts, metrics)
    shown = ("; ".join(t.text for t in limits) if limits
             else "the release file sets none")
    return (f"<p class='headline'><b>Privacy:</b> <span class='{'ok' if ok else 'bad'}'>"
            f"{e(privacy)}</span>.<br><b>Utility:</b> <span class='"
            f"{UTILITY_CLASS[utility.level]}'>{e(utility.sentence)}</span>.<br>"
            f"<b>Thresholds:</b> {e(shown)}.</p>")


def utility_table(method: str, metrics: dict) -> str:
    rows = "".join(
        f"<tr><td>{e(a.figure.name)}</td><td>{e(a.figure.show(a.value))}</td>"
        f"<td>{e(a.figure.paper_text)}</td><td>{e(a.figure.reference)}</td>"
        f"<td>{e(us.fmt(a.figure.floor, a.figure.unit) if a.figure.floor is not None else '')}"
        f"</td><td class='{UTILITY_CLASS.get(a.status, '')}'>{e(a.status)}</td></tr>"
        for a in us.assess(method, metrics))
    if not rows:
        return f"<p>No utility figure is declared for {e(method)}.</p>"
    return ("<table class='t'><tr><th>figure</th><th>this release</th><th>paper</th>"
            "<th>where</th><th>low-utility floor</th><th>verdict</th></tr>" + rows + "</table>")


def levels_table(metrics: dict) -> str:
    """LDA's generalization levels (Tamersoy 2011, Figs. 13-14), when measured."""
    parts = []
    for family, title in (("icd_levels", "ICD values"), ("age_levels", "ages")):
        hist = us.levels(metrics, family)
        if hist:
            parts.append(f"<table class='t'><tr><th>{title}: level</th><th>%</th></tr>" +
                         "".join(f"<tr><td>{e(k)}</td><td>{v:.3g}</td></tr>"
                                 for k, v in hist.items()) + "</table>")
    return "".join(parts)


def param_label(method: str):
    """A parameter's title from the method's declaration (its name if unknown)."""
    from deid.methods import param_schemas

    try:
        schemas = param_schemas(method)
    except KeyError:  # a method no longer declared: its run's parameters by name
        schemas = {}
    return lambda name: schemas.get(name, {}).get("title", name)


def named_table(values: dict, names=us.label) -> str:
    """Every key with its name in words (unknown keys shown as themselves)."""
    rows = "".join(f"<tr><td>{e(names(k))}</td><td><code>{e(k)}</code></td>"
                   f"<td>{e(value_text(v))}</td></tr>" for k, v in values.items())
    return "<table class='t'>" + rows + "</table>"


NOT_CHECKED = "not checked (stopped before validate, or older than release histories)"
FIRST = "no earlier release (the first)"


def checked_against(run_ids) -> str:
    """The earlier releases (run ids) a run was checked against, in words:
    NULL is a run that stopped before validate (or ran before the column
    existed); [] a first release."""
    if run_ids is None:
        return e(NOT_CHECKED)
    if not run_ids:
        return e(FIRST)
    return "<br>".join(f"<code>{e(str(r))}</code>" for r in run_ids)


SCHEDULED = "no user (the schedule)"


def record_value(key: str, value) -> str:
    """A run-record field in words: no triggering user is the schedule
    (the audit row's ``triggered_by`` is NULL for a scheduled run)."""
    if key == "triggered_by" and value is None:
        return SCHEDULED
    return "none" if value in (None, "", {}, []) else value_text(value)


def run_record(record) -> str:
    """Who or what triggered the run, the scope it used and its overrides."""
    if not isinstance(record, dict):
        return ""
    items = "".join(f"<dt>{label}</dt><dd>{e(record_value(key, record.get(key)))}</dd>"
                    for key, label in RUN_RECORD)
    return f"<dl class='run-record'>{items}</dl>"
