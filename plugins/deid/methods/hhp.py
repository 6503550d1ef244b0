"""The Heritage Health Prize method (seed 004): screening, truncation, global
recoding to the least-loss lattice node whose measured risk meets MaxSup.
On ICD-10-CM claims (``params["code_system"]``) the screening lists,
primary-condition groups and hierarchies are ``hhp-2012-icd10-v1``'s, and the
verifier checks against that policy; ``hhp_hierarchies`` may name another
bundled hierarchy set of the code system (``hhp-2012-icd10-ccsr-v1``: AHRQ's
CCSR groups for the diagnosis), which the verifier then checks against.

It works on whole claims (one row per claim, sql/extract_claims_hhp.sql),
extracted by its own step; the diagnosis-per-patient extract still feeds
PPE, whose policy is the release's "risk before" like every method's.

Steps: ``prepare`` (extract, screen, encode; staged as ``hhp_staged.npz``),
``search`` mapped over groups of lattice parts (``anonymizers.claims.partition``),
``release`` (the best node over every part and its tables).
"""

from __future__ import annotations

from collections.abc import Iterator

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from deid import parquet_io as pio
from deid import staging
from deid.methods import form
from deid.secret import pseudonym_key

TITLE = "Heritage Health Prize claims release"
GATE_ROWS = 500_000  # released claims per Great Expectations run
PARAMS = {
    **form.params("hhp", {"k": "k", "max_sup": "max_sup", "p_max": "p_max",
                          "hhp_iterations": "max_iterations", "seed": "seed",
                          "hhp_hierarchies": "hierarchies_path"},
                  limits={"p_max": {"maximum": 50},
                          "hhp_iterations": {"minimum": 2, "maximum": 1000}}),
    "hhp_screen_all_diagnoses": {"type": "boolean", "default": False,
                                 "title": "Screen on every diagnosis",
                                 "description": "Screen members on all diagnoses of a claim, "
                                                "not only the primary one (as the prize did)."},
    "lattice_parts_per_task": {"type": "integer", "minimum": 1, "maximum": 100, "default": 1,
                               "title": "Lattice parts per search task",
                               "description": "The lattice is cut by DSFC level into parts "
                               "searched apart; this many parts per task. The release does "
                               "not depend on it."},
}
STEPS = ("prepare", "search", "release")
MAPPED = {"search": "prepare"}  # one task per group of lattice parts


def _input_columns(path, params) -> list[str]:
    """The staged claims' columns the release uses: other_dx_codes only when
    screening on every diagnosis."""
    return [c for c in pq.read_schema(path).names
            if params["hhp_screen_all_diagnoses"] or c != "other_dx_codes"]


def _claims(run, params) -> pd.DataFrame:
    """The staged claims, dates as datetime64: as Python date objects they
    took 210 MB at 113,000 members and most of the 26 s of normalizing."""
    path = run.path(staging.HHP_CLAIMS)
    return pq.read_table(path, columns=_input_columns(path, params)).to_pandas(
        date_as_object=False)


#: the screening lists, groups and hierarchies of each code system (docs/hhp-icd10.md);
#: ICD-9-CM's is the library's default (None)
POLICY = {"icd9cm": None, "icd10cm": "hhp-2012-icd10-v1"}


def _policy(params) -> str | None:
    return POLICY[params.get("code_system", "icd9cm")]


def check(params) -> None:
    """``hhp_hierarchies``: None (the code system's own, ``POLICY``) or a
    bundled hierarchy set of the release's code system, never a file path (a
    release names its recoding groups by version)."""
    from anonymizers.claims.groupings import CODE_SYSTEM

    name, system = params.get("hhp_hierarchies"), params.get("code_system", "icd9cm")
    if name is None:
        return
    if name not in CODE_SYSTEM:
        raise ValueError(f"hhp_hierarchies: {name!r} is not a bundled hierarchy set; the "
                         f"names are {sorted(CODE_SYSTEM)}")
    if CODE_SYSTEM[name] != system:
        raise ValueError(f"hhp_hierarchies: {name} groups {CODE_SYSTEM[name]} codes, the "
                         f"release's claims are {system}")


def _config(params):
    from anonymizers.claims import HHPConfig

    return HHPConfig(seed=params["seed"], max_sup=params["max_sup"], p_max=params["p_max"],
                     max_iterations=params["hhp_iterations"], pseudonym_key=pseudonym_key(),
                     policy_path=_policy(params),
                     hierarchies_path=params.get("hhp_hierarchies"))


