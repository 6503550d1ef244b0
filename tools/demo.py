"""``make demo``: embedded warehouse, demo claims, the MedCo DAG end to end, summary.

Runs the DAG in-process with ``dag.test()`` against the project-local SQLite
metadata database and the embedded warehouse (or the configured one).
"""

from __future__ import annotations

import json
import os
import secrets
import sys

from deid.paths import var_dir

DEMO_MEMBERS = 3000
DEMO_SEED = 2008
# the release the demo runs, by the code system of its claims: a release
# reads one code system, and the ICD-9 release refuses ICD-10 claims
RELEASE_FILES = {"icd9cm": "medco_codes.yaml", "icd10cm": "medco_codes_icd10.yaml"}


def token_key() -> str:
    """The demo's token key: generated once, owner-only, in var/token_key."""
    path = var_dir() / "token_key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_hex(32))
        path.chmod(0o600)
    return path.read_text().strip()


def ensure_demo_data(code_system: str = "icd9cm") -> dict:
    """Load the demo claims in ``code_system`` into empty source tables.
    Source claims that are all of the other code system are replaced by the
    demo's (the demo runs on the project-local warehouse); claims whose
    system cannot be told (``demo_data.source_code_system``) are kept."""
    from deid import warehouse
    from tools import demo_data

    warehouse.ensure_schemas()
    counts = demo_data.source_counts()
    held = demo_data.source_code_system() if counts["beneficiary_summary"] else None
    if held is None and counts["beneficiary_summary"]:
        print("source claims' code system undetermined: running on them as they are")
    elif counts["beneficiary_summary"] == 0 or held != code_system:
        counts = demo_data.load_synthetic(DEMO_MEMBERS, DEMO_SEED, replace=True,
                                          code_system=code_system)
    return counts


def demo_release(code_system: str):
    """The release (``deid.releases.Release``) the demo runs on claims in ``code_system``."""
    from deid.paths import ROOT
    from deid.releases import load_release

    return load_release(ROOT / "releases" / RELEASE_FILES[code_system])


def run_dag(dag_id: str = "deid_medco_codes", conf: dict | None = None):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=os.environ.get("AIRFLOW__CORE__DAGS_FOLDER"))
    if bag.import_errors:
        raise SystemExit(f"DAG import errors: {bag.import_errors}")
    return bag.get_dag(dag_id).test(run_conf=conf or {})


def summary(release: str = "medco_codes") -> dict:
    from deid.warehouse import connect

    with connect() as conn, conn.cursor() as cur:
        cur.execute(f"SELECT count(*), count(DISTINCT patient_pseudonym), "
                    f"count(DISTINCT code_token) FROM release.{release}")
        rows, patients, tokens = cur.fetchone()
        cur.execute("SELECT run_id, outcome, seed, input_rows, output_rows, metrics, verdicts, "
                    "report_path FROM audit.release_runs WHERE release_name = %s "
                    "ORDER BY ended_at DESC LIMIT 1", (release,))
        run_id, outcome, seed, n_in, n_out, metrics, verdicts, report = cur.fetchone()
    medco = metrics.get("medco", {})
    return {"release_table": f"release.{release}", "rows": rows,
            "released_patients": patients, "distinct_code_tokens": tokens,
            "last_run": run_id, "outcome": outcome, "seed": seed,
            "extracted_claim_code_rows": n_in,
            "screening": metrics.get("screen"), "privacy_constraints_before":
                metrics.get("ppe", {}).get("constraints"),
            **{k: v for k, v in medco.items() if "ratio" in k or "dumm" in k},
            "verdicts": {v["property"]: v["ok"] for v in verdicts["verdicts"]},
            "report": report}


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tools.demo", description=__doc__)
    parser.add_argument("--code-system", choices=["icd9cm", "icd10cm"], default="icd9cm",
                        help="diagnosis code system of the demo claims (default icd9cm)")
    args = parser.parse_args(argv)
    os.environ.setdefault("AIRFLOW_VAR_DEID_TOKEN_KEY", token_key())
    counts = ensure_demo_data(args.code_system)
    print(f"source tables ({args.code_system}): {counts}")
    release = demo_release(args.code_system)
    dagrun = run_dag(release.dag_id)
    state = str(getattr(dagrun, "state", dagrun))
    print(f"DAG run finished: {state}")
    if "success" not in state:
        return 1
    print(json.dumps(summary(release.name), indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
