"""Benchmark of LDA (Tamersoy 2011, Chapter IV) at k = 5: A-GS against
Baseline, the thesis' figures beside ours (benchmarks/lda.md tells the story).

Cohorts:

1. DE-SynPUF TestB claims, built as the pipeline builds them
   (sql/extract_claims.sql, then plugins/deid/methods/lda.py): one
   (code, age) pair per distinct diagnosis code and age of a patient over its
   inpatient, outpatient and carrier claims (admitting, ICD9_DGNS_CD_* and LINE_ICD9_DGNS_CD_*
   codes, CMS's OTHER/XX000 placeholders dropped), age in whole years at
   CLM_FROM_DT (CLM_THRU_DT when empty) from the earliest summary file's
   BENE_BIRTH_DT; no service date (pairs of one age ordered by code).
   Four code selections, the first three with 5-digit codes as CMS writes them:
   ``synpuf_release`` the release's ``lda_codes`` (releases/lda_trajectories.yaml),
   ``synpuf_d4`` the thesis' D_4 categories (250, 272, 401, 724; IV.4.1),
   ``synpuf_d50`` the 50 codes held by the most patients (D_50's rule),
   ``synpuf_d4_categories`` the D_4 codes cut to their 3-digit category, as
   the thesis built D_4 ("D_4^Pop consists of 3-digit ICD codes", IV.4.4).
2. ``d50_synthetic``: a D_50^Pop-like cohort from the claims generator
   (``SyntheticConfig(n_members=1,200, seed=2011, claims_per_member=12)``
   -> ``synthetic_views.trajectories``, 50 codes, about 9.32 pairs per
   trajectory, the first 1,000 members), without service dates.

Each cohort runs A-GS with the chosen readings, Baseline, and two A-GS runs
that undo one reading each (``readings``): pairs of one age ordered by
service date, and ``|A|`` = every ICD-9-CM code; on the SynPUF cohorts a third
undoes the distinct pairs (``per_claim_pairs``: one pair per code of each
claim, as the pipeline built them before).  The SynPUF cohorts also
run the opt-in deviations (``deviations``: member-weighted A-GS, the
refinement post-pass, both), which are not the thesis' algorithm.  The verifier runs on every
release.  ``python -m benchmarks.bench_lda`` from the repository root;
``python -m benchmarks.bench_lda --bound`` prints ``kept_bound`` of each
SynPUF cohort (an upper bound on any k-anonymous in-order release, below);
``--thesis-size`` runs ``d50_synthetic`` at D_50^Pop's 27,639 patients (about
20 minutes) into ``results/lda_thesis_size.json`` (with ``--release-file``, the
release file's setting, into ``results/lda_thesis_size_release_file.json``);
``--release-file`` alone compares the release files' setting with their earlier
one on the SynPUF cohorts into ``results/lda_release_file.json``; ``--weights`` sweeps
w_ICD on two SynPUF cohorts (about 10 minutes) into ``results/lda_weights.json``;
``--shared-codes`` runs the opt-in shared-code bonus on the SynPUF code selections of
TestB and of Sample 1's 2010 inpatient claims (``sample1_pairs``, kept in
benchmarks/data) into ``results/lda_shared_codes.json``; ``--age-block`` adds the
opt-in 16-year age block and the look-ahead to it on the same cohorts into
``results/lda_age_block.json``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from anonymizers.longitudinal import LDAConfig, lda
from anonymizers.longitudinal.config import OPT_IN
from anonymizers.longitudinal.hierarchies import AGE_LOW
from anonymizers.longitudinal.shared_codes import lcs_lengths, lcs_step
from anonymizers.synthetic import SyntheticConfig
from anonymizers.synthetic_views import category, trajectories
from anonymizers.verify.longitudinal import verify_lda
from benchmarks.harness import DATASETS, RESULTS, run_benchmark  # noqa: F401 (RESULTS for tests)

K = 5
SEED = 2011
D50 = {"n_codes": 50, "pairs_per_member": 9.32}
GENERATOR = {"claims_per_member": 12.0}
SIZES = {False: (1_000, 1_200), True: (300, 400)}  # small -> (trajectories, members)
SYNPUF = DATASETS / "synpuf" / "cms_bfd_sample_testB"
SAMPLE1_SUMMARY = DATASETS / "synpuf" / "bene_summary_10k_subset"
SAMPLE1_CLAIMS = (Path(__file__).resolve().parent / "data"
                  / "DE1_0_2010_Inpatient_Claims_Sample_1_bene10k.csv.gz")
RELEASE = Path(__file__).resolve().parents[1] / "releases" / "lda_trajectories.yaml"
D4_CATEGORIES = ("250", "272", "401", "724")
PLACEHOLDERS = ("OTHER", "XX000")
CLAIMS = {"Inpatient_Claims_Sample_TestB": ("ADMTNG_ICD9_DGNS_CD", "ICD9_DGNS_CD_", 10, "", 0),
          "Outpatient_Claims_Sample_TestB": ("ADMTNG_ICD9_DGNS_CD", "ICD9_DGNS_CD_", 10, "", 0),
          "Carrier_Claims_Sample_TestBA": (None, "ICD9_DGNS_CD_", 8, "LINE_ICD9_DGNS_CD_", 13)}
# The thesis' published figures at k = 5 (IV.4.2-IV.4.4).
THESIS = {
    "D50Pop": {"icd_kept_3digit_or_finer": "> 30", "age_kept_16year_or_finer": "> 60",
               "avg_re": "< 1", "source": "Figure 13 text, Figure 12"},
    "D4Pop": {"icd_kept_3digit_or_finer": "> 55 (3-digit codes)",
              "age_kept_16year_or_finer": "> 70", "avg_re": "< 1",
              "source": "Figure 14 text, Figure 12"},
    "D4Smp": {"ilm": "< 0.5", "alm": "< 0.5", "source": "Figure 11 text"},
    "Baseline": "suppressed all values for k > 2 (D50Pop)",
}
KEEP = ("ilm", "alm", "avg_re", "icd_kept_3digit_or_finer", "age_kept_16year_or_finer",
        "ilm_by_level", "alm_by_level", "icd_levels", "age_levels", "n_queries",
        "n_clusters", "min_cluster_size", "max_cluster_size", "suppressed_pairs",
        "released_pairs", "unknown_codes", "n_alignments")


def d50_synthetic(n_patients: int, n_members: int, seed: int = SEED) -> pd.DataFrame:
    """D_50^Pop-like pairs from the claims generator (module doc, item 2)."""
    config = SyntheticConfig(n_members=n_members, seed=seed, **GENERATOR)
    return trajectories(config, n_patients=n_patients, seed=seed, **D50)


def _birth_dates(folder: Path = SYNPUF, sample: str = "TestB") -> pd.DataFrame:
    frames = []
    for year in (2008, 2009, 2010):
        f = folder / f"DE1_0_{year}_Beneficiary_Summary_File_Sample_{sample}.csv.gz"
        frames.append(pd.read_csv(f, dtype=str, usecols=["DESYNPUF_ID", "BENE_BIRTH_DT"])
                      .assign(year=year))
    return pd.concat(frames).sort_values(["DESYNPUF_ID", "year"]).drop_duplicates("DESYNPUF_ID")


def _claim_codes(name: str, spec, path: Path | None = None) -> pd.DataFrame:
    admitting, prefix, n, line_prefix, n_line = spec
    cols = ([admitting] if admitting else []) + [f"{prefix}{i}" for i in range(1, n + 1)] \
        + [f"{line_prefix}{i}" for i in range(1, n_line + 1)]
    c = pd.read_csv(path or SYNPUF / f"DE1_0_2008_to_2010_{name}.csv.gz", dtype=str,
                    usecols=["DESYNPUF_ID", "CLM_ID", "CLM_FROM_DT", "CLM_THRU_DT", *cols])
    date = c["CLM_FROM_DT"].fillna(c["CLM_THRU_DT"])
    c["date"] = date.fillna(c.groupby(["DESYNPUF_ID", "CLM_ID"])["CLM_FROM_DT"].transform("min"))
    c["claim"] = name + ":" + c["CLM_ID"]
    long = c.melt(id_vars=["DESYNPUF_ID", "claim", "date"], value_vars=cols, value_name="code")
    return long.dropna(subset=["code"])[["DESYNPUF_ID", "claim", "date", "code"]]


def synpuf_pairs(limit: int | None = None, per_claim: bool = False) -> pd.DataFrame:
    """Every distinct (patient, code, age) of TestB as the pipeline builds
    them (module doc, item 1), before any code selection, with the first
    claim date of the pair as ``service_date``; ``per_claim``: one pair per
    distinct code of each claim instead (the reading undone in ``figures``)."""
    codes = pd.concat([_claim_codes(name, spec) for name, spec in CLAIMS.items()])
    bene = _birth_dates()
    return _pairs(codes, bene.head(limit) if limit else bene, per_claim)


def sample1_pairs() -> pd.DataFrame:
    """The pairs of ``SAMPLE1_CLAIMS`` (Sample 1's 2010 inpatient claims of the
    beneficiaries of the 10,000-beneficiary summary subset; benchmarks/data/SOURCES.md),
    built as ``synpuf_pairs`` builds TestB's, ages from that subset's birth dates."""
    codes = _claim_codes("Inpatient_Claims_Sample_1_2010", CLAIMS["Inpatient_Claims_Sample_TestB"],
                         SAMPLE1_CLAIMS)
    return _pairs(codes, _birth_dates(SAMPLE1_SUMMARY, "1"))


def _pairs(codes: pd.DataFrame, bene: pd.DataFrame, per_claim: bool = False) -> pd.DataFrame:
    codes = codes[(codes["code"] != "") & ~codes["code"].isin(PLACEHOLDERS)]
    codes = codes.drop_duplicates(["DESYNPUF_ID", "claim", "code"])
    pairs = codes.merge(bene, on="DESYNPUF_ID")
    born = pd.to_datetime(pairs["BENE_BIRTH_DT"], format="%Y%m%d")
    seen = pd.to_datetime(pairs["date"], format="%Y%m%d")
    before_birthday = (seen.dt.month * 100 + seen.dt.day) < (born.dt.month * 100 + born.dt.day)
    age = seen.dt.year - born.dt.year - before_birthday.astype(int)
    out = pd.DataFrame({"patient_id": pairs["DESYNPUF_ID"].to_numpy(),
                        "code": pairs["code"].to_numpy(), "age": age.to_numpy(),
                        "service_date": pairs["date"].to_numpy()})
    if per_claim:
        return out
    out = out.sort_values(["patient_id", "service_date", "code"], kind="stable")
    return out.drop_duplicates(["patient_id", "code", "age"]).reset_index(drop=True)


def synpuf_cohorts(pairs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The four code selections of the module doc (with service dates)."""
    cats = pairs["code"].map(category)
    release = yaml.safe_load(RELEASE.read_text())["params"]["lda_codes"]
    held = pairs.drop_duplicates(["patient_id", "code"])["code"].value_counts(sort=False)
    top50 = held.sort_index().sort_values(ascending=False, kind="stable").index[:50]
    pick = {"synpuf_release": cats.isin(release), "synpuf_d4": cats.isin(D4_CATEGORIES),
            "synpuf_d50": pairs["code"].isin(top50)}
    out = {name: pairs[mask].reset_index(drop=True) for name, mask in pick.items()}
    d4 = pairs[pick["synpuf_d4"]].assign(code=cats[pick["synpuf_d4"]])
    out["synpuf_d4_categories"] = (d4.drop_duplicates(["patient_id", "code", "age"])
                                   .reset_index(drop=True))
    return out


