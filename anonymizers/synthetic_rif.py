"""The synthetic claims generator's output in CMS's CCW RIF layout.

``anonymizers.synthetic.generate`` draws members, claims and diagnoses
(heavy-tailed codes, co-occurring groups, ICD-10-CM chapters in Medicare's
proportions).  This module writes them as today's CCW Research Identifiable
Files, the layout of ../shared/datasets/rif_synthea/ (CMS's BFD Synthea
sample; its SOURCES.md describes it) and of ``deid.rif_loader``:

- pipe-delimited, a header row, LF line ends, dates ``30-May-2015``;
- files ``beneficiary_<year>`` (one per reference year) and the claim files
  ``carrier, dme, hha, hospice, inpatient, outpatient, snf``, each with the
  full column list of the CCW file (``COLUMNS``); columns the generator has
  no value for are empty;
- one row per claim line (``LINE_NUM`` / ``CLM_LINE_NUM``) with the claim's
  fields repeated on each line; diagnoses in ``PRNCPAL_DGNS_CD`` (= the
  claim's first code), ``ICD_DGNS_CD1..n`` (all its codes, 12 slots on
  carrier/DME, 25 on institutional claims), ``ADMTG_DGNS_CD`` (inpatient,
  SNF: the first code) and ``LINE_ICD_DGNS_CD`` (carrier/DME line i: the
  claim's code i, cycling), each with its ``*_VRSN_CD`` flag: ``'0'``
  ICD-10-CM, ``'9'`` ICD-9-CM.

Readings and choices (the generator's DE-SynPUF tables have three claim
types and 2008-2010 dates):

- Period: ``first_year`` (default 2016 for ICD-10-CM, after CMS's switch on
  2015-10-01; 2008 for ICD-9-CM) shifts every date, birth dates included, by
  whole years, so ages are unchanged (29 February becomes the 28th in a
  common year).
- Claim types: the generator's inpatient claims are split into inpatient,
  SNF and hospice, its outpatient claims into outpatient and HHA, its
  carrier claims into carrier and DME, with the shares ``SPLIT``.  These
  shares and the lines per claim (``LINES``: 1 + Poisson(mean - 1)) are the
  project's illustrative choices, not calibrated to CMS counts.  The split
  and the lines use their own generator per chunk (seeded from the config's
  seed), so the diagnoses are exactly the generator's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from anonymizers.errors import ParameterError
from anonymizers.synthetic import CLAIM_TYPES, HCPCS, SyntheticConfig, generate

RIF_TYPES = ("carrier", "dme", "hha", "hospice", "inpatient", "outpatient", "snf")
FLAGS = {"icd9cm": "9", "icd10cm": "0"}  # CCW *_VRSN_CD (anonymizers.codesystems)
SOURCE_YEAR = 2008  # the generator's first year
# generated type -> (RIF types, shares)
SPLIT = {"inpatient": (("inpatient", "snf", "hospice"), (0.7, 0.2, 0.1)),
         "outpatient": (("outpatient", "hha"), (0.85, 0.15)),
         "carrier": (("carrier", "dme"), (0.93, 0.07))}
LINES = {"carrier": 2.5, "dme": 1.5, "inpatient": 4.0, "snf": 5.0, "hospice": 2.0,
         "outpatient": 3.0, "hha": 2.0}
# NCH_CLM_TYPE_CD and NCH_NEAR_LINE_REC_IDENT_CD per file (CCW codes, as in rif_synthea)
CLAIM_TYPE_CD = {"carrier": ("71", "O"), "dme": ("82", "M"), "hha": ("10", "U"),
                 "hospice": ("50", "V"), "inpatient": ("60", "V"), "outpatient": ("40", "W"),
                 "snf": ("20", "V")}
REV_CNTR = np.array(["0001", "0250", "0300", "0450", "0636"], dtype=object)
MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEPT", "OCT", "NOV", "DEC")
DATE_MONTHS = np.array(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                        "Nov", "Dec"], dtype=object)


def _w(text: str) -> list[str]:
    return text.split()


def _dx(n: int, poa: bool = False, prefix: str = "ICD_DGNS", poa_name: str = "CLM_POA_IND_SW"
        ) -> list[str]:
    cols = []
    for i in range(1, n + 1):
        cols += [f"{prefix}_CD{i}", f"{prefix}_VRSN_CD{i}"] + ([f"{poa_name}{i}"] if poa else [])
    return cols


def _e_codes(poa: bool = False) -> list[str]:
    return ["FST_DGNS_E_CD", "FST_DGNS_E_VRSN_CD"] + _dx(12, poa, "ICD_DGNS_E",
                                                         "CLM_E_POA_IND_SW")


def _procedures() -> list[str]:
    return [c for i in range(1, 26) for c in (f"ICD_PRCDR_CD{i}", f"ICD_PRCDR_VRSN_CD{i}",
                                              f"PRCDR_DT{i}")]


def _monthly(pattern: str) -> list[str]:
    return [pattern.format(m) for m in MONTHS]


PRINCIPAL = ["PRNCPAL_DGNS_CD", "PRNCPAL_DGNS_VRSN_CD"]
HEAD = _w("DML_IND BENE_ID CLM_ID CLM_GRP_ID FINAL_ACTION NCH_NEAR_LINE_REC_IDENT_CD "
          "NCH_CLM_TYPE_CD CLM_FROM_DT CLM_THRU_DT NCH_WKLY_PROC_DT")
CARRIER_HEAD = _w("CARR_CLM_ENTRY_CD CLM_DISP_CD CARR_NUM CARR_CLM_PMT_DNL_CD CLM_PMT_AMT "
                  "CARR_CLM_PRMRY_PYR_PD_AMT")
CARRIER_AMOUNTS = _w("NCH_CLM_PRVDR_PMT_AMT NCH_CLM_BENE_PMT_AMT NCH_CARR_CLM_SBMTD_CHRG_AMT "
                     "NCH_CARR_CLM_ALOWD_AMT CARR_CLM_CASH_DDCTBL_APLD_AMT "
                     "CARR_CLM_HCPCS_YR_CD")
LINE_AMOUNTS = _w("HCPCS_CD HCPCS_1ST_MDFR_CD HCPCS_2ND_MDFR_CD BETOS_CD LINE_NCH_PMT_AMT "
                  "LINE_BENE_PMT_AMT LINE_PRVDR_PMT_AMT LINE_BENE_PTB_DDCTBL_AMT "
                  "LINE_BENE_PRMRY_PYR_CD LINE_BENE_PRMRY_PYR_PD_AMT LINE_COINSRNC_AMT")
LINE_TAIL = _w("LINE_SBMTD_CHRG_AMT LINE_ALOWD_CHRG_AMT LINE_PRCSG_IND_CD LINE_PMT_80_100_CD "
               "LINE_SERVICE_DEDUCTIBLE")
INST_HEAD = _w("FI_CLM_PROC_DT CLAIM_QUERY_CODE PRVDR_NUM CLM_FAC_TYPE_CD "
               "CLM_SRVC_CLSFCTN_TYPE_CD CLM_FREQ_CD FI_NUM CLM_MDCR_NON_PMT_RSN_CD CLM_PMT_AMT "
               "NCH_PRMRY_PYR_CLM_PD_AMT NCH_PRMRY_PYR_CD")
PHYSICIANS = _w("PRVDR_STATE_CD ORG_NPI_NUM AT_PHYSN_UPIN AT_PHYSN_NPI OP_PHYSN_UPIN "
                "OP_PHYSN_NPI OT_PHYSN_UPIN OT_PHYSN_NPI CLM_MCO_PD_SW PTNT_DSCHRG_STUS_CD")
PPS = _w("CLM_PPS_CPTL_FSP_AMT CLM_PPS_CPTL_OUTLIER_AMT CLM_PPS_CPTL_DSPRPRTNT_SHR_AMT "
         "CLM_PPS_CPTL_IME_AMT CLM_PPS_CPTL_EXCPTN_AMT CLM_PPS_OLD_CPTL_HLD_HRMLS_AMT")
CONTROL = _w("FI_DOC_CLM_CNTL_NUM FI_ORIG_CLM_CNTL_NUM")
REV_TAIL = _w("REV_CNTR_TOT_CHRG_AMT REV_CNTR_NCVRD_CHRG_AMT REV_CNTR_DDCTBL_COINSRNC_CD "
              "REV_CNTR_NDC_QTY REV_CNTR_NDC_QTY_QLFR_CD RNDRNG_PHYSN_UPIN RNDRNG_PHYSN_NPI")
SHORT_REV = _w("CLM_LINE_NUM REV_CNTR HCPCS_CD REV_CNTR_UNIT_CNT REV_CNTR_RATE_AMT") + REV_TAIL

COLUMNS = {
    "carrier": HEAD + CARRIER_HEAD + _w("RFR_PHYSN_UPIN RFR_PHYSN_NPI "
                                        "CARR_CLM_PRVDR_ASGNMT_IND_SW") + CARRIER_AMOUNTS
    + _w("CARR_CLM_RFRNG_PIN_NUM") + PRINCIPAL + _dx(12)
    + _w("CLM_CLNCL_TRIL_NUM CARR_CLM_CNTL_NUM CARR_CLM_BLG_NPI_NUM LINE_NUM "
         "CARR_PRFRNG_PIN_NUM PRF_PHYSN_UPIN PRF_PHYSN_NPI ORG_NPI_NUM CARR_LINE_PRVDR_TYPE_CD "
         "TAX_NUM PRVDR_STATE_CD PRVDR_ZIP PRVDR_SPCLTY PRTCPTNG_IND_CD "
         "CARR_LINE_RDCD_PMT_PHYS_ASTN_C LINE_SRVC_CNT LINE_CMS_TYPE_SRVC_CD "
         "LINE_PLACE_OF_SRVC_CD CARR_LINE_PRCNG_LCLTY_CD LINE_1ST_EXPNS_DT LINE_LAST_EXPNS_DT")
    + LINE_AMOUNTS + LINE_TAIL
    + _w("CARR_LINE_MTUS_CNT CARR_LINE_MTUS_CD LINE_ICD_DGNS_CD LINE_ICD_DGNS_VRSN_CD "
         "HPSA_SCRCTY_IND_CD CARR_LINE_RX_NUM LINE_HCT_HGB_RSLT_NUM LINE_HCT_HGB_TYPE_CD "
         "LINE_NDC_CD CARR_LINE_CLIA_LAB_NUM CARR_LINE_ANSTHSA_UNIT_CNT"),
    "dme": HEAD + CARRIER_HEAD + _w("CARR_CLM_PRVDR_ASGNMT_IND_SW") + CARRIER_AMOUNTS
    + PRINCIPAL + _dx(12)
    + _w("RFR_PHYSN_UPIN RFR_PHYSN_NPI CLM_CLNCL_TRIL_NUM CARR_CLM_CNTL_NUM LINE_NUM TAX_NUM "
         "PRVDR_SPCLTY PRTCPTNG_IND_CD LINE_SRVC_CNT LINE_CMS_TYPE_SRVC_CD "
         "LINE_PLACE_OF_SRVC_CD LINE_1ST_EXPNS_DT LINE_LAST_EXPNS_DT")
    + LINE_AMOUNTS + _w("LINE_PRMRY_ALOWD_CHRG_AMT") + LINE_TAIL
    + _w("LINE_ICD_DGNS_CD LINE_ICD_DGNS_VRSN_CD LINE_DME_PRCHS_PRICE_AMT PRVDR_NUM PRVDR_NPI "
         "DMERC_LINE_PRCNG_STATE_CD PRVDR_STATE_CD DMERC_LINE_SUPPLR_TYPE_CD HCPCS_3RD_MDFR_CD "
         "HCPCS_4TH_MDFR_CD DMERC_LINE_SCRN_SVGS_AMT DMERC_LINE_MTUS_CNT DMERC_LINE_MTUS_CD "
         "LINE_HCT_HGB_RSLT_NUM LINE_HCT_HGB_TYPE_CD LINE_NDC_CD"),
    "inpatient": HEAD + INST_HEAD + _w("FI_CLM_ACTN_CD") + PHYSICIANS
    + _w("CLM_PPS_IND_CD CLM_TOT_CHRG_AMT CLM_ADMSN_DT CLM_IP_ADMSN_TYPE_CD "
         "CLM_SRC_IP_ADMSN_CD NCH_PTNT_STATUS_IND_CD CLM_PASS_THRU_PER_DIEM_AMT "
         "NCH_BENE_IP_DDCTBL_AMT NCH_BENE_PTA_COINSRNC_LBLTY_AM NCH_BENE_BLOOD_DDCTBL_LBLTY_AM "
         "NCH_PROFNL_CMPNT_CHRG_AMT NCH_IP_NCVRD_CHRG_AMT NCH_IP_TOT_DDCTN_AMT "
         "CLM_TOT_PPS_CPTL_AMT") + PPS
    + _w("CLM_PPS_CPTL_DRG_WT_NUM CLM_UTLZTN_DAY_CNT BENE_TOT_COINSRNC_DAYS_CNT "
         "BENE_LRD_USED_CNT CLM_NON_UTLZTN_DAYS_CNT NCH_BLOOD_PNTS_FRNSHD_QTY "
         "NCH_VRFD_NCVRD_STAY_FROM_DT NCH_VRFD_NCVRD_STAY_THRU_DT "
         "NCH_ACTV_OR_CVRD_LVL_CARE_THRU NCH_BENE_MDCR_BNFTS_EXHTD_DT_I NCH_BENE_DSCHRG_DT "
         "CLM_DRG_CD CLM_DRG_OUTLIER_STAY_CD NCH_DRG_OUTLIER_APRVD_PMT_AMT "
         "ADMTG_DGNS_CD ADMTG_DGNS_VRSN_CD") + PRINCIPAL + _dx(25, poa=True)
    + _e_codes(poa=True) + _procedures()
    + _w("IME_OP_CLM_VAL_AMT DSH_OP_CLM_VAL_AMT CLM_UNCOMPD_CARE_PMT_AMT") + CONTROL + SHORT_REV,
    "outpatient": HEAD + INST_HEAD + PHYSICIANS
    + _w("CLM_TOT_CHRG_AMT NCH_BENE_BLOOD_DDCTBL_LBLTY_AM NCH_PROFNL_CMPNT_CHRG_AMT")
    + PRINCIPAL + _dx(25) + _e_codes() + _procedures() + _dx(3, prefix="RSN_VISIT")
    + _w("NCH_BENE_PTB_DDCTBL_AMT NCH_BENE_PTB_COINSRNC_AMT CLM_OP_PRVDR_PMT_AMT "
         "CLM_OP_BENE_PMT_AMT") + CONTROL
    + _w("CLM_LINE_NUM REV_CNTR REV_CNTR_DT REV_CNTR_1ST_ANSI_CD REV_CNTR_2ND_ANSI_CD "
         "REV_CNTR_3RD_ANSI_CD REV_CNTR_4TH_ANSI_CD REV_CNTR_APC_HIPPS_CD HCPCS_CD "
         "HCPCS_1ST_MDFR_CD HCPCS_2ND_MDFR_CD REV_CNTR_PMT_MTHD_IND_CD REV_CNTR_DSCNT_IND_CD "
         "REV_CNTR_PACKG_IND_CD REV_CNTR_OTAF_PMT_CD REV_CNTR_IDE_NDC_UPC_NUM REV_CNTR_UNIT_CNT "
         "REV_CNTR_RATE_AMT REV_CNTR_BLOOD_DDCTBL_AMT REV_CNTR_CASH_DDCTBL_AMT "
         "REV_CNTR_COINSRNC_WGE_ADJSTD_C REV_CNTR_RDCD_COINSRNC_AMT REV_CNTR_1ST_MSP_PD_AMT "
         "REV_CNTR_2ND_MSP_PD_AMT REV_CNTR_PRVDR_PMT_AMT REV_CNTR_BENE_PMT_AMT "
         "REV_CNTR_PTNT_RSPNSBLTY_PMT REV_CNTR_PMT_AMT_AMT REV_CNTR_TOT_CHRG_AMT "
         "REV_CNTR_NCVRD_CHRG_AMT REV_CNTR_STUS_IND_CD REV_CNTR_NDC_QTY "
         "REV_CNTR_NDC_QTY_QLFR_CD RNDRNG_PHYSN_UPIN RNDRNG_PHYSN_NPI"),
    "snf": HEAD + INST_HEAD + _w("FI_CLM_ACTN_CD") + PHYSICIANS
    + _w("CLM_PPS_IND_CD CLM_TOT_CHRG_AMT CLM_ADMSN_DT CLM_IP_ADMSN_TYPE_CD "
         "CLM_SRC_IP_ADMSN_CD NCH_PTNT_STATUS_IND_CD NCH_BENE_IP_DDCTBL_AMT "
         "NCH_BENE_PTA_COINSRNC_LBLTY_AM NCH_BENE_BLOOD_DDCTBL_LBLTY_AM NCH_IP_NCVRD_CHRG_AMT "
         "NCH_IP_TOT_DDCTN_AMT") + PPS
    + _w("CLM_UTLZTN_DAY_CNT BENE_TOT_COINSRNC_DAYS_CNT CLM_NON_UTLZTN_DAYS_CNT "
         "NCH_BLOOD_PNTS_FRNSHD_QTY NCH_QLFYD_STAY_FROM_DT NCH_QLFYD_STAY_THRU_DT "
         "NCH_VRFD_NCVRD_STAY_FROM_DT NCH_VRFD_NCVRD_STAY_THRU_DT "
         "NCH_ACTV_OR_CVRD_LVL_CARE_THRU NCH_BENE_MDCR_BNFTS_EXHTD_DT_I NCH_BENE_DSCHRG_DT "
         "CLM_DRG_CD ADMTG_DGNS_CD ADMTG_DGNS_VRSN_CD") + PRINCIPAL + _dx(25)
    + _e_codes() + _procedures() + CONTROL + SHORT_REV,
    "hha": HEAD + _w("FI_CLM_PROC_DT PRVDR_NUM CLM_FAC_TYPE_CD CLM_SRVC_CLSFCTN_TYPE_CD "
                     "CLM_FREQ_CD FI_NUM CLM_MDCR_NON_PMT_RSN_CD CLM_PMT_AMT "
                     "NCH_PRMRY_PYR_CLM_PD_AMT NCH_PRMRY_PYR_CD PRVDR_STATE_CD ORG_NPI_NUM "
                     "AT_PHYSN_UPIN AT_PHYSN_NPI PTNT_DSCHRG_STUS_CD CLM_PPS_IND_CD "
                     "CLM_TOT_CHRG_AMT") + PRINCIPAL + _dx(25) + _e_codes()
    + _w("CLM_HHA_LUPA_IND_CD CLM_HHA_RFRL_CD CLM_HHA_TOT_VISIT_CNT CLM_ADMSN_DT") + CONTROL
    + _w("CLAIM_QUERY_CODE CLM_LINE_NUM REV_CNTR REV_CNTR_DT REV_CNTR_1ST_ANSI_CD "
         "REV_CNTR_APC_HIPPS_CD HCPCS_CD HCPCS_1ST_MDFR_CD HCPCS_2ND_MDFR_CD "
         "REV_CNTR_PMT_MTHD_IND_CD REV_CNTR_UNIT_CNT REV_CNTR_RATE_AMT REV_CNTR_PMT_AMT_AMT "
         "REV_CNTR_TOT_CHRG_AMT REV_CNTR_NCVRD_CHRG_AMT REV_CNTR_DDCTBL_COINSRNC_CD "
         "REV_CNTR_STUS_IND_CD REV_CNTR_NDC_QTY REV_CNTR_NDC_QTY_QLFR_CD RNDRNG_PHYSN_UPIN "
         "RNDRNG_PHYSN_NPI"),
    "hospice": HEAD + _w("FI_CLM_PROC_DT PRVDR_NUM CLM_FAC_TYPE_CD CLM_SRVC_CLSFCTN_TYPE_CD "
                         "CLM_FREQ_CD FI_NUM CLM_MDCR_NON_PMT_RSN_CD CLM_PMT_AMT "
                         "NCH_PRMRY_PYR_CLM_PD_AMT NCH_PRMRY_PYR_CD PRVDR_STATE_CD ORG_NPI_NUM "
                         "AT_PHYSN_UPIN AT_PHYSN_NPI PTNT_DSCHRG_STUS_CD CLM_TOT_CHRG_AMT "
                         "NCH_PTNT_STATUS_IND_CD CLM_UTLZTN_DAY_CNT NCH_BENE_DSCHRG_DT")
    + PRINCIPAL + _dx(25) + _e_codes()
    + _w("CLM_HOSPC_START_DT_ID BENE_HOSPC_PRD_CNT") + CONTROL
    + _w("CLAIM_QUERY_CODE CLM_LINE_NUM REV_CNTR REV_CNTR_DT HCPCS_CD HCPCS_1ST_MDFR_CD "
         "HCPCS_2ND_MDFR_CD REV_CNTR_UNIT_CNT REV_CNTR_RATE_AMT REV_CNTR_PRVDR_PMT_AMT "
         "REV_CNTR_BENE_PMT_AMT REV_CNTR_PMT_AMT_AMT") + REV_TAIL,
    "beneficiary": _w("DML_IND BENE_ID STATE_CODE BENE_COUNTY_CD BENE_ZIP_CD BENE_BIRTH_DT "
                      "BENE_SEX_IDENT_CD BENE_RACE_CD BENE_ENTLMT_RSN_ORIG BENE_ENTLMT_RSN_CURR "
                      "BENE_ESRD_IND BENE_MDCR_STATUS_CD BENE_PTA_TRMNTN_CD BENE_PTB_TRMNTN_CD "
                      "BENE_CRNT_HIC_NUM BENE_SRNM_NAME BENE_GVN_NAME BENE_MDL_NAME MBI_NUM "
                      "DEATH_DT RFRNC_YR A_MO_CNT B_MO_CNT BUYIN_MO_CNT HMO_MO_CNT RDS_MO_CNT "
                      "ENRL_SRC SAMPLE_GROUP EFIVEPCT CRNT_BIC AGE COVSTART DUAL_MO_CNT")
    + _monthly("FIPS_STATE_CNTY_{}_CD") + _w("V_DOD_SW RTI_RACE_CD")
    + _monthly("MDCR_STUS_{}_CD") + _w("PLAN_CVRG_MO_CNT")
    + [f"MDCR_ENTLMT_BUYIN_{i}_IND" for i in range(1, 13)] + [f"HMO_{i}_IND" for i in range(1, 13)]
    + _monthly("PTC_CNTRCT_{}_ID") + _monthly("PTC_PBP_{}_ID") + _monthly("PTC_PLAN_TYPE_{}_CD")
    + _monthly("PTD_CNTRCT_{}_ID") + _monthly("PTD_PBP_{}_ID") + _monthly("PTD_SGMT_{}_ID")
    + _monthly("RDS_{}_IND") + _monthly("META_DUAL_ELGBL_STUS_{}_CD")
    + _monthly("CST_SHR_GRP_{}_CD")
    + [f"DRVD_LINE_{i}_ADR" for i in range(1, 7)]
    + _w("CITY_NAME STATE_CD STATE_CNTY_ZIP_CD EFCTV_BGN_DT EFCTV_END_DT BENE_LINK_KEY "
         "PTA_CVRG_STRT_DT PTA_CVRG_END_DT PTB_CVRG_STRT_DT PTB_CVRG_END_DT PTD_CVRG_STRT_DT "
         "PTD_CVRG_END_DT"),
}
DX_SLOTS = {t: 12 if t in ("carrier", "dme") else 25 for t in RIF_TYPES}


def shift_years(dates: np.ndarray, years: int) -> np.ndarray:
    """``dates`` (datetime64[D]) moved by whole ``years``; 29 February goes to
    the 28th when the target year is common."""
    month = dates.astype("datetime64[M]")
    day = (dates - month.astype("datetime64[D]")).astype(np.int64)
    target = month + 12 * years
    length = ((target + 1).astype("datetime64[D]") - target.astype("datetime64[D]")
              ).astype(np.int64)
    return target.astype("datetime64[D]") + np.minimum(day, length - 1).astype("timedelta64[D]")


def rif_date(dates: np.ndarray) -> np.ndarray:
    """datetime64[D] -> ``30-May-2015`` text (locale-free); NaT -> ''."""
    dates = np.asarray(dates, dtype="datetime64[D]")
    ok = ~np.isnat(dates)
    out = np.full(len(dates), "", dtype=object)
    if ok.any():
        d = dates[ok]
        year = d.astype("datetime64[Y]").astype(np.int64) + 1970
        month = d.astype("datetime64[M]").astype(np.int64) % 12
        day = (d - d.astype("datetime64[M]").astype("datetime64[D]")).astype(np.int64) + 1
        out[ok] = [f"{a:02d}-{b}-{c}" for a, b, c in zip(day, DATE_MONTHS[month], year)]
    return out


def default_first_year(code_system: str) -> int:
    """2016 for ICD-10-CM (CMS claims use it from 2015-10-01), 2008 for ICD-9-CM."""
    return 2016 if code_system == "icd10cm" else SOURCE_YEAR


def rif_chunks(config: SyntheticConfig, first_year: int | None = None, split: bool = True,
               ) -> Iterator[dict[str, pd.DataFrame]]:
    """The generated population, chunk by chunk, as CCW RIF frames of text
    named after their files: ``beneficiary_<year>`` and the claim files
    (``RIF_TYPES`` with ``split``, else only carrier, inpatient, outpatient).
    Module docstring: what is filled and how."""
    for pieces in _pieces(config, first_year, split):
        out: dict[str, list] = {}
        for name, frame in pieces:
            out.setdefault(name, []).append(frame)
        yield {name: pd.concat(frames, ignore_index=True) for name, frames in out.items()}


SLICE = 20_000  # claims per frame built: bounds memory, whatever chunk_members is


def _pieces(config: SyntheticConfig, first_year: int | None, split: bool):
    """Per generated chunk, an iterator of (file name, frame) pieces, every
    file of the layout at least once (claim files in ``SLICE``-claim pieces)."""
    first_year = default_first_year(config.code_system) if first_year is None else first_year
    if not 1900 < first_year < 2100:
        raise ParameterError("first_year", f"must be a year of 1901-2099, got {first_year}")
    shift = first_year - SOURCE_YEAR
    flag = FLAGS[config.code_system]
    for c, chunk in enumerate(generate(config)):
        yield _chunk_pieces(chunk, np.random.default_rng([config.seed, 0x52494627, c]),
                            shift, flag, split)


def _chunk_pieces(chunk, rng, shift: int, flag: str, split: bool):
    yield from _beneficiaries(chunk["beneficiary_summary"], shift).items()
    for kind in CLAIM_TYPES:
        claims = chunk[f"{kind}_claims"]
        types, shares = SPLIT[kind] if split else ((kind,), (1.0,))
        which = rng.choice(len(types), size=len(claims), p=shares)
        for i, rif_type in enumerate(types):
            part = claims[which == i]
            for lo in range(0, max(len(part), 1), SLICE):
                yield rif_type, _claims(rif_type, part.iloc[lo:lo + SLICE], shift, flag, rng)


def _beneficiaries(bene: pd.DataFrame, shift: int) -> dict[str, pd.DataFrame]:
    born = rif_date(shift_years(bene["bene_birth_dt"].to_numpy().astype("datetime64[D]"),
                                shift))
    years = bene["year"].to_numpy() + shift
    frame = pd.DataFrame({
        "DML_IND": "INSERT", "BENE_ID": bene["desynpuf_id"].to_numpy(),
        "STATE_CODE": bene["sp_state_code"].astype(str).to_numpy(), "BENE_BIRTH_DT": born,
        "BENE_SEX_IDENT_CD": bene["bene_sex_ident_cd"].astype(str).to_numpy(),
        "BENE_RACE_CD": bene["bene_race_cd"].astype(str).to_numpy(),
        "RFRNC_YR": years.astype(str)})
    return {f"beneficiary_{y}": _layout(frame[years == y], "beneficiary")
            for y in sorted(set(years.tolist()))}


def _layout(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    return frame.reset_index(drop=True).reindex(columns=COLUMNS[kind], fill_value="")


def _claims(rif_type: str, claims: pd.DataFrame, shift: int, flag: str, rng) -> pd.DataFrame:
    """One row per line of each claim, in the file's columns."""
    m = len(claims)
    cols = sorted((x for x in claims.columns if x.startswith("icd9_dgns_cd_")),
                  key=lambda x: int(x.rsplit("_", 1)[1]))
    dx = claims[cols].fillna("").astype(str).to_numpy(dtype=object) if m else \
        np.zeros((0, len(cols)), dtype=object)
    n_dx = np.maximum((dx != "").sum(axis=1), 1)
    start = shift_years(claims["clm_from_dt"].to_numpy().astype("datetime64[D]"), shift)
    end = shift_years(claims["clm_thru_dt"].to_numpy().astype("datetime64[D]"), shift)
    lines = 1 + rng.poisson(LINES[rif_type] - 1, size=m)
    row = np.repeat(np.arange(m), lines)
    line = np.arange(len(row)) - np.repeat(np.cumsum(lines) - lines, lines) + 1
    type_cd, near_line = CLAIM_TYPE_CD[rif_type]
    f = {"DML_IND": "INSERT", "BENE_ID": claims["desynpuf_id"].to_numpy()[row],
         "CLM_ID": claims["clm_id"].to_numpy()[row], "FINAL_ACTION": "F",
         "NCH_NEAR_LINE_REC_IDENT_CD": near_line, "NCH_CLM_TYPE_CD": type_cd,
         "CLM_FROM_DT": rif_date(start)[row], "CLM_THRU_DT": rif_date(end)[row]}
    f["CLM_GRP_ID"] = f["CLM_ID"]
    _diagnosis_fields(f, rif_type, dx[row], flag)
    hcpcs = rng.choice(HCPCS, size=len(row))
    hcpcs[line == 1] = claims["hcpcs_cd_1"].to_numpy()
    f["HCPCS_CD"] = hcpcs
    if rif_type in ("carrier", "dme"):
        pick = dx[row, (line - 1) % n_dx[row]]
        f.update(LINE_NUM=line.astype(str), LINE_ICD_DGNS_CD=pick,
                 LINE_ICD_DGNS_VRSN_CD=np.where(pick != "", flag, ""),
                 LINE_1ST_EXPNS_DT=f["CLM_FROM_DT"], LINE_LAST_EXPNS_DT=f["CLM_THRU_DT"])
    else:
        f.update(CLM_LINE_NUM=line.astype(str), REV_CNTR=rng.choice(REV_CNTR, size=len(row)))
        _institutional_fields(f, rif_type, start[row], end[row])
    return _layout(pd.DataFrame(f, index=pd.RangeIndex(len(row))), rif_type)


