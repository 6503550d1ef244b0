-- Source schema: the CMS DE-SynPUF layout (2008-2010 Medicare claims synthetic
-- public-use files), with the real column names (lower case) of the fields
-- the pipeline uses.  One beneficiary-summary table holds every year's file.
-- Columns the pipeline does not use are not kept: the loader ignores them.
CREATE SCHEMA IF NOT EXISTS source;

CREATE TABLE IF NOT EXISTS source.beneficiary_summary (
    year smallint NOT NULL,
    desynpuf_id text NOT NULL,
    bene_birth_dt date NOT NULL,
    bene_death_dt date,
    bene_sex_ident_cd smallint,
    bene_race_cd smallint,
    bene_esrd_ind text,
    sp_state_code text,
    bene_county_cd text,
    PRIMARY KEY (year, desynpuf_id)
);

CREATE TABLE IF NOT EXISTS source.inpatient_claims (
    desynpuf_id text NOT NULL,
    clm_id text NOT NULL,
    segment smallint,
    clm_from_dt date,
    clm_thru_dt date,
    prvdr_num text,
    clm_pmt_amt numeric(12,2),
    clm_admsn_dt date,
    admtng_icd9_dgns_cd text,
    clm_utlztn_day_cnt integer,
    nch_bene_dschrg_dt date,
    clm_drg_cd text,
    icd9_dgns_cd_1 text,
    icd9_dgns_cd_2 text,
    icd9_dgns_cd_3 text,
    icd9_dgns_cd_4 text,
    icd9_dgns_cd_5 text,
    icd9_dgns_cd_6 text,
    icd9_dgns_cd_7 text,
    icd9_dgns_cd_8 text,
    icd9_dgns_cd_9 text,
    icd9_dgns_cd_10 text,
    icd9_prcdr_cd_1 text,
    icd9_prcdr_cd_2 text,
    icd9_prcdr_cd_3 text,
    icd9_prcdr_cd_4 text,
    icd9_prcdr_cd_5 text,
    icd9_prcdr_cd_6 text,
    hcpcs_cd_1 text,
    hcpcs_cd_2 text,
    hcpcs_cd_3 text,
    hcpcs_cd_4 text,
    hcpcs_cd_5 text,
    hcpcs_cd_6 text,
    hcpcs_cd_7 text,
    hcpcs_cd_8 text,
    hcpcs_cd_9 text,
    hcpcs_cd_10 text,
    hcpcs_cd_11 text,
    hcpcs_cd_12 text,
    hcpcs_cd_13 text,
    hcpcs_cd_14 text,
    hcpcs_cd_15 text,
    hcpcs_cd_16 text,
    hcpcs_cd_17 text,
    hcpcs_cd_18 text,
    hcpcs_cd_19 text,
    hcpcs_cd_20 text,
    hcpcs_cd_21 text,
    hcpcs_cd_22 text,
    hcpcs_cd_23 text,
    hcpcs_cd_24 text,
    hcpcs_cd_25 text,
    hcpcs_cd_26 text,
    hcpcs_cd_27 text,
    hcpcs_cd_28 text,
    hcpcs_cd_29 text,
    hcpcs_cd_30 text,
    hcpcs_cd_31 text,
    hcpcs_cd_32 text,
    hcpcs_cd_33 text,
    hcpcs_cd_34 text,
    hcpcs_cd_35 text,
    hcpcs_cd_36 text,
    hcpcs_cd_37 text,
    hcpcs_cd_38 text,
    hcpcs_cd_39 text,
    hcpcs_cd_40 text,
    hcpcs_cd_41 text,
    hcpcs_cd_42 text,
    hcpcs_cd_43 text,
    hcpcs_cd_44 text,
    hcpcs_cd_45 text
);
CREATE INDEX IF NOT EXISTS inpatient_claims_bene ON source.inpatient_claims (desynpuf_id);

