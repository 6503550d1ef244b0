"""MedCo (seed 003): code clustering, then dummy patients flattening code
frequencies inside each cluster; codes are released as keyed tokens.

Dummy generation is one task, not one per code cluster: a dummy copies a real
patient's number of codes in every cluster at once (section 3.2: "the same
weight"), the dummies of all clusters are planned together so that filling
one cluster does not overflow another, and no two released patients may
share a full code set.  Clusters filled apart would break all three
(``anonymizers.dummies.generate``).  An input that admits no release stops
the run with ``NoReleaseError`` (an ``InputError``) instead of loading an
unflattened or empty table.

Successive releases (issue 25): dummies persist as long as their source
patients do (``anonymizers.dummies.persist``).  A run starts from the state
of the release's last published run (``deid.history``, restricted schema),
and its new state is stored with its load, in the swap's transaction
(``state_parts``), so that the next run's dummies continue this one's.  The
stored state names a dummy's source patient by its keyed link
(``deid.history.link``), never by the source id; a run maps the links back
to its own patients' ids, and a dummy whose source left matches none.
"""

from __future__ import annotations

import pandas as pd

from deid import history, staging, validation
from deid import load as load_mod
from deid.methods import form
from deid.secret import code_token_key, key_fingerprint, pseudonym_key

TITLE = "MedCo dummy patients"
PARAMS = {
    # medco protects the PPE constraints: its k is PPE's
    **form.params("ppe", ["k"]),
    **form.params("medco_clusters", ["min_anonymity_set", "n_clusters", "frequency_step"],
                  limits={"min_anonymity_set": {"maximum": 100_000},
                          "n_clusters": {"maximum": 10_000}}, min_anonymity_set=20),
    **form.params("medco", ["seed"]),
}
STEPS = ("cluster_codes", "dummies")


def _patient_codes(run) -> pd.DataFrame:
    return (pd.read_parquet(run.path(staging.CLAIMS), columns=["patient_id", "code"])
            .drop_duplicates(ignore_index=True))


def cluster_codes(run, params) -> dict:
    from anonymizers.dummies import ClusterConfig
    from anonymizers.dummies import cluster_codes as cluster

    result = cluster(_patient_codes(run), ClusterConfig(
        min_anonymity_set=params["min_anonymity_set"], n_clusters=params["n_clusters"],
        frequency_step=params["frequency_step"]))
    run.write_json(staging.CLUSTERS, {"clusters": result.clusters})
    return {"clusters": len(result.clusters), **run.small(result.metrics)}


def dummies(run, params) -> dict:
    """The release with the dummies carried from the last published run's
    state and topped up; the new state is staged for the load.  A run that
    continues a lineage keeps its clusters (``persist.clusters_for``: the
    carried dummies flatten those), and ``clusters.json`` becomes the
    clusters used, which the verifier checks the release against."""
    from anonymizers.dummies import DummyConfig
    from anonymizers.dummies.persist import State, apply

    patients = _patient_codes(run)
    key = pseudonym_key()
    since, frames = history.last_state(run.release, run.run_id)
    previous = State.from_frames(_state_in(frames, patients["patient_id"], key)) \
        if frames else None
    clusters = run.read_json(staging.CLUSTERS)["clusters"] if previous is None else None
    result, state = apply(patients, clusters, DummyConfig(seed=params["seed"],
                                                          pseudonym_key=key), previous=previous)
    run.write_json(staging.CLUSTERS, {"clusters": [list(c) for c in state.clusters]})
    result.released.to_parquet(run.path(staging.RELEASED), index=False)
    result.dummy_map.to_parquet(run.path(staging.DUMMY_MAP), index=False)
    for name, frame in _state_out(state.to_frames(), key).items():
        frame.to_parquet(run.path(staging.medco_state(name)), index=False)
    metrics = run.small(result.metrics)
    run.write_json(staging.METHOD_METRICS, metrics)
    run.write_json(staging.STATE_FROM, {"run_id": since, "had_state": bool(frames)})
    return metrics


SOURCE = "source_patient_id"


def _state_out(frames: dict[str, pd.DataFrame], key: bytes) -> dict[str, pd.DataFrame]:
    """The state to store: source ids replaced by their keyed links."""
    return {name: f.assign(**{SOURCE: history.link(f[SOURCE], key)}) if SOURCE in f else f
            for name, f in frames.items()}


