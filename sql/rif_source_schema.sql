-- Source schema for CMS's CCW RIF claims layout (today's Medicare claims, and
-- CMS's Synthea RIF sample), beside the DE-SynPUF tables of source_schema.sql.
-- Written by plugins/deid/rif_loader.py: claim files are one row per claim
-- line; rif_claims holds one row per claim, rif_diagnoses one row per
-- distinct (claim, line, field, code), each code with its code system from
-- the CCW version flag (*_VRSN_CD: '0' icd10cm, '9' icd9cm).  Codes are
-- undotted and upper-case.  Columns the pipeline does not use are not kept.
CREATE SCHEMA IF NOT EXISTS source;

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
