-- One row per claim, with what the Heritage Health Prize method needs
-- (anonymizers.claims): the primary diagnosis, the other diagnoses (for
-- screening), the first procedure code, sex and age at service, length of
-- stay (inpatient), and the member's birth date (screening's newborn rule).
-- DE-SynPUF has no place of service or specialty: those quasi-identifiers
-- are absent and the method says so.  The scope as in extract_claims.sql.
-- CCW RIF claims (source.rif_*) come too, as in extract_claims.sql: the
-- principal diagnosis (PRNCPAL_DGNS_CD, else the first claim-level code) is
-- the primary one; the RIF tables keep no procedure code, and an inpatient or
-- SNF stay lasts from CLM_FROM_DT to CLM_THRU_DT.  dx_version and
-- other_dx_versions are the CMS version flags of dx_code and of each of
-- other_dx_codes, in order (NULL for DE-SynPUF, which has none).
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
           coalesce(clm_utlztn_day_cnt, nch_bene_dschrg_dt - clm_admsn_dt, 0) AS los,
           NULL AS dx_version, NULL AS other_dx_versions
    FROM source.inpatient_claims
    UNION ALL
    SELECT desynpuf_id, 'outpatient:' || clm_id, coalesce(clm_from_dt, clm_thru_dt),
           icd9_dgns_cd_1, concat_ws(';', icd9_dgns_cd_2, icd9_dgns_cd_3, icd9_dgns_cd_4, icd9_dgns_cd_5, icd9_dgns_cd_6, icd9_dgns_cd_7, icd9_dgns_cd_8, icd9_dgns_cd_9, icd9_dgns_cd_10), hcpcs_cd_1, 0,
           NULL, NULL
    FROM source.outpatient_claims
    UNION ALL
    SELECT desynpuf_id, 'carrier:' || clm_id, coalesce(clm_from_dt, clm_thru_dt),
           icd9_dgns_cd_1,
           concat_ws(';', icd9_dgns_cd_2, icd9_dgns_cd_3, icd9_dgns_cd_4, icd9_dgns_cd_5, icd9_dgns_cd_6, icd9_dgns_cd_7, icd9_dgns_cd_8, line_icd9_dgns_cd_1, line_icd9_dgns_cd_2, line_icd9_dgns_cd_3, line_icd9_dgns_cd_4, line_icd9_dgns_cd_5, line_icd9_dgns_cd_6, line_icd9_dgns_cd_7, line_icd9_dgns_cd_8, line_icd9_dgns_cd_9, line_icd9_dgns_cd_10, line_icd9_dgns_cd_11, line_icd9_dgns_cd_12, line_icd9_dgns_cd_13),
           hcpcs_cd_1, 0, NULL, NULL
    FROM source.carrier_claims
),
rif_bene AS (
    SELECT DISTINCT ON (bene_id) bene_id, bene_birth_dt, bene_sex_ident_cd
    FROM source.rif_beneficiary
    ORDER BY bene_id, year
),
rif_dx AS (  -- each code of a claim once, the principal diagnosis first
    SELECT claim_type, clm_id, code, code_system,
           row_number() OVER (PARTITION BY claim_type, clm_id
                              ORDER BY field <> 'PRNCPAL_DGNS_CD', line_num IS NOT NULL,
                                       field, line_num) AS n
    FROM (SELECT DISTINCT ON (claim_type, clm_id, code) claim_type, clm_id, code,
                 code_system, field, line_num
          FROM source.rif_diagnoses
          ORDER BY claim_type, clm_id, code, field <> 'PRNCPAL_DGNS_CD',
                   line_num IS NOT NULL, field, line_num) first_use
),
rif_claims AS (
    SELECT r.bene_id, 'rif_' || r.claim_type || ':' || r.clm_id AS clm_id,
           coalesce(r.clm_from_dt, r.clm_thru_dt) AS clm_from_dt,
           max(d.code) FILTER (WHERE d.n = 1) AS dx,
           string_agg(d.code, ';' ORDER BY d.n) FILTER (WHERE d.n > 1) AS other_dx,
           NULL AS procedure_code,
           CASE WHEN r.claim_type IN ('inpatient', 'snf')
                THEN coalesce(r.clm_thru_dt - r.clm_from_dt, 0) ELSE 0 END AS los,
           max(CASE d.code_system WHEN 'icd9cm' THEN '9' ELSE '0' END)
               FILTER (WHERE d.n = 1) AS dx_version,
           string_agg(CASE d.code_system WHEN 'icd9cm' THEN '9' ELSE '0' END, ';'
                      ORDER BY d.n) FILTER (WHERE d.n > 1) AS other_dx_versions
    FROM source.rif_claims r
    LEFT JOIN rif_dx d USING (claim_type, clm_id)
    GROUP BY r.claim_type, r.bene_id, r.clm_id, r.clm_from_dt, r.clm_thru_dt
),
both_layouts AS (
    SELECT c.*, b.bene_birth_dt, b.bene_sex_ident_cd
    FROM claims c JOIN bene b USING (desynpuf_id)
    UNION ALL
    SELECT r.*, b.bene_birth_dt, b.bene_sex_ident_cd
    FROM rif_claims r JOIN rif_bene b USING (bene_id)
)
SELECT c.desynpuf_id AS member_id, c.clm_id AS claim_id, c.clm_from_dt AS service_date,
       date_part('year', age(c.clm_from_dt, c.bene_birth_dt))::int AS age_at_service,
       c.bene_sex_ident_cd::text AS sex, coalesce(c.dx, '') AS dx_code,
       c.other_dx AS other_dx_codes, coalesce(c.procedure_code, '') AS procedure_code,
       c.los AS length_of_stay, c.bene_birth_dt AS birth_date,
       c.dx_version, c.other_dx_versions
FROM both_layouts c
WHERE c.clm_from_dt IS NOT NULL AND ({scope})