CREATE TABLE IF NOT EXISTS source.outpatient_claims (
    desynpuf_id text NOT NULL,
    clm_id text NOT NULL,
    segment smallint,
    clm_from_dt date,
    clm_thru_dt date,
    prvdr_num text,
    clm_pmt_amt numeric(12,2),
    admtng_icd9_dgns_cd text,
    icd9_dgns_cd_1 text,
    icd9_dgns_cd_2 text,
    icd9_dgns_cd_3 text,
    icd9_dgns_cd_4 text,
    icd9_dgns_cd_5 text,
    icd9_dgns_cd_6 text,
    icd9_dgns_cd_7 text,
    icd9_dgns_cd_8 text,
    icd9_dgns_cd_9 text,
    icd9_dgns_cd_10 text,
    icd9_prcdr_cd_1 text,
    icd9_prcdr_cd_2 text,
    icd9_prcdr_cd_3 text,
    icd9_prcdr_cd_4 text,
    icd9_prcdr_cd_5 text,
    icd9_prcdr_cd_6 text,
    hcpcs_cd_1 text,
    hcpcs_cd_2 text,
    hcpcs_cd_3 text,
    hcpcs_cd_4 text,
    hcpcs_cd_5 text,
    hcpcs_cd_6 text,
    hcpcs_cd_7 text,
    hcpcs_cd_8 text,
    hcpcs_cd_9 text,
    hcpcs_cd_10 text,
    hcpcs_cd_11 text,
    hcpcs_cd_12 text,
    hcpcs_cd_13 text,
    hcpcs_cd_14 text,
    hcpcs_cd_15 text,
    hcpcs_cd_16 text,
    hcpcs_cd_17 text,
    hcpcs_cd_18 text,
    hcpcs_cd_19 text,
    hcpcs_cd_20 text,
    hcpcs_cd_21 text,
    hcpcs_cd_22 text,
    hcpcs_cd_23 text,
    hcpcs_cd_24 text,
    hcpcs_cd_25 text,
    hcpcs_cd_26 text,
    hcpcs_cd_27 text,
    hcpcs_cd_28 text,
    hcpcs_cd_29 text,
    hcpcs_cd_30 text,
    hcpcs_cd_31 text,
    hcpcs_cd_32 text,
    hcpcs_cd_33 text,
    hcpcs_cd_34 text,
    hcpcs_cd_35 text,
    hcpcs_cd_36 text,
    hcpcs_cd_37 text,
    hcpcs_cd_38 text,
    hcpcs_cd_39 text,
    hcpcs_cd_40 text,
    hcpcs_cd_41 text,
    hcpcs_cd_42 text,
    hcpcs_cd_43 text,
    hcpcs_cd_44 text,
    hcpcs_cd_45 text
);
CREATE INDEX IF NOT EXISTS outpatient_claims_bene ON source.outpatient_claims (desynpuf_id);

CREATE TABLE IF NOT EXISTS source.carrier_claims (
    desynpuf_id text NOT NULL,
    clm_id text NOT NULL,
    clm_from_dt date,
    clm_thru_dt date,
    icd9_dgns_cd_1 text,
    icd9_dgns_cd_2 text,
    icd9_dgns_cd_3 text,
    icd9_dgns_cd_4 text,
    icd9_dgns_cd_5 text,
    icd9_dgns_cd_6 text,
    icd9_dgns_cd_7 text,
    icd9_dgns_cd_8 text,
    hcpcs_cd_1 text,
    hcpcs_cd_2 text,
    hcpcs_cd_3 text,
    hcpcs_cd_4 text,
    hcpcs_cd_5 text,
    hcpcs_cd_6 text,
    hcpcs_cd_7 text,
    hcpcs_cd_8 text,
    hcpcs_cd_9 text,
    hcpcs_cd_10 text,
    hcpcs_cd_11 text,
    hcpcs_cd_12 text,
    hcpcs_cd_13 text,
    line_icd9_dgns_cd_1 text,
    line_icd9_dgns_cd_2 text,
    line_icd9_dgns_cd_3 text,
    line_icd9_dgns_cd_4 text,
    line_icd9_dgns_cd_5 text,
    line_icd9_dgns_cd_6 text,
    line_icd9_dgns_cd_7 text,
    line_icd9_dgns_cd_8 text,
    line_icd9_dgns_cd_9 text,
    line_icd9_dgns_cd_10 text,
    line_icd9_dgns_cd_11 text,
    line_icd9_dgns_cd_12 text,
    line_icd9_dgns_cd_13 text
);
CREATE INDEX IF NOT EXISTS carrier_claims_bene ON source.carrier_claims (desynpuf_id);

-- The CCW RIF claims layout (today's Medicare claims, and
-- CMS's Synthea RIF sample), beside the DE-SynPUF tables above; both feed the extract
-- (sql/extract_claims.sql).
-- Written by plugins/deid/rif_loader.py: claim files are one row per claim
-- line; rif_claims holds one row per claim, rif_diagnoses one row per
-- distinct (claim, line, field, code), each code with its code system from
-- the CCW version flag (*_VRSN_CD: '0' icd10cm, '9' icd9cm).  Codes are
-- undotted and upper-case.  Columns the pipeline does not use are not kept.

CREATE TABLE IF NOT EXISTS source.rif_beneficiary (
    year smallint NOT NULL,
    bene_id text NOT NULL,
    bene_birth_dt date NOT NULL,
    bene_sex_ident_cd smallint,
    bene_race_cd smallint,
    state_code text,
    bene_county_cd text,
    PRIMARY KEY (year, bene_id)
);

CREATE TABLE IF NOT EXISTS source.rif_claims (
    claim_type text NOT NULL CHECK (claim_type IN
        ('carrier', 'dme', 'hha', 'hospice', 'inpatient', 'outpatient', 'snf')),
    bene_id text NOT NULL,
    clm_id text NOT NULL,
    clm_from_dt date,
    clm_thru_dt date,
    PRIMARY KEY (claim_type, clm_id)
);

CREATE TABLE IF NOT EXISTS source.rif_diagnoses (
    claim_type text NOT NULL,
    bene_id text NOT NULL,
    clm_id text NOT NULL,
    line_num text,            -- NULL for a claim-level field
    field text NOT NULL,      -- PRNCPAL_DGNS_CD, ICD_DGNS_CD1..25, LINE_ICD_DGNS_CD...
    code text NOT NULL,
    code_system text NOT NULL CHECK (code_system IN ('icd9cm', 'icd10cm'))
);

CREATE INDEX IF NOT EXISTS rif_diagnoses_claim ON source.rif_diagnoses (claim_type, clm_id);
