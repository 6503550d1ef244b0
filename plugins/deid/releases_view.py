"""The "Releases" view: every release, its last runs, the privacy and the
utility verdicts apart (``deid.utility_summary``), who triggered each run
and with which overrides (when the audit table records them), the earlier
releases each run was checked against, parameters, metrics named in words,
and report; then the release's history (``deid.history``): every release
published, when, with which scope and what it was checked against.  A FastAPI app mounted by the Airflow plugin in
plugins/releases_plugin.py; every route requires an Airflow login."""

from __future__ import annotations

import html

from fastapi import Depends, FastAPI, HTTPException
from fastapi.responses import FileResponse, HTMLResponse

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


def _details(run: dict) -> str:
    e = html.escape
    metrics = run.get("metrics") or {}
    sections = [(f"metrics: {name}", rh.named_table(v)) for name, v in metrics.items()
                if isinstance(v, dict)]
    record = [("scope used", f"<pre>{e(str(run['scope']))}</pre>")] if run.get("scope") else []
    sections = [("params", rh.named_table(run.get("params") or {},
                                          rh.param_label(run["method"]))),
                *record, *sections]
    return "".join(f"<details><summary>{e(name)}</summary>{body}</details>"
                   for name, body in sections)


def _run_row(release: str, run: dict) -> str:
    report = ""
    if run.get("report_path"):
        name = run["report_path"].rsplit("/", 1)[-1]
        report = f"<a href='reports/{html.escape(release)}/{html.escape(name)}'>report</a>"
    e = html.escape
    level, utility = _utility_text(run)
    triggered = e(rh.record_value("triggered_by", run["triggered_by"])) \
        if "triggered_by" in run else ""
    if run.get("overrides") not in (None, {}, []):
        triggered += f"<br>overrides: <code>{e(rh.value_text(run['overrides']))}</code>"
    return (f"<tr><td>{e(str(run['ended_at'])[:19])}</td><td>{e(run['run_id'])}</td>"
            f"<td>{e(run['method'])}</td><td class='{e(run['outcome'])}'>{e(run['outcome'])}</td>"
            f"<td>{e(_verdict_text(run))}</td>"
            f"<td class='checked'>{rh.checked_against(run.get('checked_against'))}</td>"
            f"<td class='{rh.UTILITY_CLASS[level]}'><b>{e(level)}</b>: {e(utility)}</td>"
            f"<td>{triggered}</td><td>{run.get('output_rows') or ''}</td>"
            f"<td>{_details(run)}</td><td>{report}</td></tr>")


def _broken_files(errors) -> str:
    """A red line per release file that was refused (it has no DAG): file,
    field and problem, so that one bad file is seen, not a missing release."""
    if not errors:
        return ""
    lines = "".join(f"<li><code>{html.escape(path.name)}</code>, field <code>{html.escape(field)}"
                    f"</code>: {html.escape(problem)}</li>" for path, field, problem in errors)
    return (f"<section class='broken'><h2>Release files refused ({len(errors)})</h2><p>These "
            f"files have no DAG until they are fixed; the other releases run.</p><ul>{lines}"
            "</ul></section>")


def _history_table(published: list[dict]) -> str:
    """What was published: the releases an adversary may hold together."""
    if not published:
        return "<p>Nothing published yet.</p>"
    e = html.escape
    rows = "".join(
        f"<tr><td>{e(str(p['published_at'])[:19])}</td><td>{e(p['run_id'])}</td>"
        f"<td><code>{e(str(p['scope']))}</code></td><td><code>{e(p['fingerprint'][:16])}"
        f"</code></td><td class='checked'>{rh.checked_against(p['checked_against'])}</td>"
        f"<td>{e(', '.join(p['parts'] or []))}</td></tr>" for p in published)
    return ("<table class='history'><tr><th>published</th><th>run</th><th>scope</th>"
            "<th>fingerprint</th><th>checked against</th><th>kept for the next runs</th>"
            "</tr>" + rows + "</table>")


def _release_section(rel) -> str:
    runs, published = recent_runs(rel.name)
    head = (f"<section><h2>{html.escape(rel.name)}</h2><p>{html.escape(rel.description)}"
            f"<br>method <b>{html.escape(rel.method)}</b>, schedule "
            f"<code>{html.escape(str(rel.schedule))}</code>, table "
            f"<code>release.{html.escape(rel.destination)}</code></p>")
    if not runs:
        return head + "<p>No run yet.</p></section>"
    return (head + "<table class='runs'><tr><th>ended</th><th>run</th><th>method</th>"
            "<th>outcome</th><th>privacy verdicts</th><th>checked against</th><th>utility</th>"
            "<th>triggered by</th><th>rows</th><th>details</th><th></th></tr>"
            + "".join(_run_row(rel.name, r) for r in runs) + "</table>"
            "<h3>Release history</h3>" + _history_table(published) + "</section>")


@app.get("/releases", response_class=HTMLResponse)
def releases_page() -> str:
    from deid.releases import load_all_with_errors

    releases, errors = load_all_with_errors()
    parts = ["<h1>De-identified releases</h1>", _broken_files(errors)]
    parts += [_release_section(rel) for rel in releases]
    return ("<!doctype html><html><head><meta charset='utf-8'><title>Releases</title><style>"
            "body{font-family:sans-serif;margin:1em}td,th{border-bottom:1px solid #ddd;"
            "padding:.3em;text-align:left;vertical-align:top}.loaded{color:#17692b}"
            ".failed,.broken{color:#b00020}" + rh.STYLE + "</style></head><body>"
            + "".join(parts) + "</body></html>")


@app.get("/reports/{release}/{name}")
def report_file(release: str, name: str):
    root = reports_root().resolve()
    path = (root / release / name).resolve()
    if path.parent.parent != root or path.suffix != ".html" or not path.is_file():
        raise HTTPException(status_code=404, detail="no such report")
    return FileResponse(path, media_type="text/html")
