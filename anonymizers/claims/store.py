"""A staged HHP release (``release.Staged``) on disk, so that the lattice
search's parts and the final step can run as separate tasks.

One ``.npz`` file, read with ``allow_pickle=False``: numeric arrays as they
are, strings as UTF-8 bytes plus offsets (exact for any string, unlike
numpy's fixed-width text arrays, which drop trailing NULs), and the small
record (seed, policy, screening report, QI names and levels) as JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from anonymizers.claims.recoding import Prepared, QIData
from anonymizers.claims.release import Staged


def save_staged(staged: Staged, path: str | Path) -> None:
    prep = staged.prep
    arrays = {"member": prep.member, "starts": prep.starts, "n_claims": prep.n_claims,
              "dsfc": prep.dsfc, "rows": prep.rows}
    _put_strings(arrays, "member_ids", prep.member_ids)
    qis = []
    for i, q in enumerate(prep.qis):
        arrays[f"q{i}_code0"] = q.code0
        for lv, (m, lab) in enumerate(zip(q.maps, q.labels)):
            arrays[f"q{i}_map{lv}"] = m
            _put_strings(arrays, f"q{i}_labels{lv}", lab)
        qis.append({"name": q.name, "scope": q.scope, "level_names": list(q.level_names)})
    meta = {"seed": staged.seed, "policy": staged.policy, "report": staged.report,
            "threshold": prep.threshold, "absent": prep.absent, "fallback": prep.fallback,
            "qis": qis}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def load_staged(path: str | Path) -> Staged:
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(z["meta"].tobytes().decode())
        qis = []
        for i, q in enumerate(meta["qis"]):
            n = len(q["level_names"])
            qis.append(QIData(q["name"], q["scope"], tuple(q["level_names"]), z[f"q{i}_code0"],
                              tuple(z[f"q{i}_map{lv}"] for lv in range(n)),
                              tuple(_get_strings(z, f"q{i}_labels{lv}") for lv in range(n))))
        prep = Prepared(member=z["member"], starts=z["starts"], n_claims=z["n_claims"],
                        dsfc=z["dsfc"], rows=z["rows"],
                        member_ids=_get_strings(z, "member_ids"), qis=tuple(qis),
                        threshold=int(meta["threshold"]), absent=meta["absent"],
                        fallback=meta["fallback"])
    return Staged(int(meta["seed"]), meta["policy"], meta["report"], prep)


def _put_strings(arrays: dict, name: str, values) -> None:
    encoded = [str(v).encode("utf-8", "surrogatepass") for v in values]
    arrays[f"{name}.offsets"] = np.cumsum([0] + [len(b) for b in encoded], dtype=np.int64)
    arrays[f"{name}.bytes"] = np.frombuffer(b"".join(encoded), dtype=np.uint8)


def _get_strings(z, name: str) -> np.ndarray:
    data = z[f"{name}.bytes"].tobytes()
    offsets = z[f"{name}.offsets"]
    out = np.empty(len(offsets) - 1, dtype=object)
    for i in range(len(out)):
        out[i] = data[offsets[i]:offsets[i + 1]].decode("utf-8", "surrogatepass")
    return out
