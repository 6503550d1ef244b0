"""The generator's members as the command line's input files.

``python -m anonymizers`` reads plain CSVs, not a warehouse; a user who wants
to try a command on ICD-10-CM (or ICD-9-CM) claims without data of their own
needs them in that shape.  ``write_cli_inputs`` writes, from
``anonymizers.synthetic.generate``:

- ``records.csv``: ``patient_id,code,visit_id``, one row per distinct code of a
  claim (``ppe`` with either filter, ``ugaclip``, ``disassociate``,
  ``cluster-codes``, ``dummies``, and ``gccens`` as sample and population);
- ``trajectories.csv``: ``patient_id,code,age``, one row per distinct (code,
  age) of a member, age in whole years at the claim date (``lda``; the thesis'
  trajectory has no dates, so none is written);
- ``members.csv`` (``member_id,sex,birth_date``) and ``claims.csv``
  (``member_id,claim_id,service_date,dx_code``, one row per claim with its first
  diagnosis, ISO dates) for ``hhp``.

Codes are undotted, as CMS writes them.  Dates, birth dates included, are
moved to start in ``first_year`` as the RIF layout's are
(``synthetic_rif.default_first_year``: 2016 for ICD-10-CM, which CMS claims
use from 2015-10-01; 2008 for ICD-9-CM); ages are taken before the move.  The
ids are the generator's synthetic ones; nothing here is anyone's data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from anonymizers.synthetic import CLAIM_TYPES, SyntheticConfig, generate
from anonymizers.synthetic_rif import SOURCE_YEAR, default_first_year, shift_years
from anonymizers.synthetic_views import _age

FILES = ("records.csv", "trajectories.csv", "members.csv", "claims.csv")


def write_cli_inputs(config: SyntheticConfig, directory,
                     first_year: int | None = None) -> dict[str, int]:
    """Write ``FILES`` into ``directory`` (created); returns rows per file."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    year = default_first_year(config.code_system) if first_year is None else first_year
    parts = {name: [] for name in FILES}
    for chunk in generate(config):
        for name, frame in _views(chunk, year - SOURCE_YEAR).items():
            parts[name].append(frame)
    counts = {}
    for name, frames in parts.items():
        frame = pd.concat(frames, ignore_index=True)
        frame.to_csv(out / name, index=False)
        counts[name] = len(frame)
    return counts


def _iso(dates, shift: int) -> np.ndarray:
    moved = shift_years(np.asarray(dates).astype("datetime64[D]"), shift)
    return np.datetime_as_string(moved, unit="D").astype(object)


def _views(chunk: dict[str, pd.DataFrame], shift: int) -> dict[str, pd.DataFrame]:
    bene = chunk["beneficiary_summary"].drop_duplicates("desynpuf_id")
    born = pd.Series(bene["bene_birth_dt"].to_numpy().astype("datetime64[D]"),
                     index=bene["desynpuf_id"].to_numpy())
    members = pd.DataFrame({"member_id": bene["desynpuf_id"].to_numpy(),
                            "sex": bene["bene_sex_ident_cd"].astype(int).to_numpy(),
                            "birth_date": _iso(born.to_numpy(), shift)})
    long, claims = [], []
    for kind in CLAIM_TYPES:
        c = chunk[f"{kind}_claims"]
        cols = sorted((x for x in c.columns if x.startswith("icd9_dgns_cd_")),
                      key=lambda x: int(x.rsplit("_", 1)[1]))
        claims.append(pd.DataFrame({"member_id": c["desynpuf_id"], "claim_id": c["clm_id"],
                                    "service_date": _iso(c["clm_from_dt"].to_numpy(), shift),
                                    "dx_code": c[cols[0]].fillna("")}))
        melted = c.melt(id_vars=["desynpuf_id", "clm_id", "clm_from_dt"], value_vars=cols,
                        value_name="code").dropna(subset=["code"])
        long.append(melted[melted["code"] != ""])
    codes = pd.concat(long, ignore_index=True)
    records = (codes.rename(columns={"desynpuf_id": "patient_id", "clm_id": "visit_id"})
               [["patient_id", "code", "visit_id"]].drop_duplicates())
    seen = codes["clm_from_dt"].to_numpy().astype("datetime64[D]")
    birth = born.reindex(codes["desynpuf_id"]).to_numpy().astype("datetime64[D]")
    trajectories = (pd.DataFrame({"patient_id": codes["desynpuf_id"].to_numpy(),
                                  "code": codes["code"].to_numpy(),
                                  "age": _age(birth, seen).astype(np.int64)})
                    .drop_duplicates())
    return {"records.csv": records, "trajectories.csv": trajectories,
            "members.csv": members, "claims.csv": pd.concat(claims, ignore_index=True)}
