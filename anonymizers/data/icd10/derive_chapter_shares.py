"""Derive ``chapter_shares.csv``: ICD-10-CM chapter shares of diagnosis
occurrences in Medicare claims, for the synthetic generator (issue 27).

Source: DE-SynPUF TestB (../shared/datasets/synpuf/cms_bfd_sample_testB, 500
beneficiaries, CMS's own subset of Sample 1), every non-empty
``ICD9_DGNS_CD_n`` of its inpatient, outpatient and carrier claims -- the
fields the generator fills.  Each ICD-9-CM code is mapped to one ICD-10-CM
code through CMS's GEM (../shared/datasets/icd9/icd9toicd10cmgem.csv.gz) by
``anonymizers.codesystems.gem_forward`` (header codes the GEM does not list
go to their descendants' LCA); occurrences the GEM cannot carry are counted
in ``unmapped`` of the header comment and left out of the shares.

Why claims and not the generator's ICD-9 vocabulary: beyond its 18 common
codes the vocabulary is a uniform draw of ICD-9 leaves, so its chapters
follow the size of the tabular list, not how often Medicare claims use them.

Run from the repository root:
``python anonymizers/data/icd10/derive_chapter_shares.py``
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from anonymizers.codesystems import gem_forward, normalize  # noqa: E402
from anonymizers.hierarchy import icd10cm  # noqa: E402

DATASETS = ROOT.parent / "shared" / "datasets"
TESTB = DATASETS / "synpuf" / "cms_bfd_sample_testB"
GEM = DATASETS / "icd9" / "icd9toicd10cmgem.csv.gz"
OUT = Path(__file__).with_name("chapter_shares.csv")


def claim_codes() -> pd.Series:
    """Every non-empty ICD9_DGNS_CD_n of TestB's claims, undotted."""
    parts = []
    for path in sorted(TESTB.glob("*_Claims_*.csv.gz")):
        frame = pd.read_csv(path, dtype=str)
        cols = [c for c in frame.columns if c.startswith("ICD9_DGNS_CD_")]
        parts.append(frame[cols].stack())
    codes = pd.Series(normalize(pd.concat(parts).to_numpy()), dtype=object)
    return codes[codes != ""]


def chapter_shares() -> tuple[pd.DataFrame, dict]:
    codes = claim_codes()
    gem = pd.read_csv(GEM, dtype={"icd9cm": str, "icd10cm": str, "flags": str})
    mapping = gem_forward(gem, sources=codes.unique())
    mapped = codes.map(mapping.codes)
    tree = icd10cm()
    chapter = mapped.dropna().map(lambda c: tree.path(c)[-2])
    n = chapter.value_counts()
    table = pd.DataFrame({"chapter": n.index, "occurrences": n.to_numpy()})
    table = table.sort_values("chapter").reset_index(drop=True)
    table["share"] = (table["occurrences"] / table["occurrences"].sum()).round(6)
    return table, {"occurrences": len(codes), "unmapped": int(mapped.isna().sum())}


def main() -> None:
    table, counts = chapter_shares()
    with OUT.open("w") as out:
        out.write(f"# DE-SynPUF TestB claim diagnoses through the CMS GEM; "
                  f"{counts['occurrences']} occurrences, {counts['unmapped']} unmapped "
                  f"(left out); see SOURCES.md\n")
        table.to_csv(out, index=False)
    print(table.to_string(index=False), counts)


if __name__ == "__main__":
    main()
