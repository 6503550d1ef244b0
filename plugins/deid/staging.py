"""Run-scoped staging storage.  It holds identifiable data: owner-only
permissions, outside the DAGs folder, deleted when the run ends."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from deid.paths import staging_root

# The staged files of a run, by name: the only place that spells them (a
# test greps plugins/ for others).  ``Run.path(name)`` is where each lives.
# Per-batch and per-part files are small functions of the batch / part.

RUN_FILE = "run.json"
"""Which run a folder is (its name is a hash), for deid.sweep; written by ``run_dir``."""
HEARTBEAT = "heartbeat"
"""Empty, touched while one of the run's tasks runs (``beat``), for deid.sweep."""

RUN_PARAMS = "run_params.json"
"""The run's parameters, scope, code policy and run record; steps.prepare."""
CLAIMS = "claims.parquet"
"""The release scope's claims (patient_id, claim_id, code...); steps.extract, screening.combine."""
CLAIMS_SCREENED = "claims.screened.parquet"
"""The claims less the screened-out members, before it replaces CLAIMS; screening.combine."""
SCREEN_RANGES = "screen_ranges.json"
"""The screening batches' patient id ranges; screening.plan."""
POLICY = "policy.json"
"""PPE's privacy policy (its constraints: the risk before); steps.privacy_policy."""
POLICY_VERDICT = "policy_verdict.json"
"""PPE's verifier's verdict on the policy; steps.verify_policy."""
VERDICTS = "verdicts.json"
"""Every verdict and gate result of the release; steps.validate."""
CHECKED_AGAINST = "checked_against.json"
"""Run ids of the earlier releases the release was checked beside; steps.check_history."""
METHOD_METRICS = "method_metrics.json"
"""The method's figures (report, thresholds, audit); its last step (measure for disassociation)."""
NOT_MEASURED = "not_measured"
"""Key in METHOD_METRICS: {figure: why this run could not measure it}; a threshold on such a
figure fails with that reason (steps._threshold_verdicts)."""

APPEND_PLAN = "append_only.json"
"""An append-only run's publication (number, selected rows); append_only.begin."""
APPEND_NEW_IDS = "append_new_ids.parquet"
"""Source ids of the patients an append-only run publishes; append_only.begin."""
RELEASED = "released.parquet"
"""The released records of gccens, lda and medco; their anonymizing step."""
KEY = "key.parquet"
"""Pseudonym -> patient map of gccens, lda and hhp (restricted); their anonymizing step."""
STATE_FROM = "state_from.json"
"""The published run MedCo continued, for deid.cross_release; medco.dummies."""

DIS_BATCHES = "dis_batches.json"
"""Disassociation's batch ranges, policy and plan figures; disassociation.plan."""
DIS_RETAINED = "dis_retained.parquet"
"""patient_id (keyed link), code: published before, then left; disassociation.plan."""
DIS_HELD = "dis_held_back.parquet"
"""patient_id of arrivals not published in this run; disassociation.plan."""
DIS_SUCCESSIVE = "dis_successive.json"
"""What the run made of the history (counts, no patient ids); disassociation.plan."""
MRE_HISTOGRAM = "mre_histogram.json"
"""Disassociation's relative-error histogram for the report; disassociation.measure."""
UGACLIP = "ugaclip.json"
"""UGACLIP's release (items, suppressed codes, figures); ugaclip.generalize."""
NEW_POLICY = "policy_new_patients.json"
"""PPE of the patients an append-only UGACLIP run publishes; ugaclip.generalize."""
SAMPLE_CLAIMS = "sample_claims.parquet"
"""GCCENS's sample scope claims, deleted once SAMPLE_IDS is written; gccens.censor."""
SAMPLE_IDS = "sample_ids.parquet"
"""patient_id of GCCENS's sample; gccens.censor."""
PATIENTS = "patients.parquet"
"""patient_id of the patients GCCENS released; gccens.censor."""
FINAL_CAPS = "final_caps.json"
"""GCCENS's final count caps per code; gccens.censor."""
CUL = "cul.json"
"""GCCENS's cumulative utility loss curve for the report; gccens.censor."""
HHP_CLAIMS = "hhp_claims.parquet"
"""The scope's claims in HHP's wide layout; hhp.prepare."""
HHP_GROUPS = "hhp_groups.json"
"""HHP's search batches (the partitions each searches); hhp.prepare."""
HHP_MEMBERS = "hhp_members.parquet"
"""HHP's released members table; hhp.release."""
HHP_RELEASE_CLAIMS = "hhp_release_claims.parquet"
"""HHP's released claims table; hhp.release."""
HHP_METRICS = "hhp_metrics.json"
"""HHP's own figures (its verifier reads them); hhp.release."""
LATTICE = "lattice.json"
"""HHP's lattice nodes and their risk, for the report; hhp.release."""
CLUSTERS = "clusters.json"
"""MedCo's code clusters; medco.cluster_codes, rewritten by medco.dummies."""
DUMMY_MAP = "dummy_map.parquet"
"""MedCo's dummy -> code map (restricted); medco.dummies."""
HISTOGRAMS = "histograms.json"
"""LDA's histograms for the report; lda.anonymize."""


