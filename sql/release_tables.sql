-- Documented schemas of the release tables, one block per method.  The loader
-- creates them in release_build under a run-scoped name, fills them with COPY
-- and swaps them into the release schema; {table} is replaced by that name.

-- name: medco_records
-- MedCo release: one row per (released patient, code token).  Real and dummy
-- patients are mixed under fresh pseudonyms; codes are HMAC-SHA256 tokens.
CREATE TABLE {table} (
    patient_pseudonym text NOT NULL,
    code_token        text NOT NULL
);

-- name: gccens_records
-- GCCens release: one row per (released patient, code) with the number of
-- copies kept; every patient's multiset maps to >= k population records.
CREATE TABLE {table} (
    patient_pseudonym text NOT NULL,
    code              text NOT NULL,
    count             integer NOT NULL CHECK (count > 0)
);
