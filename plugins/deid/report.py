"""A release's report: one HTML page a privacy officer can read.

The privacy verdict and the utility verdict apart (a release that keeps
its guarantee but loses most of its codes is not called a success), the
utility figures beside the paper's, the verdicts in words, the figures that
matter for the method drawn as plots (embedded PNG, so the page stands
alone), the parameters and the metrics, each named in words.  Only
aggregate figures go in: no identifier, no code tied to a patient.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from deid import release_html as rh
from deid.paths import reports_root
from deid.staging import safe_name
from deid.utility_summary import deviations, property_words


def report_path(release: str, run_id: str) -> Path:
    return reports_root() / release / f"{safe_name(run_id)}.html"


def png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def policy_figure(policy: dict):
    """Risk before: how many privacy constraints PPE found, by size."""
    sizes = [len(c) for c in policy["constraints"]]
    fig, ax = plt.subplots(figsize=(6, 3))
    if sizes:
        ax.hist(sizes, bins=range(1, max(sizes) + 2), align="left", rwidth=0.8)
    ax.set_xlabel("codes in the constraint")
    ax.set_ylabel("privacy constraints")
    ax.set_title(f"Risk before: {len(sizes)} code combinations held by fewer than "
                 f"k={policy['k']} patients")
    return fig


def verdict_sentences(verdicts: dict) -> list[tuple[bool, str]]:
    out = []
    for v in verdicts.get("verdicts", []):
        words = "holds" if v["ok"] else "does NOT hold"
        detail = "" if v["ok"] else " (" + "; ".join(v.get("violations", [])[:3]) + ")"
        sentence = (f"{property_words(v['property'])} {words}, checked on "
                    f"{v.get('checked', '?')} items{detail}.")
        out.append((v["ok"], sentence))
    gates = verdicts.get("gates", [])
    failed = [g for g in gates if not g["ok"]]
    out.append((not failed, f"{len(gates) - len(failed)} of {len(gates)} Great Expectations "
                            f"checks passed" + (": failed " + ", ".join(
                                f"{g['table']}.{g['expectation']}" for g in failed)
                                if failed else ".")))
    return out


def _without_record(values: dict) -> dict:
    return {k: v for k, v in values.items() if k != "run_record"}


def write_report(release: str, run_id: str, method: str, params: dict, metrics: dict,
                 verdicts: dict, figures: list[tuple[str, object]]) -> Path:
    """The page (``templates/report.html``): the privacy and the utility
    verdicts apart (with the release's thresholds), the run record when
    there is one, the utility figures beside the paper's
    (``deid.utility_summary``) and the opt-in deviations from the paper's
    algorithm they were made with, if any, the verdicts, the plots, then every
    parameter and metric named in words."""
    page = rh.render(
        "report.html", release=release, run_id=run_id, method=method,
        headline=rh.headline_values(method, metrics, verdicts),
        record=rh.run_record_rows(params.get("run_record") or metrics.get("run_record")),
        utility=rh.utility_rows(method, metrics), deviations=deviations(metrics),
        levels=rh.levels(metrics),
        verdicts=verdict_sentences(verdicts),
        figures=[(title, png(fig)) for title, fig in figures],
        params=rh.named_rows(_without_record(params), rh.param_label(method)),
        metrics=rh.named_rows(_without_record(metrics)))
    path = report_path(release, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page)
    return path