def _state_in(frames: dict[str, pd.DataFrame], patient_ids: pd.Series,
              key: bytes) -> dict[str, pd.DataFrame]:
    """A stored state with the links of this run's patients mapped back to
    their ids; the link of a patient who left stays, matching no patient."""
    ids = pd.Series(pd.unique(patient_ids))
    back = pd.Series(ids.to_numpy(), index=history.link(ids, key).to_numpy())
    return {name: f.assign(**{SOURCE: f[SOURCE].map(back).fillna(f[SOURCE])})
            if SOURCE in f else f for name, f in frames.items()}


def state_parts(run) -> dict[str, pd.DataFrame]:
    """The new state as the load stores it (``deid.history`` parts ``state/<name>``)."""
    return {name: pd.read_parquet(path)
            for name, path in staging.medco_state_files(run.dir).items()}


def history_inputs(run, params, key: bytes) -> dict:
    """What MedCo's cross-release check (``deid.cross_release``) reads of this
    run: the release and its dummy map, source patients by keyed link."""
    dummy_map = pd.read_parquet(run.path(staging.DUMMY_MAP))
    return {"released": pd.read_parquet(run.path(staging.RELEASED)),
            "dummy_map": dummy_map.assign(**{SOURCE: history.link(dummy_map[SOURCE].astype(str),
                                                                   key)})}


def verify(run, params) -> list[dict]:
    from anonymizers.verify.dummies import verify_dummies

    verdicts = verify_dummies(_patient_codes(run), pd.read_parquet(run.path(staging.RELEASED)),
                              pd.read_parquet(run.path(staging.DUMMY_MAP)),
                              run.read_json(staging.CLUSTERS)["clusters"],
                              params["min_anonymity_set"])
    return [v.as_dict() for v in (verdicts if isinstance(verdicts, list) else [verdicts])]


def gates(run, params, source) -> list:
    """Released codes come from this run's claims or, for a run continuing
    a lineage, from the lineage's clusters (a carried dummy keeps the codes
    it was released with, some of which no current patient may hold)."""
    released = pd.read_parquet(run.path(staging.RELEASED))
    clustered = [c for cluster in run.read_json(staging.CLUSTERS)["clusters"] for c in cluster]
    vocabulary = sorted(set(source.codes) | set(clustered))
    return [("released", released, validation.release_records_expectations(
        ["patient_id", "code"], "patient_id", "code", vocabulary,
        source.patients, expected_rows=len(released)))]


def release_tables(run, params, token_key: str) -> dict[str, pd.DataFrame]:
    released = pd.read_parquet(run.path(staging.RELEASED))
    tokens = load_mod.tokenize(released["code"], code_token_key(token_key))
    return {"medco_records": pd.DataFrame({"patient_pseudonym": released["patient_id"],
                                           "code_token": tokens})}


def restricted(run, params, token_key: str) -> dict:
    dummy_map = pd.read_parquet(run.path(staging.DUMMY_MAP))
    real = dummy_map[~dummy_map["is_dummy"]].set_index("source_patient_id")["pseudonym"]
    made_from = dummy_map["source_patient_id"].map(real).where(dummy_map["is_dummy"])
    return {"dummy_map": pd.DataFrame({"pseudonym": dummy_map["pseudonym"],
                                       "is_dummy": dummy_map["is_dummy"],
                                       "made_from": made_from}),
            "key_sha256": key_fingerprint(token_key)}  # never the key itself


def figures(run, params) -> list:
    """Code frequencies before and after dummies, sorted, as the MedCo report draws them."""
    import matplotlib.pyplot as plt

    before = _patient_codes(run)["code"].value_counts()
    after = pd.read_parquet(run.path(staging.RELEASED))["code"].value_counts()
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.5), sharey=True)
    for ax, counts, title in ((axes[0], before, "real patients"),
                              (axes[1], after, "released (real + dummy)")):
        ax.bar(range(len(counts)), counts.sort_values(ascending=False).to_numpy(), width=1.0)
        ax.set_title(f"Code frequencies, {title}")
        ax.set_xlabel("codes, most frequent first")
    axes[0].set_ylabel("patients with the code")
    return [("Code frequencies before and after dummy patients: inside each cluster the "
             "released frequencies are flat", fig)]
