"""MedCo dummies that persist across successive releases (issue 25): carried over and retired at
the rate real patients leave, topped up by ``generate``'s joint plan; seeds keyed and recorded.
Readings chosen and why: docs/methods/medco.md#dummies-persist."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from anonymizers.dummies import generate
from anonymizers.dummies.batch import Batch
from anonymizers.dummies.config import DummyConfig
from anonymizers.dummies.inputs import check_clusters, encode_input, widen
from anonymizers.dummies.profiles import profile_ids
from anonymizers.dummies.release import assemble
from anonymizers.dummies.results import DummyResult, NoReleaseError
from anonymizers.errors import InputError, ParameterError
from anonymizers.io import read_json, write_json
from anonymizers.pseudonyms import generator, keyed
from anonymizers.records import Records

VERSION = 1
DUMMY_COLUMNS = ["dummy_id", "source_patient_id", "source_digest", "born", "code"]
STATE_JSON, DUMMIES_CSV = "state.json", "dummies.csv"
RETIRE_REASONS = ("code_not_clustered", "repeats_real_set", "turnover", "no_source")


@dataclass(frozen=True)
class State:
    """Private state of a MedCo release lineage: the dummies of the last release.

    ``generation``: releases made so far in the lineage (the last one's
    number).  ``dummies``: one row per (dummy, code) with columns
    ``dummy_id`` (stable across runs, never released), ``source_patient_id``
    (the real patient it was made from), ``source_digest`` (SHA-256 of the
    source's sorted codes when the dummy was released), ``born`` (generation
    of its first release) and ``code``.  It links dummies across runs and
    names real patients: keep it with the dummy maps, never in a release.
    """

    generation: int
    dummies: pd.DataFrame
    clusters: list[list[str]]

    def to_frames(self) -> dict[str, pd.DataFrame]:
        """The state as tables: ``medco_state`` (one row: version, generation),
        ``medco_state_dummies`` (``DUMMY_COLUMNS``) and ``medco_state_clusters``
        (cluster, code)."""
        meta = pd.DataFrame({"version": [VERSION], "generation": [self.generation]})
        clusters = pd.DataFrame([(j, c) for j, cl in enumerate(self.clusters) for c in cl],
                                columns=["cluster", "code"])
        return {"medco_state": meta, "medco_state_dummies": self.dummies[DUMMY_COLUMNS].copy(),
                "medco_state_clusters": clusters}

    @classmethod
    def from_frames(cls, frames: dict[str, pd.DataFrame]) -> "State":
        meta, dummies = frames.get("medco_state"), frames.get("medco_state_dummies")
        clusters = frames.get("medco_state_clusters")
        if meta is None or dummies is None or clusters is None or len(meta) != 1:
            raise InputError("previous state", "needs the tables medco_state (one row), "
                             "medco_state_dummies and medco_state_clusters")
        if int(meta["version"].iloc[0]) != VERSION:
            raise InputError("previous state", f"version {meta['version'].iloc[0]} is not "
                             f"{VERSION}")
        missing = [c for c in DUMMY_COLUMNS if c not in dummies.columns]
        if missing:
            raise InputError("previous state", f"medco_state_dummies lacks columns {missing}")
        dummies = dummies[DUMMY_COLUMNS].astype({"dummy_id": str, "source_patient_id": str,
                                                 "source_digest": str, "born": np.int64,
                                                 "code": str})
        clusters = clusters.astype({"cluster": np.int64, "code": str}).sort_values(
            ["cluster", "code"])
        return cls(int(meta["generation"].iloc[0]), dummies.reset_index(drop=True),
                   [g["code"].tolist() for _, g in clusters.groupby("cluster", sort=True)])


def write_state(state: State, folder: str | Path) -> None:
    """Write ``state`` to ``folder`` (created if absent): ``state.json``
    (version, generation and the clusters, in the format of ``cluster-codes``)
    and ``dummies.csv`` (``DUMMY_COLUMNS``).  Private: it names real patients
    and links dummies across releases."""
    folder = Path(folder)
    folder.mkdir(exist_ok=True)
    write_json({"version": VERSION, "generation": state.generation,
                "clusters": state.clusters}, folder / STATE_JSON)
    state.dummies[DUMMY_COLUMNS].to_csv(folder / DUMMIES_CSV, index=False)


def read_state(folder: str | Path) -> State:
    """The state written by ``write_state``; InputError naming what is wrong."""
    folder = Path(folder)
    meta = read_json(folder / STATE_JSON)
    if not isinstance(meta, dict) or not {"version", "generation", "clusters"} <= set(meta):
        raise InputError(str(folder / STATE_JSON), "expected an object with version, "
                         "generation and clusters")
    try:
        dummies = pd.read_csv(folder / DUMMIES_CSV, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(str(folder / DUMMIES_CSV), f"cannot be read: {exc}") from None
    clusters = pd.DataFrame([(j, c) for j, cl in enumerate(meta["clusters"]) for c in cl],
                            columns=["cluster", "code"])
    return State.from_frames({"medco_state": pd.DataFrame(
        {"version": [meta["version"]], "generation": [meta["generation"]]}),
        "medco_state_dummies": dummies, "medco_state_clusters": clusters})


def apply(df: pd.DataFrame, clusters, config: DummyConfig,
          previous: State | None = None) -> tuple[DummyResult, State]:
    """The release of ``df`` (``patient_id, code``) with dummies carried from
    ``previous`` and topped up (see docs/methods/medco.md#dummies-persist), and the new state.

    ``previous=None`` starts a lineage (generation 1: every dummy is new).
    With a previous state, ``clusters=None`` takes ``clusters_for(df,
    previous)``; other clusters are used as given, and
    ``metrics["clusters_kept"]`` says whether they keep the lineage's.  The
    clusters used are ``state.clusters`` (verify the release against them).
    """
    if clusters is None:
        if previous is None:
            raise ParameterError("clusters", "required to start a lineage (no previous state)")
        clusters = clusters_for(df, previous)
    generation = 1 if previous is None else previous.generation + 1
    run_config = replace(config, seed=run_seed(config, generation))
    raw = encode_input(df)
    cluster_codes = check_clusters(clusters, raw.codes)
    vocab = np.array(sorted(c for cl in cluster_codes for c in cl), dtype=object)
    records = widen(raw, vocab)
    ctx, carried, dummies, metrics = _carry_and_top_up(previous, records, cluster_codes,
                                                       run_config, generation, 0)
    forced = dummies.n - carried.batch.n - sum(carried.retired.values())
    counted = 0
    if forced > 0 and carried.retired["turnover"] > 0:
        try:
            ctx, carried, dummies, metrics = _carry_and_top_up(previous, records, cluster_codes,
                                                               run_config, generation, forced)
            counted = forced
        except NoReleaseError:
            pass  # more carried dummies left no top-up: the first pass's release stands
    metrics |= {"generation": generation, "seed": config.seed, "forced_new_counted": counted,
                "previous_dummies": _n_dummies(previous), "carried_dummies": carried.batch.n,
                "new_dummies": dummies.n - carried.batch.n, "retired_dummies": carried.retired,
                "leaving_rate": carried.leaving_rate, "resourced_dummies": carried.resourced,
                "clusters_kept": previous is None or keeps(previous.clusters, clusters)}
    released, dummy_map = assemble(records, dummies,
                                   generator(run_config.pseudonym_key, run_config.seed, ctx.rng))
    return (DummyResult(released, dummy_map, metrics),
            _next_state(records, dummies, carried, generation, clusters))


def _carry_and_top_up(previous, records, cluster_codes, run_config, generation: int,
                      forced: int):
    """``carry`` then ``_top_up`` on a fresh context (so both passes of
    ``apply`` draw the same random stream); ``forced``: the new dummies the
    top-up is expected to need beyond the retired ones' replacements."""
    ctx = generate._context(records, cluster_codes, run_config)
    carried = carry(previous, records, ctx.cluster_of, ctx.rng, forced)
    try:
        dummies, metrics = _top_up(ctx, carried.batch)
    except NoReleaseError as exc:
        if carried.batch.n == 0:
            raise
        raise NoReleaseError(
            f"no release keeps the {carried.batch.n} dummies carried from generation "
            f"{generation - 1}: {exc.problem} -- the carried dummies were held fixed; starting "
            "a new lineage (no previous state) would release, but then this release and the "
            "last could be compared (issue 25)") from None
    return ctx, carried, dummies, metrics


def _top_up(ctx, carried: Batch) -> tuple[Batch, dict]:
    """Every dummy of the release (carried ones first) and ``generate``'s
    metrics, from ``generate``'s exact route or planned rounds run on a
    context that already holds the carried dummies."""
    batches: list[Batch] = []
    if carried.n:
        own = profile_ids(ctx.profiles, ctx.cluster_of, carried.indptr, carried.codes)
        generate._commit(ctx, carried, batches, own)
    stats = dict.fromkeys(generate.STAT_KEYS, 0) | {"planned_ratio": 1.0, "plan_optimal": True}
    route, rounds = generate._exact(ctx, batches), 1
    if route is None:
        route, rounds = "plan", generate._planned_rounds(ctx, batches, stats)
    dummies = generate._concat(batches)
    metrics = generate._metrics(ctx, dummies, route, rounds, stats)
    if route == "exact":
        metrics["planned_ratio"] = metrics["real_ratio"]
    else:  # the first plan's ratio counts the new dummies only
        metrics["planned_ratio"] += len(carried.codes) / ctx.records.matrix.nnz
    return dummies, metrics


def _n_dummies(state: State | None) -> int:
    return 0 if state is None else int(state.dummies["dummy_id"].nunique())


def clusters_for(df: pd.DataFrame, previous: State) -> list[list[str]]:
    """The lineage's clusters for a new run: ``previous.clusters`` kept, each
    code they lack placed where it costs the fewest dummy occurrences.

    Keeping clusters is part of the defence: dummies carried over were made to
    flatten these clusters; reclustering would leave them unflat and the top-up
    would have to be large (measured on MEPS 3,000/2,700 with clusters redrawn
    from each run's data: 58,939 new dummies, real ratio 23.3 instead of 10.2).
    Placement of a new code of frequency ``f`` in cluster ``j`` (``n_j`` codes,
    top frequency ``T_j`` over real patients and previous dummies) costs
    ``max(0, T_j - f)`` occurrences to raise it, plus ``n_j (f - T_j)`` when it
    would raise the whole cluster; ties go to the first cluster.  Clusters
    only grow, so a minimum anonymity set they met stays met.
    """
    real = df["code"].astype(str).unique()
    freq = (df.assign(code=df["code"].astype(str)).drop_duplicates(["patient_id", "code"])
            ["code"].value_counts())
    freq = freq.add(previous.dummies["code"].value_counts(), fill_value=0)
    clusters = [list(c) for c in previous.clusters]
    top = np.array([max((freq.get(c, 0) for c in cl), default=0) for cl in clusters], float)
    size = np.array([len(cl) for cl in clusters], dtype=float)
    known = {c for cl in clusters for c in cl}
    for code in sorted(set(real) - known):
        f = float(freq.get(code, 0))
        j = int(np.argmin(np.maximum(0, top - f) + size * np.maximum(0, f - top)))
        clusters[j].append(code)
        top[j], size[j] = max(top[j], f), size[j] + 1
    return [sorted(cl) for cl in clusters]


def keeps(old, new) -> bool:
    """Whether every cluster of ``old`` lies inside one cluster of ``new``."""
    where = {c: j for j, cl in enumerate(new) for c in cl}
    return all(len({where.get(c) for c in cl}) == 1 and where.get(cl[0]) is not None
               for cl in old if cl)


def run_seed(config: DummyConfig, generation: int) -> int:
    """The seed of generation ``generation``'s random choices: keyed by the
    pseudonym key when there is one, else drawn from the seed and generation."""
    if config.pseudonym_key is not None:
        rng = keyed(config.pseudonym_key, f"{config.seed}\x1f{generation}", "medco-persist")
    else:
        rng = np.random.default_rng([config.seed, generation])
    return int(rng.integers(0, 2 ** 62))


def digests(records: Records) -> np.ndarray:
    """SHA-256 hex digest of every record's sorted codes (equal sets, equal digests)."""
    m = records.matrix
    codes = records.codes
    return np.array([_digest(codes[m.indices[a:b]]) for a, b in zip(m.indptr[:-1], m.indptr[1:])],
                    dtype=object)


def _digest(codes) -> str:
    return hashlib.sha256("\x1f".join(sorted(map(str, codes))).encode()).hexdigest()


@dataclass(frozen=True)
class Carried:
    """The dummies kept from the previous state: ``batch`` over the current
    code vocabulary (sources as record indices), their ``ids`` and ``born``
    generations in batch order, the count of the others by reason, the
    leaving rate they were retired at and how many changed source."""

    batch: Batch
    ids: np.ndarray
    born: np.ndarray
    retired: dict
    leaving_rate: float = 0.0
    resourced: int = 0


def carry(previous: State | None, records: Records, cluster_of: np.ndarray,
          rng: np.random.Generator, forced_new: int = 0) -> Carried:
    """Which dummies of ``previous`` live on in a release of ``records``
    (``cluster_of``: cluster of each code of ``records.codes``).

    Forced out: a dummy with a code in no cluster, or whose set is now a real
    patient's.  Then dummies retire at the rate real patients left (or
    changed), estimated on the dummies' distinct sources -- the previous real
    patients, since every one is duplicated when possible -- those whose own
    source left first, the rest at random (``rng``).  A kept dummy whose
    source left or changed takes a present patient of the same profile
    (codes per cluster) as its source, else one with as many codes; with
    neither it retires (``no_source``).  ``forced_new``: new dummies the
    release needs beyond replacing the retired ones; they count against the
    turnover (``_turnover_target``).
    """
    if previous is None or len(previous.dummies) == 0:
        return Carried(_empty(), np.zeros(0, dtype=object), np.zeros(0, np.int64),
                       dict.fromkeys(RETIRE_REASONS, 0))
    d = previous.dummies.sort_values(["dummy_id", "code"], kind="stable")
    ids, first = np.unique(d["dummy_id"].to_numpy(dtype=str), return_index=True)
    code_lists = np.split(d["code"].to_numpy(dtype=object), first[1:])
    real_digest = digests(records)
    index = pd.Series(np.arange(records.n_records), index=records.patients.astype(str))
    source = d["source_patient_id"].to_numpy(dtype=str)[first]
    src = index.reindex(source).to_numpy()
    gone = np.isnan(src)
    src = np.where(gone, 0, src).astype(np.int64)
    gone |= real_digest[src] != d["source_digest"].to_numpy(dtype=str)[first]
    unclustered = ~np.logical_and.reduceat(d["code"].isin(pd.Index(records.codes)).to_numpy(),
                                           first)
    repeats = np.isin(np.array([_digest(c) for c in code_lists], dtype=object), real_digest)
    rate = float(pd.Series(gone).groupby(source).all().mean())
    forced = unclustered | repeats
    turnover = _turnover(gone, forced, _turnover_target(rate, len(ids), forced_new), rng)
    alive = ~forced & ~turnover
    codes = [np.searchsorted(records.codes, c) if a else None for c, a in zip(code_lists, alive)]
    src, orphan = _resource(src, gone & alive, codes, records, cluster_of, rng)
    alive &= ~orphan
    retired = {"code_not_clustered": int(unclustered.sum()),
               "repeats_real_set": int((repeats & ~unclustered).sum()),
               "turnover": int(turnover.sum()), "no_source": int(orphan.sum())}
    keep = np.flatnonzero(alive)
    batch = _batch(src[keep], [codes[i] for i in keep])
    born = d["born"].to_numpy(dtype=np.int64)[first][keep]
    return Carried(batch, ids[keep].astype(object), born, retired, round(rate, 4),
                   int((gone & alive).sum()))


def _turnover_target(rate: float, n_dummies: int, forced_new: int) -> int:
    """How many dummies retire so that, counting the ``forced_new`` dummies
    the top-up must add anyway (to re-flatten what changed patients moved),
    the share of never-released sets among the dummies is the real patients'
    leaving rate: (retired + forced_new) / (n_dummies + forced_new) = rate."""
    return max(0, int(round(rate * (n_dummies + forced_new))) - forced_new)


def _turnover(gone: np.ndarray, forced: np.ndarray, target: int,
              rng: np.random.Generator) -> np.ndarray:
    """Dummies to retire so that, with the forced ones, ``target`` retire:
    those whose source is gone first, then at random."""
    out = np.zeros(len(gone), dtype=bool)
    extra = max(0, target - int(forced.sum()))
    cand = np.flatnonzero(~forced)
    order = cand[np.lexsort((rng.random(len(cand)), ~gone[cand]))]
    out[order[:extra]] = True
    return out


def _resource(src: np.ndarray, need: np.ndarray, codes: list, records: Records,
              cluster_of: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """New sources for the dummies ``need``: a random present patient of the
    same profile, else of the same size; the mask of those with neither."""
    src, orphan = src.copy(), np.zeros(len(src), dtype=bool)
    if not need.any():
        return src, orphan
    n_cl = int(cluster_of.max()) + 1 if len(cluster_of) else 1
    m = records.matrix
    rows = np.repeat(np.arange(records.n_records), np.diff(m.indptr))
    counts = np.zeros((records.n_records, n_cl), dtype=np.int64)
    np.add.at(counts, (rows, cluster_of[m.indices]), 1)
    by_profile = pd.Series(np.arange(records.n_records)).groupby(
        [c.tobytes() for c in counts]).apply(np.asarray)
    by_size = pd.Series(np.arange(records.n_records)).groupby(counts.sum(axis=1)).apply(
        np.asarray)
    for i in np.flatnonzero(need):
        profile = np.bincount(cluster_of[codes[i]], minlength=n_cl).astype(np.int64)
        pool = by_profile.get(profile.tobytes())
        if pool is None:
            pool = by_size.get(int(profile.sum()))
        if pool is None:
            orphan[i] = True
        else:
            src[i] = pool[rng.integers(len(pool))]
    return src, orphan


def _batch(src: np.ndarray, codes: list) -> Batch:
    if len(src) == 0:
        return _empty()
    sizes = np.array([len(c) for c in codes], dtype=np.int64)
    return Batch(src.astype(np.int64), np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
                 np.concatenate(codes).astype(np.int64))


def _empty() -> Batch:
    return Batch(np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros(0, np.int64))


def _next_state(records: Records, dummies: Batch, carried: Carried, generation: int,
                clusters) -> State:
    """The state after this release: every dummy released, carried ones first
    (``dummies`` starts with them), with their source's current digest."""
    n_new = dummies.n - carried.batch.n
    ids = np.concatenate([carried.ids, np.array([f"g{generation}-{i}" for i in range(n_new)],
                                                dtype=object)])
    born = np.concatenate([carried.born, np.full(n_new, generation, dtype=np.int64)])
    sizes = np.diff(dummies.indptr)
    source = records.patients.astype(str)[dummies.src]
    dig = digests(records)[dummies.src]
    frame = pd.DataFrame({"dummy_id": np.repeat(ids, sizes).astype(str),
                          "source_patient_id": np.repeat(source, sizes).astype(str),
                          "source_digest": np.repeat(dig, sizes).astype(str),
                          "born": np.repeat(born, sizes),
                          "code": records.codes[dummies.codes].astype(str)})
    return State(generation, frame, [sorted(map(str, c)) for c in clusters])
