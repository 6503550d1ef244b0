"""Append-only publication in the DAG: UGACLIP's and LDA's defence against an
adversary who keeps every release (issue 25; docs/threat-model-successive.md,
Sections 3.2-3.3).

A run of a release that has published releases publishes only the patients
it has not published yet, anonymized among themselves
(``anonymizers.successive.kanon.new_patients``: fewer than k are held back
for a later run); every patient is then in one publication only, and its
candidates are that publication's (its single-release guarantee).  The
release table is append-only: it carries every earlier publication's rows as
they were published and appends the new patients' rows, their pseudonyms
prefixed ``G<n>-`` (publication n) so that none repeats an earlier one.
Nothing is withdrawn: a patient who left stays as it was published (a reader
holding the earlier release has it anyway), and dropping it would single it
out (the departure attack of Section 2).

What a run needs of the earlier ones is read from the restricted schema
(``deid.history``), never by source id: each published run stores, as state,

* ``published.links``: the keyed links (``deid.history.link``) of the
  patients it published;
* ``published.kind``: one row, ``full`` true when the run published its
  whole cohort (a first release, or a run with ``successive_defence`` off);
* ``published.<block>``: the rows it added to each release table.

The rows carried are those of the last full publication and every run
after it; validate checks that they are exactly the last published release
(``verdict``: its fingerprint in the history).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from anonymizers.errors import InputError
from anonymizers.successive.kanon import new_patients
from deid import history, staging
from deid.secret import pseudonym_key

# A run that held back every arrival writes ``{NOTHING_NEW: True}`` in its
# metrics: it publishes no new rows (the release carries the published ones),
# so the figures of what it would publish are not measured and no threshold
# reads them (``deid.steps._threshold_verdicts``).
NOTHING_NEW = "nothing_new_published"

LINKS, KIND, ROWS = "published.links", "published.kind", "published."


@dataclass(frozen=True)
class Plan:
    """This run's publication: its number, the rows it selected (the new
    patients'; none when held back) and what it carries."""

    publication: int
    rows: pd.DataFrame
    new_patients: int
    held_back: int
    persisting: int
    carried_patients: int


def begin(run, rows: pd.DataFrame, params: dict) -> Plan | None:
    """The rows of ``rows`` (a ``patient_id`` column of source ids) this run
    publishes, staged with what it carries; None for a full publication
    (no earlier release, or ``successive_defence`` off): the run is then what
    it was before the defence."""
    earlier = history.published(run.release, run.run_id)
    if not earlier or not params.get("successive_defence", True):
        return None
    states = history.earlier_states(run.release, earlier, ROWS)
    missing = [p.run_id for p, s in zip(earlier, states) if LINKS not in s or KIND not in s]
    if missing:
        raise InputError("release history", f"earlier release(s) {missing} of {run.release} "
                         "kept no publication state (published before append-only publication "
                         "or by another method): this run cannot tell whom they published")
    key = pseudonym_key()
    published = set().union(*(set(s[LINKS]["link"]) for s in states))
    ids = pd.Series(pd.unique(rows["patient_id"].astype(str)))
    linked = dict(zip(ids, history.link(ids, key)))
    done = {p for p, link in linked.items() if link in published}
    fresh, held = new_patients(rows, done, params["k"])
    full = max(i for i, s in enumerate(states) if bool(s[KIND]["full"].iloc[0]))
    carried = _carried(states[full:])
    for block, frame in carried.items():
        frame.to_parquet(run.path(staging.append_carried(block)), index=False)
    fresh[["patient_id"]].drop_duplicates().to_parquet(run.path(staging.APPEND_NEW_IDS),
                                                       index=False)
    plan = Plan(len(earlier) + 1, fresh, fresh["patient_id"].nunique(), held, len(done),
                sum(len(s[LINKS]) for s in states[full:]))
    run.write_json(staging.APPEND_PLAN, {"publication": plan.publication,
                                         "carries": earlier[-1].run_id,
                                         "fingerprint": earlier[-1].fingerprint,
                                         "blocks": sorted(carried), **metrics_of(plan)})
    return plan


def _carried(states: list[dict]) -> dict[str, pd.DataFrame]:
    blocks = sorted({n[len(ROWS):] for s in states for n in s} - {"links", "kind"})
    return {b: pd.concat([s[ROWS + b] for s in states if ROWS + b in s], ignore_index=True)
            for b in blocks}


def metrics_of(plan: Plan) -> dict:
    return {"append_only_publication": plan.publication, "new_patients": plan.new_patients,
            "held_back": plan.held_back, "persisting_patients": plan.persisting,
            "carried_patients": plan.carried_patients}


def staged(run) -> dict | None:
    """The staged plan (None: a full publication)."""
    return run.read_json(staging.APPEND_PLAN) if run.path(staging.APPEND_PLAN).exists() else None


def prefix(run) -> str:
    """The pseudonym prefix of this run's new rows (none for a full publication)."""
    plan = staged(run)
    return "" if plan is None else f"G{plan['publication']}-"


def published_ids(run, everyone: pd.Series) -> pd.Series:
    """Source ids of the patients this run publishes."""
    if staged(run) is None:
        return pd.Series(pd.unique(everyone.astype(str)))
    return pd.read_parquet(run.path(staging.APPEND_NEW_IDS))["patient_id"].astype(str)


def carried(run, block: str) -> pd.DataFrame | None:
    """The carried rows of ``block`` (None for a full publication)."""
    plan = staged(run)
    if plan is None or block not in plan["blocks"]:
        return None
    return pd.read_parquet(run.path(staging.append_carried(block)))


def tables(run, new: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The release tables: the carried rows, then this run's."""
    out = {}
    for b, frame in new.items():
        before = carried(run, b)
        out[b] = frame if before is None else pd.concat([before, frame], ignore_index=True)
    return out


def state_parts(run, everyone: pd.Series, new: dict[str, pd.DataFrame]) -> dict:
    """What the load stores for the next runs (module docstring)."""
    ids = published_ids(run, everyone)
    return {LINKS: pd.DataFrame({"link": history.link(ids, pseudonym_key())}),
            KIND: pd.DataFrame({"full": [staged(run) is None]}),
            **{ROWS + b: frame for b, frame in new.items()}}


def verdict(run) -> list[dict]:
    """The carried rows are the last published release, unchanged (its
    fingerprint in the history); none for a full publication."""
    plan = staged(run)
    if plan is None:
        return []
    carried = {b: pd.read_parquet(run.path(staging.append_carried(b))) for b in plan["blocks"]}
    ok = history.fingerprint(carried) == plan["fingerprint"]
    return [{"property": f"append-only: the release carries the last published release "
                         f"({plan['carries']}) unchanged", "ok": ok, "checked": 1,
             "violations": [] if ok else ["the carried rows' fingerprint differs from the "
                                          "published release's"]}]