def _per(pattern: str, doc: str) -> Callable[[int | str], str]:
    """The file name of one batch or part: ``pattern`` with it in ``{}``."""
    def name(of: int | str) -> str:
        return pattern.format(of)
    name.__doc__ = doc
    return name


append_carried = _per("append_carried.{}.parquet", "Release table ``block`` as last published, "
                      "for an append-only run; append_only.begin.")
screen_claims = _per("screen_claims.b{}.parquet",
                     "Claims of screening batch ``i`` (a patient id range); screening.plan.")
screen_removed = _per("screen_removed.b{}.parquet",
                      "member_id screened out of batch ``i``; screening.batch.")
dis_plan = _per("dis_plan.b{}.parquet",
                "patient_id -> cluster of disassociation batch ``i``; disassociation.plan.")
dis_records = _per("dis_records.b{}.parquet", "The records (patient_id, code) of "
                   "disassociation batch ``i``; disassociation.plan.")
dis_fragment = _per("dis_fragment.b{}.json", "Disassociated batch ``i`` (its blocks' rows); "
                    "disassociation.disassociate.")
dis_verdict = _per("dis_verdict.b{}.json",
                   "The verifier's verdict on batch ``i``; disassociation.verify_batch.")
dis_block = _per("dis_{}.parquet", "Disassociation's release table ``block`` (clusters, "
                 "record_chunks...); disassociation.combine.")
dis_state = _per("dis_state.{}.parquet", "Part ``part`` of disassociation's new state "
                 "(``state_parts``); disassociation.plan.")
hhp_parts = _per("hhp_parts.b{}.json", "Results of HHP search batch ``i``; hhp.search.")
medco_state = _per("medco_state.{}.parquet", "Part ``part`` of MedCo's new state (its "
                   "persisted dummies); medco.dummies.")


def medco_state_files(folder: Path) -> dict[str, Path]:
    """Every ``medco_state`` file in ``folder``, by part, in name order."""
    prefix, suffix = medco_state("*").split("*")
    return {p.name[len(prefix):-len(suffix)]: p for p in sorted(folder.glob(medco_state("*")))}


MAX_MAPPED = 1024  # Airflow's default max_map_length: most tasks one mapped step may expand to


def batch_size(requested: int, n_items: int) -> int:
    """``requested``, enlarged when ``n_items`` would need more than MAX_MAPPED batches."""
    return max(requested, -(-n_items // MAX_MAPPED), 1)


def safe_name(run_id: str) -> str:
    """A folder name for a run id: readable prefix plus a hash (run ids hold ':' and '+')."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", run_id)[:60]
    return f"{slug}-{hashlib.sha256(run_id.encode()).hexdigest()[:10]}"


def run_dir(release: str, run_id: str, create: bool = True) -> Path:
    root = staging_root()
    path = root / safe_name(release) / safe_name(run_id)
    if create:
        old = os.umask(0o077)
        try:
            path.mkdir(parents=True, exist_ok=True)
        finally:
            os.umask(old)
        for p in (root, root / safe_name(release), path):
            os.chmod(p, 0o700)
        if not (path / RUN_FILE).exists():
            (path / RUN_FILE).write_text(json.dumps({"release": release, "run_id": run_id}))
    return path


def beat(release: str, run_id: str) -> None:
    """Mark the run alive now, if it has staging (never creates it)."""
    path = run_dir(release, run_id, create=False)
    if path.is_dir():
        try:
            (path / HEARTBEAT).touch()
        except FileNotFoundError:  # cleanup removed the folder meanwhile
            pass


def last_beat(release: str, run_id: str) -> float | None:
    """When a task of the run last marked it alive (or its staging was made), epoch s."""
    path = run_dir(release, run_id, create=False)
    for p in (path / HEARTBEAT, path / RUN_FILE, path):
        try:
            return p.stat().st_mtime
        except FileNotFoundError:
            continue
    return None


def staged_runs(release: str | None = None) -> list[tuple[str, str]]:
    """(release, run_id) of every run folder in staging that says which run it is."""
    root = staging_root()
    pattern = f"{safe_name(release)}/*/{RUN_FILE}" if release else f"*/*/{RUN_FILE}"
    runs = []
    for marker in sorted(root.glob(pattern)) if root.is_dir() else ():
        try:
            run = json.loads(marker.read_text())
        except (OSError, ValueError):
            continue
        runs.append((run["release"], run["run_id"]))
    return runs


def cleanup(release: str, run_id: str) -> bool:
    """Delete the run's staging folder; True if there was one."""
    path = run_dir(release, run_id, create=False)
    if path.exists():
        shutil.rmtree(path)
        return True
    return False