def _diagnosis_fields(f: dict, rif_type: str, dx: np.ndarray, flag: str) -> None:
    def put(col, flag_col, codes):
        f[col], f[flag_col] = codes, np.where(codes != "", flag, "")

    first = dx[:, 0] if dx.shape[1] else np.full(len(dx), "", dtype=object)
    put("PRNCPAL_DGNS_CD", "PRNCPAL_DGNS_VRSN_CD", first)
    if rif_type in ("inpatient", "snf"):
        put("ADMTG_DGNS_CD", "ADMTG_DGNS_VRSN_CD", first)
    for j in range(min(dx.shape[1], DX_SLOTS[rif_type])):
        put(f"ICD_DGNS_CD{j + 1}", f"ICD_DGNS_VRSN_CD{j + 1}", dx[:, j])
        if rif_type == "inpatient":
            f[f"CLM_POA_IND_SW{j + 1}"] = np.where(dx[:, j] != "", "Y", "")


def _institutional_fields(f: dict, rif_type: str, start: np.ndarray, end: np.ndarray) -> None:
    if rif_type in ("inpatient", "snf", "hha"):
        f["CLM_ADMSN_DT"] = f["CLM_FROM_DT"]
    if rif_type in ("inpatient", "snf", "hospice"):
        f["NCH_BENE_DSCHRG_DT"] = f["CLM_THRU_DT"]
        f["CLM_UTLZTN_DAY_CNT"] = (end - start).astype(np.int64).astype(str)
    if rif_type in ("outpatient", "hha", "hospice"):
        f["REV_CNTR_DT"] = f["CLM_FROM_DT"]


def write_rif(config: SyntheticConfig, directory, first_year: int | None = None,
              split: bool = True) -> dict[str, int]:
    """Write the generated population as CCW RIF files ``<name>.csv`` in
    ``directory`` (created; files of the same names are replaced), chunk by
    chunk; returns the records per file: claims (distinct ``CLM_ID``) for a
    claim file, beneficiaries for a beneficiary file.  The bytes depend only
    on (config, first_year, split)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    records: dict[str, int] = {}
    for pieces in _pieces(config, first_year, split):
        for name, frame in pieces:
            frame.to_csv(directory / f"{name}.csv", sep="|", index=False,
                         mode="a" if name in records else "w", header=name not in records,
                         lineterminator="\n")
            n = frame["CLM_ID"].nunique() if "CLM_ID" in frame else len(frame)
            records[name] = records.get(name, 0) + n
    return records
