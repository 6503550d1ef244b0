"""The release history a run is checked against (issue 25).

An adversary who reads the ``release`` schema keeps every release and
compares them, so a release is safe only together with the ones before it.
The pipeline keeps, in the restricted schema (sql/release_schema.sql):

* ``restricted.release_history``: one row per published release (release
  name, run id, method, scope, parameters, when, a fingerprint of the
  released tables, and the earlier releases it was checked against);
* ``restricted.release_parts``: what the next run needs of it, kept after
  its release table is replaced: what the cross-release verifier
  (``anonymizers.successive.check``) reads of a release (``check/<name>``:
  the release, and which pseudonym is which patient, with every source id
  replaced by its keyed ``link``) and the method's state between runs
  (``state/<name>``, MedCo's persisted dummies).

Both are written by ``write`` inside the load's swap transaction
(``deid.load.swap_in``), so that a release is in the history exactly when
it was published; runs may add history, never change it (sql/roles.sql).

Which earlier releases a run is checked against: every published release
of the same release (release file), whatever scope each extracted.  The
brief says "the same scope"; a release file's runs all reach the same
readers, and a narrower scope of one run does not stop the adversary from
holding it beside the others, so the history is the release's, and each
row records the scope it used.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
from dataclasses import dataclass, field

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from deid.warehouse import connect

#: rows per stored chunk of a part (a bytea value stays far below its 1 GB limit)
CHUNK_ROWS = 500_000
CHECK, STATE = "check/", "state/"
JSON = ".json"  # a part holding a JSON document (one row, one column ``json``)
HISTORY_COLUMNS = ("release_name", "run_id", "method", "scope", "params", "published_at",
                   "fingerprint", "checked_against")


@dataclass(frozen=True)
class Published:
    """One published release of the history."""

    release_name: str
    run_id: str
    method: str
    scope: str | None
    params: dict
    published_at: object
    fingerprint: str
    checked_against: list = field(default_factory=list)


def fingerprint(frames: dict) -> str:
    """SHA-256 over the released tables (block names, columns and every row's
    pandas hash, in row order): equal for the same tables, whatever process
    computes it.  A table is a DataFrame or a staged table the load streams
    (``parquet_io.ParquetFrame``), hashed a chunk at a time."""
    digest = hashlib.sha256()
    for block in sorted(frames):
        frame = frames[block]
        digest.update(json.dumps([block, [str(c) for c in frame.columns]]).encode())
        chunks = [frame] if isinstance(frame, pd.DataFrame) else frame.chunks(CHUNK_ROWS)
        for chunk in chunks:
            digest.update(pd.util.hash_pandas_object(chunk, index=False).to_numpy().tobytes())
    return digest.hexdigest()


LINK_LABEL = b"deid-claims release history link v1\x1f"


def link(patient_ids: pd.Series, key: bytes) -> pd.Series:
    """A patient's link across releases: HMAC-SHA256 under the pseudonym key
    (``deid.secret.pseudonym_key``) of a label and the source id, 16 bytes in
    hex.  The same patient has the same link in every run under the same
    key, so the history can tell who persisted; the source id itself is
    never stored, and the link is as secret as the key."""
    uniq = pd.unique(patient_ids)
    table = {p: hmac.new(key, LINK_LABEL + str(p).encode(), hashlib.sha256).hexdigest()[:32]
             for p in uniq}
    return patient_ids.map(table)


def _chunks(frame: pd.DataFrame):
    """(rows, Parquet bytes) per chunk of at most ``CHUNK_ROWS`` rows; an
    empty frame is one empty chunk, so that its columns are kept."""
    for start in range(0, max(len(frame), 1), CHUNK_ROWS):
        part = frame.iloc[start:start + CHUNK_ROWS]
        buffer = io.BytesIO()
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), buffer)
        yield len(part), buffer.getvalue()


def published(release: str, before: str | None = None, cur=None) -> list[Published]:
    """The release's published releases, oldest first (without the run
    ``before``, which is the run being checked)."""
    if cur is None:
        with connect(readonly=True) as conn, conn.cursor() as c:
            return published(release, before, c)
    cur.execute(f"SELECT {', '.join(HISTORY_COLUMNS)} FROM restricted.release_history "
                "WHERE release_name = %s AND run_id IS DISTINCT FROM %s "
                "ORDER BY published_at, run_id", (release, before))
    return [Published(*row) for row in cur.fetchall()]


def read_parts(release: str, run_id: str, prefix: str = "", cur=None) -> dict[str, pd.DataFrame]:
    """The stored parts of a published release whose name starts with
    ``prefix``, by name."""
    if cur is None:
        with connect(readonly=True) as conn, conn.cursor() as c:
            return read_parts(release, run_id, prefix, c)
    cur.execute("SELECT part, data FROM restricted.release_parts WHERE release_name = %s "
                "AND run_id = %s AND starts_with(part, %s) ORDER BY part, chunk",
                (release, run_id, prefix))
    pieces: dict[str, list] = {}
    for part, data in cur.fetchall():
        pieces.setdefault(part, []).append(pq.read_table(io.BytesIO(bytes(data))))
    return {part: pa.concat_tables(tables).to_pandas() for part, tables in pieces.items()}


class StaleCheck(RuntimeError):
    """A release was published after the run was checked against the history."""


def write(cur, entry: dict, parts: dict[str, pd.DataFrame]) -> bool:
    """Add a published release and its parts, on the swap's cursor (which
    holds the release's lock).  False (nothing written) when the run is
    already in the history: a load retried after its swap committed
    publishes the same staged release again.  ``StaleCheck`` (the swap rolls
    back) when the history is no longer what validate checked against."""
    cur.execute("SELECT 1 FROM restricted.release_history WHERE release_name = %s "
                "AND run_id = %s", (entry["release_name"], entry["run_id"]))
    if cur.fetchone() is not None:
        return False
    checked = list(entry.get("checked_against") or [])
    now = [p.run_id for p in published(entry["release_name"], cur=cur)]
    if now != checked:  # under the swap's lock: nothing is published meanwhile
        raise StaleCheck(f"release {entry['release_name']}: the run was checked against "
                         f"{checked}, but the published releases are now {now}; run it again")
    row = {**entry, "params": json.dumps(entry["params"], default=str),
           "checked_against": json.dumps(checked)}
    columns = [c for c in HISTORY_COLUMNS if c != "published_at"]
    cur.execute(f"INSERT INTO restricted.release_history ({', '.join(columns)}) "
                f"VALUES ({', '.join(['%s'] * len(columns))})", [row[c] for c in columns])
    for name, frame in parts.items():
        for chunk, (rows, data) in enumerate(_chunks(frame)):
            cur.execute("INSERT INTO restricted.release_parts (release_name, run_id, part, "
                        "chunk, n_rows, data) VALUES (%s, %s, %s, %s, %s, %s)",
                        (entry["release_name"], entry["run_id"], name, chunk, rows,
                         bytes(data)))
    return True


def _stored(name: str, value) -> tuple[str, pd.DataFrame]:
    """A part's stored name and frame: a JSON document (a dict) is one row
    of one column ``json``, under its name with ``.json`` appended."""
    if isinstance(value, dict):
        return name + JSON, pd.DataFrame({"json": [json.dumps(value, default=str)]})
    return name, value


def _loaded(name: str, frame: pd.DataFrame):
    return json.loads(frame["json"].iloc[0]) if name.endswith(JSON) else frame


def last_state(release: str, before: str) -> tuple[str | None, dict[str, pd.DataFrame]]:
    """The run id of the release's last published release (None: none) and
    the method state it stored, by name (empty when it stored none)."""
    with connect(readonly=True) as conn, conn.cursor() as cur:
        earlier = published(release, before, cur)
        if not earlier:
            return None, {}
        run_id = earlier[-1].run_id
        found = read_parts(release, run_id, STATE, cur)
    return run_id, {name[len(STATE):]: frame for name, frame in found.items()}


def parts(inputs: dict, state: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The parts the load stores: the verifier's inputs of the release
    (frames, or JSON documents, stored under their name with ``.json``
    appended) and the method's new state."""
    return {**dict(_stored(f"{CHECK}{name}", v) for name, v in inputs.items()),
            **{f"{STATE}{name}": frame for name, frame in state.items()}}


def earlier_inputs(release: str, earlier: list[Published]) -> list[dict]:
    """The verifier's inputs of each earlier release, oldest first, as stored."""
    out = []
    with connect(readonly=True) as conn, conn.cursor() as cur:
        for p in earlier:
            found = read_parts(release, p.run_id, CHECK, cur)
            out.append({name[len(CHECK):].removesuffix(JSON): _loaded(name, frame)
                        for name, frame in found.items()})
    return out


def earlier_states(release: str, earlier: list[Published], prefix: str = "") -> list[dict]:
    """The method state each earlier release stored (parts ``state/<prefix>...``),
    oldest first, by name without ``state/`` (empty for a release that stored
    none): what a defence needs of every earlier run, not only the last
    (append-only publication, ``deid.append_only``)."""
    out = []
    with connect(readonly=True) as conn, conn.cursor() as cur:
        for p in earlier:
            found = read_parts(release, p.run_id, STATE + prefix, cur)
            out.append({name[len(STATE):]: frame for name, frame in found.items()})
    return out
