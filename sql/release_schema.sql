-- Release side of the warehouse.
--   release      the de-identified tables readers may see (swapped in atomically)
--   release_build  where a run builds its tables before the swap (loader only)
--   restricted   what must never reach readers: which pseudonyms are dummies,
--                token-key fingerprints, privacy policies (rare code combinations)
--                and the release history (every published release of a release,
--                what it was checked against, and what the next run needs of it)
--   audit        one row per run, successful or not: opened as 'running' by the
--                run's first task, closed 'loaded' in the swap or 'failed'
CREATE SCHEMA IF NOT EXISTS release;
CREATE SCHEMA IF NOT EXISTS release_build;
CREATE SCHEMA IF NOT EXISTS restricted;
CREATE SCHEMA IF NOT EXISTS audit;

CREATE TABLE IF NOT EXISTS audit.release_runs (
    release_name   text NOT NULL,
    run_id         text NOT NULL,
    method         text NOT NULL,
    params         jsonb NOT NULL,
    seed           bigint NOT NULL,
    policy_versions jsonb NOT NULL DEFAULT '{}',
    input_rows     bigint,
    output_rows    bigint,
    risk_before    jsonb,
    risk_after     jsonb,
    metrics        jsonb,
    verdicts       jsonb,
    code_version   text,
    started_at     timestamptz NOT NULL,
    ended_at       timestamptz NOT NULL DEFAULT now(),
    outcome        text NOT NULL CHECK (outcome IN ('running', 'loaded', 'failed')),
    error          text,
    report_path    text,
    PRIMARY KEY (release_name, run_id, ended_at)
);
-- Who triggered the run (Airflow's triggering user; NULL for a scheduled run),
-- the scope it extracted and the parameters it changed from its release file.
ALTER TABLE audit.release_runs ADD COLUMN IF NOT EXISTS triggered_by text;
ALTER TABLE audit.release_runs ADD COLUMN IF NOT EXISTS scope text;
ALTER TABLE audit.release_runs ADD COLUMN IF NOT EXISTS overrides jsonb;
-- The earlier releases (their run ids, oldest first) the run's release was
-- checked against at validate (issue 25): a JSON array, [] for a first release.
ALTER TABLE audit.release_runs ADD COLUMN IF NOT EXISTS checked_against jsonb;

-- A run's row is opened 'running' when it starts (its ended_at is then the time
-- it was opened), so that a run killed before it could say so (a SIGKILLed task
-- runs no failure callback) still has its row, which deid.sweep closes 'failed'.
-- Earlier warehouses allowed only 'loaded' and 'failed': replace their check
-- once (not on every setup: ADD CONSTRAINT locks the table and reads it all).
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_constraint WHERE conrelid = 'audit.release_runs'::regclass
                   AND conname = 'release_runs_outcome_check'
                   AND pg_get_constraintdef(oid) LIKE '%running%') THEN
        ALTER TABLE audit.release_runs DROP CONSTRAINT IF EXISTS release_runs_outcome_check;
        ALTER TABLE audit.release_runs ADD CONSTRAINT release_runs_outcome_check
            CHECK (outcome IN ('running', 'loaded', 'failed'));
    END IF;
END $$;
-- One open row per run: closing it replaces it, a retried first task finds it.
CREATE UNIQUE INDEX IF NOT EXISTS release_runs_one_open
    ON audit.release_runs (release_name, run_id) WHERE outcome = 'running';

-- Close a run's open row: replace it by itself updated with the columns of
-- p_closed (a JSON object of audit columns; those it lacks keep their value),
-- ended now.  False when the run has no open row.  A loader appends audit rows
-- and may not update them (sql/roles.sql): this function, run with its
-- owner's rights, lets it close an open row and nothing else.  Calling it
-- needs USAGE on schema audit, which only deid_loader has.
CREATE OR REPLACE FUNCTION audit.close_run(p_release text, p_run text, p_closed jsonb)
RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r audit.release_runs;
BEGIN
    IF p_closed->>'outcome' IS NULL OR p_closed->>'outcome' NOT IN ('loaded', 'failed') THEN
        RAISE EXCEPTION 'a run closes as loaded or failed, not %', p_closed->>'outcome';
    END IF;
    DELETE FROM audit.release_runs WHERE release_name = p_release AND run_id = p_run
        AND outcome = 'running' RETURNING * INTO r;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    r := jsonb_populate_record(r, p_closed - 'release_name' - 'run_id' - 'ended_at');
    r.ended_at := now();
    INSERT INTO audit.release_runs SELECT r.*;
    RETURN true;
