"""The pipeline's steps, one function per DAG task.

Each step reads its inputs from the run's staging folder, writes its outputs
there and returns only small things (counts, metrics, verdicts) for XCom.
The anonymization itself is the ``anonymizers`` library's.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from deid import extract as extract_mod
from deid import load as load_mod
from deid import staging, validation
from deid.warehouse import ensure_schemas


class ValidationFailed(Exception):
    """A release failed a gate: the run must stop without loading (and without retry)."""


@dataclass(frozen=True)
class Run:
    release: str
    run_id: str

    @property
    def dir(self) -> Path:
        return staging.run_dir(self.release, self.run_id)

    def path(self, name: str) -> Path:
        return self.dir / name

    def write_json(self, name: str, obj) -> None:
        self.path(name).write_text(json.dumps(obj, default=str))

    def read_json(self, name: str):
        return json.loads(self.path(name).read_text())


def prepare(run: Run) -> dict:
    ensure_schemas()
    load_mod.drop_stale_builds(run.release, run.run_id)
    run.dir  # noqa: B018 - creates the owner-only staging folder
    return {"started_at": dt.datetime.now(dt.timezone.utc).isoformat()}


def extract(run: Run, scope: str = "TRUE") -> dict:
    stats = extract_mod.extract_to_parquet(run.path("claims.parquet"), scope)
    if stats["rows"] == 0:
        raise ValidationFailed("the release's scope selects no claims: nothing to release")
    return stats


def _claims(run: Run, columns=None) -> pd.DataFrame:
    return pd.read_parquet(run.path("claims.parquet"), columns=columns)


def privacy_policy(run: Run, k: int, filter: str) -> dict:
    """PPE on the extracted claims; a visit is a claim under ``single-visit``."""
    from anonymizers.ppe import PPEConfig, extract_policy

    df = _claims(run, ["patient_id", "claim_id", "code"]).rename(columns={"claim_id": "visit_id"})
    result = extract_policy(df, PPEConfig(k=k, filter=filter))
    policy = result.to_dict()
    run.write_json("policy.json", policy)
    return {"constraints": len(policy["constraints"]), **_small(result.metrics)}


def cluster_codes(run: Run, min_anonymity_set: int, n_clusters: int | None) -> dict:
    from anonymizers.dummies import ClusterConfig, cluster_codes as cluster

    df = _patient_codes(run)
    result = cluster(df, ClusterConfig(min_anonymity_set=min_anonymity_set,
                                       n_clusters=n_clusters))
    run.write_json("clusters.json", {"clusters": result.clusters})
    return {"clusters": len(result.clusters), **_small(result.metrics)}


def _patient_codes(run: Run) -> pd.DataFrame:
    return _claims(run, ["patient_id", "code"]).drop_duplicates(ignore_index=True)


def dummies(run: Run, seed: int) -> dict:
    from anonymizers.dummies import DummyConfig, generate_dummies

    clusters = run.read_json("clusters.json")["clusters"]
    result = generate_dummies(_patient_codes(run), clusters, DummyConfig(seed=seed))
    result.released.to_parquet(run.path("released.parquet"), index=False)
    result.dummy_map.to_parquet(run.path("dummy_map.parquet"), index=False)
    return _small(result.metrics)


def _small(metrics: dict) -> dict:
    """Scalars only: XCom and the audit row carry figures, not data."""
    return {k: v for k, v in metrics.items() if isinstance(v, (int, float, str, bool))}


def validate_medco(run: Run, k: int, filter: str) -> dict:
    """GX gates on the MedCo release and the verifiers' verdicts."""
    from anonymizers.verify.dummies import verify_dummies
    from anonymizers.verify.ppe import verify_policy

    claims = _claims(run, ["patient_id", "claim_id", "code"])
    released = pd.read_parquet(run.path("released.parquet"))
    dummy_map = pd.read_parquet(run.path("dummy_map.parquet"))
    clusters = run.read_json("clusters.json")["clusters"]
    policy = run.read_json("policy.json")
    verdicts = [
        verify_policy(claims.rename(columns={"claim_id": "visit_id"}), policy).as_dict(),
        *[v.as_dict() for v in _as_list(verify_dummies(
            claims[["patient_id", "code"]].drop_duplicates(), released, dummy_map, clusters))],
    ]
    gates = validation.run_suite("released", released, validation.release_records_expectations(
        list(released.columns), "patient_id", "code", claims["code"].unique(),
        claims["patient_id"].unique(), expected_rows=len(released)))
    gates += validation.run_suite("verdicts", validation.verdict_table(verdicts),
                                  validation.verdict_expectations())
    report = {"verdicts": verdicts, "gates": [g.as_dict() for g in gates]}
    run.write_json("verdicts.json", report)
    failed = [g for g in gates if not g.ok]
    if failed:
        raise ValidationFailed("release failed validation: " + "; ".join(
            f"{g.table}: {g.expectation}({g.kwargs})" for g in failed))
    return {"gates": len(gates), "verdicts": {v["property"]: v["ok"] for v in verdicts}}


def _as_list(v):
    return v if isinstance(v, (list, tuple)) else [v]


def load_medco(run: Run, token_key: str, audit: dict) -> dict:
    """Tokenize codes, build the release table, swap it in with its audit row."""
    key = token_key.encode()
    released = pd.read_parquet(run.path("released.parquet"))
    frame = pd.DataFrame({"patient_pseudonym": released["patient_id"],
                          "code_token": load_mod.tokenize(released["code"], key)})
    built = load_mod.build(run.release, run.run_id, "medco_records", frame)
    dummy_map = pd.read_parquet(run.path("dummy_map.parquet"))
    restricted = {"dummy_map": _restricted_dummy_map(dummy_map),
                  "key_sha256": load_mod.key_fingerprint(key),
                  "policy": run.read_json("policy.json")}
    verdicts = run.read_json("verdicts.json")
    load_mod.swap(run.release, run.run_id, built, restricted,
                  {**audit, "output_rows": len(frame), "verdicts": verdicts})
    return {"table": f"release.{run.release}", "rows": len(frame)}


def _restricted_dummy_map(dummy_map: pd.DataFrame) -> pd.DataFrame:
    """Pseudonym, dummy flag, and for a dummy the pseudonym of the real patient
    it was sized after: never a source id."""
    real = dummy_map[~dummy_map["is_dummy"]].set_index("source_patient_id")["pseudonym"]
    made_from = dummy_map["source_patient_id"].map(real).where(dummy_map["is_dummy"])
    return pd.DataFrame({"pseudonym": dummy_map["pseudonym"],
                         "is_dummy": dummy_map["is_dummy"], "made_from": made_from})


def record_failure(run: Run, audit: dict, error: str) -> None:
    load_mod.record_failure({**audit, "error": error[:2000]})


def cleanup(run: Run) -> bool:
    return staging.cleanup(run.release, run.run_id)
