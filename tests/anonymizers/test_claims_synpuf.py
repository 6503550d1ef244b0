"""The HHP method end to end on the DE-SynPUF TestB subset (500 beneficiaries;
``../shared/datasets/synpuf/cms_bfd_sample_testB``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from anonymizers.claims import HHPConfig, hhp_release
from anonymizers.verify.claims import verify_hhp

FILES = {"inpatient": "DE1_0_2008_to_2010_Inpatient_Claims_Sample_TestB.csv.gz",
         "outpatient": "DE1_0_2008_to_2010_Outpatient_Claims_Sample_TestB.csv.gz",
         "carrier": "DE1_0_2008_to_2010_Carrier_Claims_Sample_TestBA.csv.gz"}


def synpuf_claims(folder) -> pd.DataFrame:
    """ICD9_DGNS_CD_1 is the primary dx, the other ICD9_DGNS_CD_* columns go to
    other_dx_codes (screening), HCPCS_CD_1 is the procedure, CLM_FROM_DT the
    date; LOS is CLM_UTLZTN_DAY_CNT for inpatient claims; age and sex come from
    the 2008 beneficiary summary.  Claims without a from-date (71 outpatient
    rows) are left out: the method needs a date."""
    bene = pd.read_csv(folder / "DE1_0_2008_Beneficiary_Summary_File_Sample_TestB.csv.gz",
                       dtype=str, keep_default_na=False).set_index("DESYNPUF_ID")
    parts = []
    for kind, name in FILES.items():
        c = pd.read_csv(folder / name, dtype=str, keep_default_na=False)
        c = c[c["CLM_FROM_DT"] != ""]
        dx = [f"ICD9_DGNS_CD_{i}" for i in range(2, 11) if f"ICD9_DGNS_CD_{i}" in c.columns]
        other = c[dx[0]]
        for col in dx[1:]:
            other = other + ";" + c[col]
        parts.append(pd.DataFrame({
            "member_id": c["DESYNPUF_ID"], "claim_id": c["CLM_ID"],
            "service_date": c["CLM_FROM_DT"], "dx_code": c["ICD9_DGNS_CD_1"],
            "other_dx_codes": other, "procedure_code": c["HCPCS_CD_1"],
            "length_of_stay": c["CLM_UTLZTN_DAY_CNT"] if kind == "inpatient" else "0"}))
    out = pd.concat(parts, ignore_index=True)
    birth = pd.to_datetime(bene["BENE_BIRTH_DT"], format="%Y%m%d").reindex(out["member_id"])
    service = pd.to_datetime(out["service_date"], format="%Y%m%d")
    out["age_at_service"] = ((service.to_numpy() - birth.to_numpy())
                             // np.timedelta64(1, "D")) * 4 // 1461
    out["birth_date"] = birth.to_numpy()
    out["sex"] = bene["BENE_SEX_IDENT_CD"].reindex(out["member_id"]).to_numpy()
    return out


@pytest.mark.datasets
def test_synpuf_testb_release_verifies(datasets_dir):
    claims = synpuf_claims(datasets_dir / "synpuf" / "cms_bfd_sample_testB")
    assert len(claims) == 264 + 3454 - 71 + 21187
    res = hhp_release(claims, HHPConfig(seed=2012, sample_size=1_000, ci_halfwidth=0.02,
                                        max_evaluations=20))
    m = res.metrics
    assert set(m["qis_absent"]) == {"place_of_service", "specialty"}
    assert any("place_of_service" in x for x in m["screening_not_applied"])
    assert 0 < m["members_removed_by_screening"] < m["input"]["members"]
    assert m["risk"] <= 0.05 and m["released"]["members"] > 0
    verdict = verify_hhp(res, claims)
    assert verdict.ok, verdict.violations
