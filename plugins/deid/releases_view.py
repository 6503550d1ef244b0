"""The "Releases" view: every release, its last runs, the privacy and the
utility verdicts apart (``deid.utility_summary``), who triggered each run
and with which overrides (when the audit table records them), the earlier
releases each run was checked against, parameters, metrics named in words,
and report; then the release's history (``deid.history``): every release
published, when, with which scope and what it was checked against.  A FastAPI app mounted by the Airflow plugin in
plugins/releases_plugin.py; every route requires an Airflow login."""

from __future__ import annotations

from fastapi import Depends, FastAPI, HTTPException
from fastapi.responses import FileResponse, HTMLResponse
from markupsafe import Markup

from deid import release_html as rh
from deid import utility_summary as us
from deid.paths import reports_root

RUNS_SHOWN = 10


def _user_dep():
    from airflow.api_fastapi.core_api.security import get_user

    return Depends(get_user)


app = FastAPI(title="De-identified releases", dependencies=[_user_dep()])


COLUMNS = ("run_id", "method", "outcome", "seed", "params", "metrics", "verdicts", "error",
           "report_path", "started_at", "ended_at", "input_rows", "output_rows")
# shown when the audit table has them
RECORD_COLUMNS = ("triggered_by", "scope", "overrides", "checked_against")


def recent_runs(release: str, limit: int = RUNS_SHOWN) -> tuple[list[dict], list[dict]]:
    """The release's last runs and its published history."""
    from deid.warehouse import connect

    with connect() as conn, conn.cursor() as cur:
        return fetch_runs(cur, release, limit), fetch_history(cur, release)


HISTORY_COLUMNS = ("run_id", "published_at", "scope", "fingerprint", "checked_against")


def fetch_history(cur, release: str, limit: int = RUNS_SHOWN) -> list[dict]:
    """The release's last published releases, newest first, with the parts
    kept of each (``deid.history``); none on a warehouse without history."""
    cur.execute("SELECT to_regclass('restricted.release_history')")
    if cur.fetchone()[0] is None:
        return []
    cur.execute(f"SELECT {', '.join('h.' + c for c in HISTORY_COLUMNS)}, "
                "(SELECT array_agg(DISTINCT p.part ORDER BY p.part) FROM restricted.release_parts p "
                "WHERE p.release_name = h.release_name AND p.run_id = h.run_id) "
                "FROM restricted.release_history h WHERE h.release_name = %s "
                "ORDER BY h.published_at DESC LIMIT %s", (release, limit))
    return [dict(zip((*HISTORY_COLUMNS, "parts"), row)) for row in cur.fetchall()]


def fetch_runs(cur, release: str, limit: int = RUNS_SHOWN) -> list[dict]:
    """The release's last runs, with the run-record columns the audit table has."""
    cur.execute("SELECT to_regclass('audit.release_runs')")
    if cur.fetchone()[0] is None:
        return []
    cur.execute("SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = 'audit' AND table_name = 'release_runs'")
    present = {r[0] for r in cur.fetchall()}
    columns = COLUMNS + tuple(c for c in RECORD_COLUMNS if c in present)
    cur.execute(f"SELECT {', '.join(columns)} FROM audit.release_runs "
                "WHERE release_name = %s ORDER BY ended_at DESC LIMIT %s", (release, limit))
    return [dict(zip(columns, row)) for row in cur.fetchall()]


def _verdict_text(run: dict) -> str:
    if run["outcome"] != "loaded":
        return f"failed: {run.get('error') or ''}"
    verdicts = (run.get("verdicts") or {}).get("verdicts", [])
    bad = [v["property"] for v in verdicts if not v["ok"]]
    return "all verdicts hold" if not bad else "failed: " + ", ".join(bad)


def _method_metrics(run: dict) -> dict:
    """The method's figures in the audit row (``steps.load`` files them under its name)."""
    found = (run.get("metrics") or {}).get(run["method"])
    return found if isinstance(found, dict) else {}


def _utility_text(run: dict) -> tuple[str, str]:
    verdict = us.utility_verdict(run["method"], _method_metrics(run), run.get("verdicts") or {})
    return verdict.level, verdict.sentence


def _details(run: dict) -> list[dict]:
    """The run's parameters, its scope and each step's metrics, named in words."""
    metrics = run.get("metrics") or {}
    record = [{"name": "scope used", "pre": str(run["scope"])}] if run.get("scope") else []
    return [{"name": "params", "rows": rh.named_rows(run.get("params") or {},
                                                     rh.param_label(run["method"]))},
            *record,
            *({"name": f"metrics: {name}", "rows": rh.named_rows(v)}
              for name, v in metrics.items() if isinstance(v, dict))]


def _row_values(release: str, run: dict) -> dict:
    """A run's row of the view, in words (``templates/releases.html`` marks it up)."""
    level, utility = _utility_text(run)
    overrides = run.get("overrides")
    return {"ended": str(run["ended_at"])[:19], "run_id": run["run_id"], "method": run["method"],
            "outcome": run["outcome"], "verdicts": _verdict_text(run),
            "checked": rh.checked_against(run.get("checked_against")),
            "utility_class": rh.UTILITY_CLASS[level], "level": level, "utility": utility,
            "triggered": (rh.record_value("triggered_by", run["triggered_by"])
                          if "triggered_by" in run else ""),
            "overrides": None if overrides in (None, {}, []) else rh.value_text(overrides),
            "rows": run.get("output_rows") or "", "details": _details(run),
            "release": release,
            "report": (run["report_path"].rsplit("/", 1)[-1]
                       if run.get("report_path") else None)}


def _view():
    return rh.macros("releases.html")


def _run_row(release: str, run: dict) -> str:
    return str(_view().run_row(_row_values(release, run)))


def _broken_files(errors) -> str:
    """A red line per release file that was refused (it has no DAG): file,
    field and problem, so that one bad file is seen, not a missing release."""
    return str(_view().broken_files([(path.name, field, problem)
                                     for path, field, problem in errors or ()]))


def _history_values(published: list[dict]) -> list[dict]:
    return [{"published": str(p["published_at"])[:19], "run_id": p["run_id"],
             "scope": str(p["scope"]), "fingerprint": p["fingerprint"][:16],
             "checked": rh.checked_against(p["checked_against"]),
             "parts": ", ".join(p["parts"] or [])} for p in published]


def _history_table(published: list[dict]) -> str:
    """What was published: the releases an adversary may hold together."""
    return str(_view().history_table(_history_values(published)))


def _release_section(rel) -> str:
    runs, published = recent_runs(rel.name)
    return str(_view().release_section(
        {"name": rel.name, "description": rel.description, "method": rel.method,
         "schedule": str(rel.schedule), "destination": rel.destination},
        [_row_values(rel.name, r) for r in runs], _history_values(published)))


@app.get("/releases", response_class=HTMLResponse)
def releases_page() -> str:
    from deid.releases import load_all_with_errors

    releases, errors = load_all_with_errors()
    return rh.render("releases.html",
                     errors=[(path.name, field, problem) for path, field, problem in errors],
                     sections=[Markup(_release_section(rel)) for rel in releases])


@app.get("/reports/{release}/{name}")
def report_file(release: str, name: str):
    root = reports_root().resolve()
    path = (root / release / name).resolve()
    if path.parent.parent != root or path.suffix != ".html" or not path.is_file():
        raise HTTPException(status_code=404, detail="no such report")
    return FileResponse(path, media_type="text/html")
