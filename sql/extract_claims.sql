-- Normalize the claims of a release's scope into one long table:
-- one row per (patient, claim, diagnosis code), with the service date, the
-- age at service (whole years, from the earliest beneficiary-summary row) and
-- the code's CMS version flag ('9' ICD-9-CM, '0' ICD-10-CM; NULL where the
-- layout carries none: the release file's code system).
-- Both source layouts feed it: DE-SynPUF (source_schema.sql's DE-SynPUF
-- tables, no version flags) and the CCW RIF (source.rif_*, written by
-- plugins/deid/rif_loader.py, each code with its flag); a RIF claim's id is
-- prefixed rif_<type>, and each layout's claims join its own beneficiaries.
-- The service date is CLM_FROM_DT, or CLM_THRU_DT where CMS left it empty, or
-- for a later segment without dates, the first date of the same claim.
-- Used by the extract step as COPY (this query) TO STDOUT; the last condition
-- of the WHERE clause is the release's scope, a filter over the alias c
-- (default TRUE) checked by plugins/deid/scope.py.  Codes are kept as the
-- source writes them (the extract normalises and checks them, deid.extract);
-- empty strings count as absent.
WITH bene AS (
    SELECT DISTINCT ON (desynpuf_id) desynpuf_id, bene_birth_dt
    FROM source.beneficiary_summary
    ORDER BY desynpuf_id, year
),
claims AS (
    SELECT 'inpatient' AS claim_type, desynpuf_id, clm_id,
           coalesce(clm_from_dt, clm_thru_dt,
                    min(clm_from_dt) OVER (PARTITION BY desynpuf_id, clm_id)) AS clm_from_dt,
           ARRAY[admtng_icd9_dgns_cd, icd9_dgns_cd_1, icd9_dgns_cd_2, icd9_dgns_cd_3, icd9_dgns_cd_4, icd9_dgns_cd_5, icd9_dgns_cd_6, icd9_dgns_cd_7, icd9_dgns_cd_8, icd9_dgns_cd_9, icd9_dgns_cd_10] AS codes,
           NULL::text[] AS versions
    FROM source.inpatient_claims
    UNION ALL
    SELECT 'outpatient', desynpuf_id, clm_id, coalesce(clm_from_dt, clm_thru_dt,
                    min(clm_from_dt) OVER (PARTITION BY desynpuf_id, clm_id)),
           ARRAY[admtng_icd9_dgns_cd, icd9_dgns_cd_1, icd9_dgns_cd_2, icd9_dgns_cd_3, icd9_dgns_cd_4, icd9_dgns_cd_5, icd9_dgns_cd_6, icd9_dgns_cd_7, icd9_dgns_cd_8, icd9_dgns_cd_9, icd9_dgns_cd_10], NULL
    FROM source.outpatient_claims
    UNION ALL
    SELECT 'carrier', desynpuf_id, clm_id, coalesce(clm_from_dt, clm_thru_dt,
                    min(clm_from_dt) OVER (PARTITION BY desynpuf_id, clm_id)),
           ARRAY[icd9_dgns_cd_1, icd9_dgns_cd_2, icd9_dgns_cd_3, icd9_dgns_cd_4, icd9_dgns_cd_5, icd9_dgns_cd_6, icd9_dgns_cd_7, icd9_dgns_cd_8,
                 line_icd9_dgns_cd_1, line_icd9_dgns_cd_2, line_icd9_dgns_cd_3, line_icd9_dgns_cd_4, line_icd9_dgns_cd_5, line_icd9_dgns_cd_6, line_icd9_dgns_cd_7, line_icd9_dgns_cd_8, line_icd9_dgns_cd_9, line_icd9_dgns_cd_10, line_icd9_dgns_cd_11, line_icd9_dgns_cd_12, line_icd9_dgns_cd_13], NULL
    FROM source.carrier_claims
),
rif_bene AS (
    SELECT DISTINCT ON (bene_id) bene_id, bene_birth_dt
    FROM source.rif_beneficiary
    ORDER BY bene_id, year
),
rif_claims AS (
    SELECT 'rif_' || r.claim_type AS claim_type, r.bene_id, r.clm_id,
           coalesce(r.clm_from_dt, r.clm_thru_dt) AS clm_from_dt,
           array_agg(d.code ORDER BY d.field, d.line_num) AS codes,
           array_agg(CASE d.code_system WHEN 'icd9cm' THEN '9' ELSE '0' END
                     ORDER BY d.field, d.line_num) AS versions
    FROM source.rif_claims r
    JOIN source.rif_diagnoses d USING (claim_type, clm_id)
    GROUP BY r.claim_type, r.bene_id, r.clm_id, r.clm_from_dt, r.clm_thru_dt
),
both_layouts AS (
    SELECT c.*, b.bene_birth_dt FROM claims c JOIN bene b USING (desynpuf_id)
    UNION ALL
    SELECT r.claim_type, r.bene_id, r.clm_id, r.clm_from_dt, r.codes, r.versions,
           b.bene_birth_dt
    FROM rif_claims r JOIN rif_bene b USING (bene_id)
)
SELECT c.desynpuf_id AS patient_id,
       c.claim_type || ':' || c.clm_id AS claim_id,
       c.clm_from_dt AS service_date,
       date_part('year', age(c.clm_from_dt, c.bene_birth_dt))::int AS age_at_service,
       d.code, c.versions[array_position(c.codes, d.code)] AS code_version
FROM both_layouts c
CROSS JOIN LATERAL (SELECT DISTINCT code FROM unnest(c.codes) AS u(code)) AS d
WHERE d.code IS NOT NULL AND d.code <> '' AND ({scope})