def prepare(run, params) -> list[dict]:
    """Extract whole claims, screen and encode them (one task); returns the
    groups of lattice parts the search tasks take: numbers only."""
    from anonymizers.claims.partition import group
    from anonymizers.claims.release import part_count, stage
    from anonymizers.claims.store import save_staged
    from deid.extract import extract_claims_table
    from deid.steps import code_policy

    extract_claims_table(run.path(staging.HHP_CLAIMS), params["scope"], code_policy(run))
    config = _config(params)
    staged = stage(lambda: _claims(run, params), config)  # the raw frame goes once normalized
    save_staged(staged, run.path("hhp_staged.npz"))
    groups = group(part_count(staged, config), params["lattice_parts_per_task"])
    run.write_json(staging.HHP_GROUPS, groups)
    return [{"index": i, "parts": len(g)} for i, g in enumerate(groups)]


def search(run, params, batch) -> dict:
    """The lattice search of one group of parts (section 5)."""
    from dataclasses import asdict

    from anonymizers.claims.release import search_parts
    from anonymizers.claims.store import load_staged

    i = batch["index"]
    parts = run.read_json(staging.HHP_GROUPS)[i]
    results = search_parts(load_staged(run.path("hhp_staged.npz")), _config(params), parts)
    run.write_json(staging.hhp_parts(i), [asdict(r) for r in results])
    return {"index": i, "parts": parts, "evaluated": sum(len(r.evaluated) for r in results)}


def release(run, params) -> dict:
    """The best node over every part, its release tables and record."""
    from anonymizers.claims.partition import PartResult
    from anonymizers.claims.release import finish
    from anonymizers.claims.risk import NodeRisk
    from anonymizers.claims.store import load_staged

    def node(d):
        return None if d is None else NodeRisk(**{**d, "node": tuple(d["node"])})

    results = [PartResult(r["part"], node(r["chosen"]), tuple(map(node, r["evaluated"])),
                          r["complete"])
               for i in range(len(run.read_json(staging.HHP_GROUPS)))
               for r in run.read_json(staging.hhp_parts(i))]
    result = finish(load_staged(run.path("hhp_staged.npz")), _config(params), results,
                    sum(n.seconds for r in results for n in r.evaluated))
    result.members.to_parquet(run.path(staging.HHP_MEMBERS), index=False)
    result.claims.to_parquet(run.path(staging.HHP_RELEASE_CLAIMS), index=False)
    # the claim's number within its member, for the load to stream the claims
    np.save(run.path("hhp_claim_numbers.npy"),
            result.claims.groupby("member_id").cumcount().to_numpy(dtype=np.int32))
    result.key.to_parquet(run.path(staging.KEY), index=False)
    run.write_json(staging.HHP_METRICS, result.metrics)
    run.write_json(staging.LATTICE, [{"node": str(n.levels), "risk": n.risk,
                                      "information_loss": n.information_loss,
                                      "candidate": n.candidate} for n in result.lattice])
    metrics = run.small(result.metrics)
    metrics["chosen_node"] = json.dumps(result.metrics.get("chosen_node"))
    run.write_json(staging.METHOD_METRICS, metrics)
    return metrics


def verify(run, params) -> list[dict]:
    """The release verifier over the input claims in batches of whole
    members (ranges of sorted raw ids, ``steps.VERIFY_ROWS`` claims at most;
    the verifier strips ids and reports a member found in two batches), with
    the released claims read by row group or by pseudonym: the task holds
    one batch, the members table, the key and small indexes."""
    from anonymizers.verify.claims import verify_release_batches
    from deid.steps import VERIFY_ROWS

    source = run.path(staging.HHP_CLAIMS)
    columns = _input_columns(source, params)
    ranges = pio.id_ranges(source, "member_id", VERIFY_ROWS)

    def batches():
        for lo, hi in ranges:
            yield pio.rows_between(source, "member_id", lo, hi, columns)

    return [verify_release_batches(pd.read_parquet(run.path(staging.HHP_MEMBERS)),
                                   ReleasedClaims(run.path(staging.HHP_RELEASE_CLAIMS)),
                                   run.read_json(staging.HHP_METRICS),
                                   pd.read_parquet(run.path(staging.KEY)), batches,
                                   policy_path=_policy(params),
                     hierarchies_path=params.get("hhp_hierarchies")).as_dict()]


