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

-- name: ugaclip_items
-- UGACLIP release, items: an item stands for the set of original codes listed
-- under its id (Definition 1); a code of one item only is released as itself.
CREATE TABLE {table} (
    item_id integer NOT NULL,
    code    text NOT NULL
);

-- name: ugaclip_records
-- UGACLIP release, records: the items each released patient holds.
-- Suppressed codes are in no item; a patient whose codes were all suppressed
-- has no row.
CREATE TABLE {table} (
    patient_pseudonym text NOT NULL,
    item_id           integer NOT NULL
);

-- Disassociation release (seed 001): five tables per release.
-- name: dis_clusters
-- One row per cluster of records (HORPART), with its number of records.
CREATE TABLE {table} (
    cluster_id integer NOT NULL,
    size       integer NOT NULL
);

-- name: dis_record_chunks
-- Subrecords of each record chunk (VERPART): the codes of one record that fall
-- in the chunk; empty subrecords have no row.  Within a cluster every code set
-- of at most m codes is shared by at least k subrecords.
CREATE TABLE {table} (
    cluster_id   integer NOT NULL,
    chunk_id     integer NOT NULL,
    subrecord_id integer NOT NULL,
    code         text NOT NULL
);

-- name: dis_item_chunks
-- Codes of a cluster's item chunk: present in the cluster, supports hidden.
CREATE TABLE {table} (
    cluster_id integer NOT NULL,
    code       text NOT NULL
);

-- name: dis_shared_chunks
-- Subrecords of the shared chunks made by refining (Fig. 10).
CREATE TABLE {table} (
    shared_id    integer NOT NULL,
    subrecord_id integer NOT NULL,
    code         text NOT NULL
);

-- name: dis_shared_chunk_clusters
-- Which clusters each shared chunk joins.
CREATE TABLE {table} (
    shared_id  integer NOT NULL,
    cluster_id integer NOT NULL
);

-- name: lda_trajectories
-- LDA release: each patient's anonymized trajectory as ordered (code, age)
-- pairs; values are hierarchy labels (401.1, 401-405, * ; 33, 33-40, *).
-- Every trajectory is shared by at least k patients.
CREATE TABLE {table} (
    patient_pseudonym text NOT NULL,
    position          integer NOT NULL,
    code              text NOT NULL,
    age               text NOT NULL
);

-- Heritage Health Prize release (seed 004).  The quasi-identifiers used
-- depend on the data (DE-SynPUF has no place of service or specialty) and
-- their level on the chosen lattice node, so both tables are long:
-- (pseudonym, attribute, value), every value a label of the chosen level.
-- name: hhp_members
CREATE TABLE {table} (
    member_pseudonym text NOT NULL,
    attribute        text NOT NULL,
    value            text
);

-- name: hhp_claims
-- claim_number orders a member's released claims (dsfc replaces dates).
CREATE TABLE {table} (
    member_pseudonym text NOT NULL,
    claim_number     integer NOT NULL,
    attribute        text NOT NULL,
    value            text
);
