-- Normalize the claims of a release's scope into one long table:
-- one row per (patient, claim, diagnosis code), with the service date and the
-- age at service (whole years, from the earliest beneficiary-summary row).
-- The service date is CLM_FROM_DT, or CLM_THRU_DT where CMS left it empty, or
-- for a later segment without dates, the first date of the same claim.
-- Used by the extract step as COPY (this query) TO STDOUT; the last condition
-- of the WHERE clause is the release's scope, a filter over the alias c
-- (default TRUE) checked by plugins/deid/scope.py.  Codes are kept as CMS
-- writes them (undotted); empty strings count as absent.
WITH bene AS (
    SELECT DISTINCT ON (desynpuf_id) desynpuf_id, bene_birth_dt
    FROM source.beneficiary_summary
    ORDER BY desynpuf_id, year
),
claims AS (
    SELECT 'inpatient' AS claim_type, desynpuf_id, clm_id,
           coalesce(clm_from_dt, clm_thru_dt,
                    min(clm_from_dt) OVER (PARTITION BY desynpuf_id, clm_id)) AS clm_from_dt,
           ARRAY[admtng_icd9_dgns_cd, icd9_dgns_cd_1, icd9_dgns_cd_2, icd9_dgns_cd_3, icd9_dgns_cd_4, icd9_dgns_cd_5, icd9_dgns_cd_6, icd9_dgns_cd_7, icd9_dgns_cd_8, icd9_dgns_cd_9, icd9_dgns_cd_10] AS codes
    FROM source.inpatient_claims
    UNION ALL
    SELECT 'outpatient', desynpuf_id, clm_id, coalesce(clm_from_dt, clm_thru_dt,
                    min(clm_from_dt) OVER (PARTITION BY desynpuf_id, clm_id)),
           ARRAY[admtng_icd9_dgns_cd, icd9_dgns_cd_1, icd9_dgns_cd_2, icd9_dgns_cd_3, icd9_dgns_cd_4, icd9_dgns_cd_5, icd9_dgns_cd_6, icd9_dgns_cd_7, icd9_dgns_cd_8, icd9_dgns_cd_9, icd9_dgns_cd_10]
    FROM source.outpatient_claims
    UNION ALL
    SELECT 'carrier', desynpuf_id, clm_id, coalesce(clm_from_dt, clm_thru_dt,
                    min(clm_from_dt) OVER (PARTITION BY desynpuf_id, clm_id)),
           ARRAY[icd9_dgns_cd_1, icd9_dgns_cd_2, icd9_dgns_cd_3, icd9_dgns_cd_4, icd9_dgns_cd_5, icd9_dgns_cd_6, icd9_dgns_cd_7, icd9_dgns_cd_8,
                 line_icd9_dgns_cd_1, line_icd9_dgns_cd_2, line_icd9_dgns_cd_3, line_icd9_dgns_cd_4, line_icd9_dgns_cd_5, line_icd9_dgns_cd_6, line_icd9_dgns_cd_7, line_icd9_dgns_cd_8, line_icd9_dgns_cd_9, line_icd9_dgns_cd_10, line_icd9_dgns_cd_11, line_icd9_dgns_cd_12, line_icd9_dgns_cd_13]
    FROM source.carrier_claims
)
SELECT c.desynpuf_id AS patient_id,
       c.claim_type || ':' || c.clm_id AS claim_id,
       c.clm_from_dt AS service_date,
       date_part('year', age(c.clm_from_dt, b.bene_birth_dt))::int AS age_at_service,
       d.code
FROM claims c
JOIN bene b USING (desynpuf_id)
CROSS JOIN LATERAL (SELECT DISTINCT code FROM unnest(c.codes) AS u(code)) AS d
WHERE d.code IS NOT NULL AND d.code <> '' AND ({scope})