def describe(pairs: pd.DataFrame) -> dict:
    per = pairs.groupby("patient_id")
    return {"patients": int(pairs["patient_id"].nunique()), "pairs": len(pairs),
            "distinct_pairs": len(pairs[["code", "age"]].drop_duplicates()),
            "distinct_codes": int(pairs["code"].nunique()),
            "distinct_ages": int(pairs["age"].nunique()),
            "avg_pairs_per_t": round(float(per.size().mean()), 2),
            "max_pairs_per_t": int(per.size().max()),
            "avg_codes_per_t": round(float(per["code"].nunique().mean()), 2),
            "avg_ages_per_t": round(float(per["age"].nunique().mean()), 2)}


def anonymize(pairs: pd.DataFrame, alignment: str, k: int = K,
              icd_domain: str = "data", seed: int = SEED, **options) -> dict:
    """One LDA run with its verdict and time (``options``: more LDAConfig fields)."""
    t0 = time.perf_counter()
    result = lda(pairs, LDAConfig(k=k, alignment=alignment, seed=seed, icd_domain=icd_domain,
                                  **options))
    seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    verdict = verify_lda(result.records, result.pseudonym_map, pairs, k,
                         code_system=options.get("code_system", "icd9cm"))
    return {"seconds": round(seconds, 2),
            "verify_seconds": round(time.perf_counter() - t0, 2),
            "verifier_ok": verdict.ok, "violations": list(verdict.violations[:3]),
            **{key: result.metrics[key] for key in KEEP}}