END $$;

-- Which released pseudonyms are dummies (MedCo), by release and run.
CREATE TABLE IF NOT EXISTS restricted.dummy_map (
    release_name text NOT NULL,
    run_id       text NOT NULL,
    pseudonym    text NOT NULL,
    is_dummy     boolean NOT NULL,
    made_from    text,            -- pseudonym of the real patient a dummy copies the size of
    PRIMARY KEY (release_name, run_id, pseudonym)
);

-- Which key made a release's code tokens (MedCo): its fingerprint only
-- (deid.secret).  The key itself lives only in Airflow's secrets.
CREATE TABLE IF NOT EXISTS restricted.token_keys (
    release_name text NOT NULL,
    run_id       text NOT NULL,
    key_sha256   text NOT NULL,   -- fingerprint, to tell keys apart without reading them
    PRIMARY KEY (release_name, run_id)
);
-- Earlier versions kept the key in clear here: drop it, and rewrite the table
-- (DROP COLUMN alone leaves the values in the data file; CLUSTER copies the
-- rows with the dropped column emptied into a new file).
DO $$ BEGIN
    IF EXISTS (SELECT FROM information_schema.columns WHERE table_schema = 'restricted'
               AND table_name = 'token_keys' AND column_name = 'token_key') THEN
        ALTER TABLE restricted.token_keys DROP COLUMN token_key;
        CLUSTER restricted.token_keys USING token_keys_pkey;
    END IF;
END $$;

-- The PPE privacy policy a run extracted (what the generalization methods consume).
CREATE TABLE IF NOT EXISTS restricted.privacy_policies (
    release_name  text NOT NULL,
    run_id        text NOT NULL,
    k             integer NOT NULL,
    filter        text NOT NULL,
    constraint_id integer NOT NULL,
    code          text NOT NULL
);
CREATE INDEX IF NOT EXISTS privacy_policies_run ON restricted.privacy_policies (release_name, run_id);

-- Release history (issue 25: an adversary keeps every release and compares
-- them).  One row per published release, written in the load's swap
-- transaction (deid.load.swap_in) with its audit row: a run that did not load
-- has none.  The loader may add rows and read them, not change or delete
-- them (sql/roles.sql): the history a run is checked against is what was
-- published.
CREATE TABLE IF NOT EXISTS restricted.release_history (
    release_name    text NOT NULL,
    run_id          text NOT NULL,
    method          text NOT NULL,
    scope           text,                    -- the SQL scope the run extracted
    params          jsonb NOT NULL,
    published_at    timestamptz NOT NULL DEFAULT now(),
    fingerprint     text NOT NULL,           -- SHA-256 of the released tables as loaded
    checked_against jsonb NOT NULL DEFAULT '[]',  -- run ids of the earlier releases
    PRIMARY KEY (release_name, run_id)
);

-- What the next run needs of a published release, kept after its release
-- table is replaced (deid.history): 'check/<name>', what the cross-release
-- verifier reads of it (the release, and which pseudonym is which patient as
-- a keyed link, never the source id); 'state/<name>', the method's state
-- between runs (MedCo's persisted dummies).  Each part is Parquet, in chunks
-- of whole rows.
CREATE TABLE IF NOT EXISTS restricted.release_parts (
    release_name text NOT NULL,
    run_id       text NOT NULL,
    part         text NOT NULL,
    chunk        integer NOT NULL,
    n_rows       bigint NOT NULL,
    data         bytea NOT NULL,
    PRIMARY KEY (release_name, run_id, part, chunk),
    FOREIGN KEY (release_name, run_id) REFERENCES restricted.release_history ON DELETE CASCADE
);
