"""What the report (``deid.report``) and the Releases view
(``deid.releases_view``) both show: the headline verdicts, the utility
figures beside the paper's, metrics named in words, and the run record.

The markup is in jinja2 templates (``deid/templates/``, package data),
rendered with autoescape: every value is escaped on output, whatever
Python hands over.  This module prepares the values, in words; no
matplotlib, so the web server's view can import it cheaply."""

from __future__ import annotations

import json
from functools import cache

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from deid import utility_summary as us

UTILITY_CLASS = {"meets the paper": "ok", "within the floor": "ok", "below the paper": "warn",
                 us.NOT_MEASURED: "warn", "low utility": "bad", "below threshold": "bad"}
RUN_RECORD = (("triggered_by", "Triggered by"), ("scope", "Scope used"),
              ("overrides", "Overrides"))

# autoescape for every template, whatever its name, and for template strings
ENV = Environment(loader=PackageLoader("deid", "templates"),
                  autoescape=select_autoescape(default_for_string=True, default=True),
                  trim_blocks=True, lstrip_blocks=True)


def render(template: str, **values) -> str:
    """A whole page from ``templates/<template>``."""
    return ENV.get_template(template).render(**values)


@cache
def macros(template: str):
    """The macros of ``templates/<template>``, callable from Python."""
    return ENV.get_template(template).module


def value_text(value) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str)
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def headline_values(method: str, metrics: dict, verdicts: dict) -> dict:
    """Privacy and utility verdicts apart, then the release's thresholds."""
    ok, privacy = us.privacy_verdict(method, verdicts, metrics)
    utility = us.utility_verdict(method, metrics, verdicts)
    limits = us.thresholds(verdicts, metrics)
    shown = ("; ".join(t.text for t in limits) if limits
             else "the release file sets none")
    return {"ok": ok, "privacy": privacy, "utility_class": UTILITY_CLASS[utility.level],
            "utility": utility.sentence, "thresholds": shown}


def utility_rows(method: str, metrics: dict) -> list[dict]:
    """Each utility figure: this release's value beside the paper's."""
    return [{"name": a.figure.name, "value": a.figure.show(a.value),
             "paper": a.figure.paper_text, "reference": a.figure.reference,
             "floor": (us.fmt(a.figure.floor, a.figure.unit)
                       if a.figure.floor is not None else ""),
             "css": UTILITY_CLASS.get(a.status, ""), "status": a.status}
            for a in us.assess(method, metrics)]


def levels(metrics: dict) -> list[tuple[str, list[tuple[str, str]]]]:
    """LDA's generalization levels (Tamersoy 2011, Figs. 13-14), when measured."""
    out = []
    for family, title in (("icd_levels", "ICD values"), ("age_levels", "ages")):
        hist = us.levels(metrics, family)
        if hist:
            out.append((title, [(k, f"{v:.3g}") for k, v in hist.items()]))
    return out


def param_label(method: str):
    """A parameter's title from the method's declaration (its name if unknown)."""
    from deid.methods import param_schemas

    try:
        schemas = param_schemas(method)
    except KeyError:  # a method no longer declared: its run's parameters by name
        schemas = {}
    return lambda name: schemas.get(name, {}).get("title", name)


def named_rows(values: dict, names=us.label) -> list[tuple[str, str, str]]:
    """Every key with its name in words (unknown keys shown as themselves)."""
    return [(names(k), k, value_text(v)) for k, v in values.items()]


def named_table(values: dict, names=us.label) -> Markup:
    return macros("parts.html").named_table(named_rows(values, names))


NOT_CHECKED = "not checked (stopped before validate, or older than release histories)"
FIRST = "no earlier release (the first)"


def checked_against(run_ids) -> str | list[str]:
    """The earlier releases (run ids) a run was checked against: the ids,
    or in words: NULL is a run that stopped before validate (or ran before
    the column existed); [] a first release."""
    if run_ids is None:
        return NOT_CHECKED
    if not run_ids:
        return FIRST
    return [str(r) for r in run_ids]


SCHEDULED = "no user (the schedule)"


def record_value(key: str, value) -> str:
    """A run-record field in words: no triggering user is the schedule
    (the audit row's ``triggered_by`` is NULL for a scheduled run)."""
    if key == "triggered_by" and value is None:
        return SCHEDULED
    return "none" if value in (None, "", {}, []) else value_text(value)


def run_record_rows(record) -> list[tuple[str, str]] | None:
    """Who or what triggered the run, the scope it used and its overrides."""
    if not isinstance(record, dict):
        return None
    return [(label, record_value(key, record.get(key))) for key, label in RUN_RECORD]