SHORT = ("icd_kept_3digit_or_finer", "age_kept_16year_or_finer", "ilm", "alm", "avg_re",
         "suppressed_pairs", "verifier_ok", "seconds")


def short(run: dict) -> dict:
    """The ``SHORT`` figures of one ``anonymize`` run."""
    return {key: run[key] for key in SHORT}


# the opt-in deviations (not the thesis; benchmarks/lda.md, "Opt-in deviations")
DEVIATIONS = {"member_weighted": {"member_weighted": True},
              "refine_4": {"refine_rounds": 4},
              "member_weighted+refine_4": {"member_weighted": True, "refine_rounds": 4}}


def cohort(pairs: pd.DataFrame, deviations: bool = False) -> dict:
    """A-GS and Baseline on ``pairs`` (dates dropped), the two undone
    readings, and with ``deviations`` A-GS under each of ``DEVIATIONS``."""
    plain = pairs.drop(columns="service_date")
    out = {"data": describe(pairs), "a-gs": anonymize(plain, "a-gs"),
           "baseline": anonymize(plain, "baseline")}
    out["readings"] = {
        "date_order": short(anonymize(pairs, "a-gs")),
        "icd_domain_hierarchy": short(anonymize(plain, "a-gs", icd_domain="hierarchy"))}
    if deviations:
        out["deviations"] = {name: short(anonymize(plain, "a-gs", **options))
                             for name, options in DEVIATIONS.items()}
    return out


