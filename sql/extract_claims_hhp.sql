-- One row per claim, with what the Heritage Health Prize method needs
-- (anonymizers.claims): the primary diagnosis, the other diagnoses (for
-- screening), the first procedure code, sex and age at service, length of
-- stay (inpatient), and the member's birth date (screening's newborn rule).
-- DE-SynPUF has no place of service or specialty: those quasi-identifiers
-- are absent and the method says so.  The scope as in extract_claims.sql.
WITH bene AS (
    SELECT DISTINCT ON (desynpuf_id) desynpuf_id, bene_birth_dt, bene_sex_ident_cd
    FROM source.beneficiary_summary
    ORDER BY desynpuf_id, year
),
claims AS (
    SELECT desynpuf_id, 'inpatient:' || clm_id AS clm_id,
           coalesce(clm_from_dt, clm_thru_dt) AS clm_from_dt, icd9_dgns_cd_1 AS dx,
           concat_ws(';', icd9_dgns_cd_2, icd9_dgns_cd_3, icd9_dgns_cd_4, icd9_dgns_cd_5, icd9_dgns_cd_6, icd9_dgns_cd_7, icd9_dgns_cd_8, icd9_dgns_cd_9, icd9_dgns_cd_10) AS other_dx,
           hcpcs_cd_1 AS procedure_code,
           coalesce(clm_utlztn_day_cnt, nch_bene_dschrg_dt - clm_admsn_dt, 0) AS los
    FROM source.inpatient_claims
    UNION ALL
    SELECT desynpuf_id, 'outpatient:' || clm_id, coalesce(clm_from_dt, clm_thru_dt),
           icd9_dgns_cd_1, concat_ws(';', icd9_dgns_cd_2, icd9_dgns_cd_3, icd9_dgns_cd_4, icd9_dgns_cd_5, icd9_dgns_cd_6, icd9_dgns_cd_7, icd9_dgns_cd_8, icd9_dgns_cd_9, icd9_dgns_cd_10), hcpcs_cd_1, 0
    FROM source.outpatient_claims
    UNION ALL
    SELECT desynpuf_id, 'carrier:' || clm_id, coalesce(clm_from_dt, clm_thru_dt),
           icd9_dgns_cd_1,
           concat_ws(';', icd9_dgns_cd_2, icd9_dgns_cd_3, icd9_dgns_cd_4, icd9_dgns_cd_5, icd9_dgns_cd_6, icd9_dgns_cd_7, icd9_dgns_cd_8, line_icd9_dgns_cd_1, line_icd9_dgns_cd_2, line_icd9_dgns_cd_3, line_icd9_dgns_cd_4, line_icd9_dgns_cd_5, line_icd9_dgns_cd_6, line_icd9_dgns_cd_7, line_icd9_dgns_cd_8, line_icd9_dgns_cd_9, line_icd9_dgns_cd_10, line_icd9_dgns_cd_11, line_icd9_dgns_cd_12, line_icd9_dgns_cd_13),
           hcpcs_cd_1, 0
    FROM source.carrier_claims
)
SELECT c.desynpuf_id AS member_id, c.clm_id AS claim_id, c.clm_from_dt AS service_date,
       date_part('year', age(c.clm_from_dt, b.bene_birth_dt))::int AS age_at_service,
       b.bene_sex_ident_cd::text AS sex, coalesce(c.dx, '') AS dx_code,
       c.other_dx AS other_dx_codes, coalesce(c.procedure_code, '') AS procedure_code,
       c.los AS length_of_stay, b.bene_birth_dt AS birth_date
FROM claims c
JOIN bene b USING (desynpuf_id)
WHERE c.clm_from_dt IS NOT NULL AND ({scope})