class ReleasedClaims:
    """The staged release claims as the batched verifier reads them."""

    def __init__(self, path):
        self.path = path

    def chunks(self):
        return pio.row_groups(self.path)  # an empty file still gives its columns

    def of(self, pseudonyms) -> pd.DataFrame:
        return pio.rows_of(self.path, "member_id", list(pseudonyms))


def gates(run, params, source) -> Iterator[tuple]:
    """The released claims are checked a chunk at a time."""
    import great_expectations as gx

    from deid.validation import DATE_LIKE

    E = gx.expectations
    members = pd.read_parquet(run.path(staging.HHP_MEMBERS))
    ids = list(pio.distinct(run.path(staging.HHP_CLAIMS), "member_id"))
    yield ("members", members, [
        E.ExpectColumnValuesToBeUnique(column="member_id"),
        E.ExpectColumnValuesToNotBeInSet(column="member_id", value_set=ids),
        E.ExpectColumnValuesToNotMatchRegex(column="member_id", regex=DATE_LIKE)])
    pseudonyms = sorted(members["member_id"])
    for part in pio.ParquetFrame(run.path(staging.HHP_RELEASE_CLAIMS)).chunks(GATE_ROWS):
        yield ("claims", part, [
            E.ExpectColumnValuesToBeInSet(column="member_id", value_set=pseudonyms),
            *[E.ExpectColumnValuesToNotMatchRegex(column=c, regex=DATE_LIKE)
              for c in part.columns if c != "member_id"]])


def release_tables(run, params, token_key: str) -> dict:
    members = pd.read_parquet(run.path(staging.HHP_MEMBERS)).astype(str)
    return {"hhp_members": _long(members, "member_id"),
            "hhp_claims": LongClaims(run.path(staging.HHP_RELEASE_CLAIMS),
                                     np.load(run.path("hhp_claim_numbers.npy")))}


class LongClaims:
    """The released claims as (member pseudonym, claim number, attribute,
    value) rows, made a chunk of claims at a time for the load's COPY."""

    columns = ["member_pseudonym", "claim_number", "attribute", "value"]

    def __init__(self, path, numbers: np.ndarray):
        self.path, self.numbers = path, numbers
        names = pq.read_schema(path).names
        self.n_values = len([c for c in names if c != "member_id"])
        if pq.ParquetFile(path).metadata.num_rows != len(numbers):
            raise ValueError(f"{path.name}: claim numbers do not match the claims")

    def __len__(self) -> int:
        return len(self.numbers) * self.n_values

    def chunks(self, rows: int):
        start = 0
        for claims in pio.ParquetFrame(self.path).chunks(max(1, rows // max(1, self.n_values))):
            claims = claims.astype(str)
            claims.insert(1, "claim_number", self.numbers[start:start + len(claims)])
            start += len(claims)
            yield _melt(claims)


def _long(frame: pd.DataFrame, id_col: str) -> pd.DataFrame:
    """(member pseudonym, quasi-identifier, value): the QIs used vary per run."""
    out = frame.melt(id_vars=[id_col], var_name="attribute", value_name="value")
    return out.rename(columns={id_col: "member_pseudonym"})


def _melt(claims: pd.DataFrame) -> pd.DataFrame:
    out = claims.melt(id_vars=["member_id", "claim_number"], var_name="attribute",
                      value_name="value")
    return out.rename(columns={"member_id": "member_pseudonym"})


def figures(run, params) -> list:
    import matplotlib.pyplot as plt

    nodes = run.read_json(staging.LATTICE)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ok = [n for n in nodes if n["candidate"]]
    bad = [n for n in nodes if not n["candidate"]]
    ax.scatter([n["information_loss"] for n in bad], [n["risk"] for n in bad], c="#b00020",
               s=12, label="risk above MaxSup")
    ax.scatter([n["information_loss"] for n in ok], [n["risk"] for n in ok], c="#17692b",
               s=12, label="candidate")
    ax.axhline(params["max_sup"], color="grey", lw=0.8, ls="--")
    ax.set_xlabel("information loss")
    ax.set_ylabel("proportion of high-risk members")
    ax.legend()
    ax.set_title(f"{len(nodes)} lattice nodes evaluated")
    return [("Risk of each evaluated lattice node (section 5)", fig)]