def kept_bound(pairs: pd.DataFrame, k: int = K) -> float:
    """Upper bound on the percent of ICD values that any k-anonymous release
    which generalizes, in order, a subsequence of each trajectory (what the
    verifier checks) can keep at 3-digit or finer.  Such values of a patient
    t are a common subsequence of 3-digit categories, in (age, code) order,
    of t and of the k-1 others released like t, so they number at most the
    (k-1)-th largest LCS of t's category sequence with another patient's.
    Ages, and that one group must share one subsequence, are ignored."""
    seqs, table, lengths, _ = _category_sequences(pairs)
    if len(seqs) < k:
        return 0.0
    kept = 0
    for t, x in enumerate(seqs):
        lcs = lcs_lengths(x, table, lengths)
        lcs[t] = -1
        kept += int(np.sort(lcs)[::-1][k - 2]) if k > 1 else len(x)
    return 100.0 * kept / lengths.sum()


def codes_first(pairs: pd.DataFrame, k: int = K, width: int | None = None) -> float:
    """Percent of ICD values kept at 3-digit or finer by a clustering that
    looks at codes alone (not LDA, not a bound; benchmarks/lda.md, "The
    release file's setting"): MDAV's cluster sizes, each cluster from the
    longest trajectory left, grown by the candidate sharing the longest common
    subsequence of 3-digit categories with the cluster's common subsequence so
    far; a cluster keeps that subsequence for each member and suppresses the
    rest.  With ``width``, candidates whose ages stay with the cluster's in one
    ``width``-year node of the age tree come first; once the cluster spans two
    nodes, codes alone decide (LDA's ``age_block`` still prices widening)."""
    seqs, table, lengths, ages = _category_sequences(pairs)
    if len(seqs) < k:
        return 0.0
    node = [(a - AGE_LOW) // width if width else np.zeros(1, dtype=np.int64) for a in ages]
    lo, hi = np.array([x.min() for x in node]), np.array([x.max() for x in node])
    alive, kept = np.ones(len(seqs), dtype=bool), 0
    while alive.any():
        rem = np.flatnonzero(alive)
        r = int(rem[np.argmax(lengths[rem])])
        common, low, high = seqs[r], lo[r], hi[r]
        size = len(rem) if len(rem) < 2 * k else k
        alive[r] = False
        for _ in range(size - 1):
            cand = np.flatnonzero(alive)
            inside = np.minimum(lo[cand], low) == np.maximum(hi[cand], high)
            score = lcs_lengths(common, table[cand], lengths[cand]) + inside * table.size
            c = int(cand[np.argmax(score)])
            common, low, high = _lcs(common, seqs[c]), min(low, lo[c]), max(high, hi[c])
            alive[c] = False
        kept += size * len(common)
    return 100.0 * kept / lengths.sum()


def _category_sequences(pairs: pd.DataFrame):
    """Each patient's 3-digit category ids in (age, code) order, the same as
    a table padded with -1, their lengths, and each patient's ages."""
    d = pairs.assign(cat=pairs["code"].map(category))
    d = d.sort_values(["patient_id", "age", "code"], kind="stable")
    codes = np.unique(d["cat"].to_numpy(), return_inverse=True)[1]
    rows = list(d.groupby("patient_id", sort=False).indices.values())
    seqs = [codes[i] for i in rows]
    lengths = np.array([len(x) for x in seqs], dtype=np.int64)
    table = np.full((len(seqs), lengths.max(initial=0)), -1)
    for i, x in enumerate(seqs):
        table[i, :len(x)] = x
    age = d["age"].to_numpy()
    return seqs, table, lengths, [age[i] for i in rows]


def _lcs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One longest common subsequence of ``a`` and ``b``."""
    dp = [np.zeros((1, len(b) + 1), dtype=np.int64)]
    for c in a:
        dp.append(lcs_step(dp[-1].copy(), c, b[None, :]))
    dp = np.concatenate(dp)
    i, j, out = len(a), len(b), []
    while i and j:
        if a[i - 1] == b[j - 1]:
            out.append(a[i - 1])
            i, j = i - 1, j - 1
        elif dp[i - 1, j] >= dp[i, j - 1]:
            i -= 1
        else:
            j -= 1
    return np.array(out[::-1], dtype=np.int64)


def figures(small: bool = False) -> dict:
    out = {"thesis": THESIS}
    if SYNPUF.is_dir():
        limit = 40 if small else None
        per_claim = synpuf_cohorts(synpuf_pairs(limit=limit, per_claim=True))
        for name, pairs in synpuf_cohorts(synpuf_pairs(limit=limit)).items():
            out[name] = cohort(pairs, deviations=True)
            if name == "synpuf_d4_categories":  # distinct by construction
                continue
            plain = per_claim[name].drop(columns="service_date")
            out[name]["readings"]["per_claim_pairs"] = {
                "data": describe(per_claim[name]),
                **short(anonymize(plain, "a-gs"))}
    else:
        out["synpuf"] = f"skipped: {SYNPUF} not found"
    t0 = time.perf_counter()
    d50 = d50_synthetic(*SIZES[small])
    data_seconds = round(time.perf_counter() - t0, 2)
    out["d50_synthetic"] = cohort(d50)
    out["d50_synthetic"]["data"]["data_seconds"] = data_seconds
    return out


THESIS_SIZE = (27_639, 33_167)  # D_50^Pop's |D| (Table 3); members generated, 1.2 per patient


def thesis_size(size: tuple[int, int] = THESIS_SIZE, name: str = "lda_thesis_size",
                options: dict | None = None) -> dict:
    """A-GS, thesis setting (or ``options``: more LDAConfig fields, e.g. a
    release file's ``release_settings``), on the generator's D_50-shaped cohort
    at D_50^Pop's 27,639 patients (``size``: patients, members generated):
    LDA's time and memory at the thesis' scale, and whether the generator's
    figure grows with the cohort (benchmarks/lda.md)."""
    pairs = d50_synthetic(*size).drop(columns="service_date")  # as ``cohort`` runs it
    options = options or {}
    return run_benchmark(name,
                         lambda: {"data": describe(pairs),
                                  "a-gs": anonymize(pairs, "a-gs", **options)},
                         k=K, w_icd=0.5, w_age=0.5, seed=options.get("seed", SEED),
                         options=options,
                         note=f"d50_synthetic{size}; data generated before the clock")


WEIGHTS = (0.5, 0.55, 0.6, 0.7, 0.8)
WEIGHT_SEEDS = (2011, 20085, 1, 2, 3)
# releases/lda_trajectories.yaml until 2026-11-29 (benchmarks/lda.md, "The release file's setting")
RELEASE_FILE_BEFORE = {"member_weighted": True, "refine_rounds": 4}


def weights() -> dict:
    """w_ICD from 0.5 to 0.8 (IV.4.6, Fig. 15) on ``synpuf_release`` and
    ``synpuf_d50``, thesis and release-file settings (``RELEASE_FILE_BEFORE``), seed
    ``SEED``; and w_ICD = 0.55, release-file setting, over ``WEIGHT_SEEDS`` on those two
    and ``synpuf_d4`` (benchmarks/lda.md, "The attribute weights")."""
    cohorts = {name: pairs.drop(columns="service_date")
               for name, pairs in synpuf_cohorts(synpuf_pairs()).items()}

    def run(name, w, seed, options):
        result = lda(cohorts[name], LDAConfig(k=K, alignment="a-gs", seed=seed,
                                              w_icd=w, w_age=round(1 - w, 2), **options))
        verdict = verify_lda(result.records, result.pseudonym_map, cohorts[name], K)
        return {"verifier_ok": verdict.ok,
                **{key: result.metrics[key] for key in SHORT if key in result.metrics}}

    sweep = {f"{name} w_icd={w} {label}": run(name, w, SEED, options)
             for name in ("synpuf_release", "synpuf_d50") for w in WEIGHTS
             for label, options in (("thesis", {}), ("release_file", RELEASE_FILE_BEFORE))}
    seeds = {f"{name} w_icd=0.55 release_file seed={seed}": run(name, 0.55, seed, RELEASE_FILE_BEFORE)
             for name in ("synpuf_release", "synpuf_d50", "synpuf_d4") for seed in WEIGHT_SEEDS}
    return {"sweep": sweep, "seeds": seeds}


BONUSES = (0.5, 1.0, 1.5, 2.0)
BONUS_WEIGHTS = ((2.0, 0.4), (2.0, 0.3), (4.0, 0.2))  # the bonus with weight moved to ages


def shared_code_bonus() -> dict:
    """The opt-in ``shared_code_bonus`` (benchmarks/lda.md, "Clusters that share
    codes"): each SynPUF code selection of Sample 1's 2010 inpatient claims
    (``sample1_pairs``) and of TestB, at the thesis setting and with each of
    ``BONUSES``; on Sample 1 also the release-file setting, alone and with a
    bonus of 1, and ``BONUS_WEIGHTS``; and ``kept_bound`` of each cohort."""
    out = {}
    for source, pairs in (("sample1_2010", sample1_pairs()), ("testb", synpuf_pairs())):
        for name, cohort_pairs in synpuf_cohorts(pairs).items():
            plain = cohort_pairs.drop(columns="service_date")
            runs = {"thesis": {}, **{f"bonus={b}": {"shared_code_bonus": b} for b in BONUSES}}
            if source == "sample1_2010":
                runs |= {"release_file": RELEASE_FILE_BEFORE,
                         "release_file+bonus=1.0": {**RELEASE_FILE_BEFORE, "shared_code_bonus": 1.0},
                         **{f"bonus={b} w_icd={w}": {"shared_code_bonus": b, "w_icd": w,
                                                     "w_age": round(1 - w, 2)}
                            for b, w in BONUS_WEIGHTS}}
            out[f"{source}.{name}"] = {
                "data": describe(cohort_pairs), "kept_bound": round(kept_bound(cohort_pairs), 1),
                **{label: short(anonymize(plain, "a-gs", **options))
                   for label, options in runs.items()}}
    return out


AGE_BLOCK = 16  # the thesis' "16 years or finer" figure's interval
BLOCK_BONUSES = (2.0, 4.0, 8.0)
LOOKAHEAD = 20


def age_block() -> dict:
    """The opt-in ``age_block`` with the shared-code bonus (benchmarks/lda.md,
    "Codes and ages together"): each SynPUF code selection of Sample 1's 2010
    inpatient claims and of TestB at the thesis setting, with the bonus alone
    (b = 4), with each of ``BLOCK_BONUSES`` and a 16-year block, and the
    release-file setting with b = 4 and the block, and b = 4 with the block and
    a look-ahead of ``LOOKAHEAD``; the D_50 cohorts also over ``WEIGHT_SEEDS`` at
    b = 4 and 8, and with the look-ahead over two more seeds."""
    block = {"age_block": AGE_BLOCK}
    ahead = {"shared_code_bonus": 4.0, **block, "lookahead": LOOKAHEAD}
    out = {}
    for source, pairs in (("sample1_2010", sample1_pairs()), ("testb", synpuf_pairs())):
        for name, cohort_pairs in synpuf_cohorts(pairs).items():
            runs = {"thesis": {}, "bonus=4.0": {"shared_code_bonus": 4.0},
                    **{f"bonus={b} age_block=16": {"shared_code_bonus": b, **block}
                       for b in BLOCK_BONUSES},
                    "release_file+bonus=4.0 age_block=16": {
                        **RELEASE_FILE_BEFORE, "shared_code_bonus": 4.0, **block},
                    f"bonus=4.0 age_block=16 lookahead={LOOKAHEAD}": ahead}
            if name == "synpuf_d50":
                runs |= {f"bonus={b} age_block=16 seed={seed}": {
                    "shared_code_bonus": b, **block, "seed": seed}
                    for b in (4.0, 8.0) for seed in WEIGHT_SEEDS if seed != SEED}
                runs |= {f"bonus=4.0 age_block=16 lookahead={LOOKAHEAD} seed={seed}": {
                    **ahead, "seed": seed} for seed in WEIGHT_SEEDS[1:3]}
            plain = cohort_pairs.drop(columns="service_date")
            out[f"{source}.{name}"] = {
                "data": describe(cohort_pairs),
                **{label: short(anonymize(plain, "a-gs", **options))
                   for label, options in runs.items()}}
    return out


RELEASE_ICD10 = RELEASE.with_name("lda_trajectories_icd10.yaml")
GENERATED_SIZES = ((1_000, 1_200), (4_000, 4_800))  # d50_synthetic (patients, members)


def release_settings(path: Path = RELEASE) -> dict:
    """The LDAConfig fields a release file sets beyond the benchmark's own
    (k, A-GS, w_ICD 0.5, the data's domain): its seed and its opt-in deviations
    (``OPT_IN``).  A file that changes one of the benchmark's own is refused,
    so that its figures never describe a setting the file does not ship."""
    params = yaml.safe_load(path.read_text())["params"]
    own = {"k": K, "alignment": "a-gs", "w_icd": 0.5, "icd_domain": "data"}
    changed = [name for name, value in own.items() if params.get(name, value) != value]
    if changed:
        raise ValueError(f"{path.name} sets {', '.join(changed)} away from the benchmark's "
                         f"{own}: release_file() would not measure the file's setting")
    return {"seed": params["seed"], **{name: params[name] for name in OPT_IN if name in params}}


def release_file() -> dict:
    """The shipped release files' setting against ``RELEASE_FILE_BEFORE`` and the
    thesis setting, each with the file's seed (benchmarks/lda.md, "The release
    file's setting"): every SynPUF code selection of Sample 1's 2010 inpatient
    claims and of TestB, with ``kept_bound`` and ``codes_first`` (codes alone,
    and within ``AGE_BLOCK``-year nodes), and TestB's release cohort carried to
    ICD-10-CM by the GEM as ``bench_icd10`` carries it, with
    ``lda_trajectories_icd10.yaml``'s setting; and the generator's D_50-shaped
    cohort at ``GENERATED_SIZES`` (thesis and file setting)."""
    from benchmarks import bench_icd10

    now, now10 = release_settings(), release_settings(RELEASE_ICD10)
    runs = {"thesis": {"seed": now["seed"]}, "before": {**RELEASE_FILE_BEFORE, "seed": now["seed"]},
            "release_file": now}
    out = {"settings": {"before": RELEASE_FILE_BEFORE, "release_file": now,
                        "release_file_icd10": now10}}
    for source, pairs in (("sample1_2010", sample1_pairs()), ("testb", synpuf_pairs())):
        for name, cohort_pairs in synpuf_cohorts(pairs).items():
            plain = cohort_pairs.drop(columns="service_date")
            out[f"{source}.{name}"] = {
                "data": describe(cohort_pairs), "kept_bound": round(kept_bound(plain), 1),
                "codes_first": round(codes_first(plain), 1),
                f"codes_first_{AGE_BLOCK}y": round(codes_first(plain, width=AGE_BLOCK), 1),
                **{label: short(anonymize(plain, "a-gs", **options))
                   for label, options in runs.items()}}
    pairs = synpuf_pairs(limit=bench_icd10.PATIENTS)
    mapping = bench_icd10.gem_forward(pd.read_csv(bench_icd10.GEM, dtype=str),
                                      sources=pairs["code"].unique())
    both, _ = bench_icd10.mapped_cohort(
        synpuf_cohorts(pairs)["synpuf_release"].drop(columns="service_date"), mapping)
    icd10 = both[["patient_id", "icd10", "age"]].rename(columns={"icd10": "code"})
    out["testb_icd10.synpuf_release"] = {
        "data": describe(icd10),
        **{label: short(anonymize(icd10, "a-gs", code_system="icd10cm", **options))
           for label, options in {**runs, "release_file": now10}.items()}}
    for size in GENERATED_SIZES:  # the larger, D_50^Pop's: --thesis-size --release-file
        generated = d50_synthetic(*size).drop(columns="service_date")
        out[f"d50_synthetic.{size[0]}"] = {
            "data": describe(generated),
            **{label: short(anonymize(generated, "a-gs", **runs[label]))
               for label in ("thesis", "release_file")}}
    return out


def main(small: bool = False) -> dict:
    n_patients, n_members = SIZES[small]
    return run_benchmark("lda_small" if small else "lda", lambda: figures(small),
                         k=K, w_icd=0.5, w_age=0.5, seed=SEED,
                         note="d50_synthetic: anonymizers.synthetic SyntheticConfig(n_members="
                              f"{n_members}, seed={SEED}, {GENERATOR}) -> "
                              f"synthetic_views.trajectories({D50}, n_patients="
                              f"{n_patients})")


if __name__ == "__main__":
    if "--bound" in sys.argv:
        for name, cohort_pairs in synpuf_cohorts(synpuf_pairs()).items():
            print(f"{name}: at most {kept_bound(cohort_pairs):.1f}% of ICD values at "
                  f"3-digit or finer (k={K})")
    elif "--thesis-size" in sys.argv and "--release-file" in sys.argv:
        thesis_size(name="lda_thesis_size_release_file", options=release_settings())
    elif "--thesis-size" in sys.argv:
        thesis_size()
    elif "--shared-codes" in sys.argv:
        run_benchmark("lda_shared_codes", shared_code_bonus, k=K, seed=SEED,
                      note="sample1_2010: benchmarks/data/SOURCES.md")
    elif "--age-block" in sys.argv:
        run_benchmark("lda_age_block", age_block, k=K, seed=SEED, seeds=WEIGHT_SEEDS,
                      note="sample1_2010: benchmarks/data/SOURCES.md")
    elif "--release-file" in sys.argv:
        run_benchmark("lda_release_file", release_file, k=K, seed=release_settings()["seed"],
                      note="sample1_2010: benchmarks/data/SOURCES.md; ICD-10-CM: bench_icd10's GEM")
    elif "--weights" in sys.argv:
        run_benchmark("lda_weights", weights, k=K, seed=SEED, seeds=WEIGHT_SEEDS)
    else:
        main()
