"""``python -m anonymizers dummies``: MedCo dummy patients (Zoveralli, section 3).

Reads ``patient_id,code`` rows and the clusters JSON of ``cluster-codes``;
writes the release (``patient_id,code`` under fresh pseudonyms) and the
private map (``pseudonym,is_dummy,source_patient_id``).  The pseudonyms are
drawn under the key of ``--pseudonym-key-file`` or under a fresh key nobody
keeps (``anonymizers.cli.options``; the metrics' ``pseudonyms`` says which),
not from ``--seed``.  The independent
verifier checks the release first (``--no-verify`` skips it): when it fails,
nothing is written and the exit status is 1.  Metrics (with the seed) and
the verdict are printed as JSON.  An
input that admits no release (``NoReleaseError``) writes nothing, prints
one error line and exits with status 2.

Successive releases (issue 25, ``anonymizers.dummies.persist``): ``--state
DIR`` starts or continues a release lineage and writes its new state to DIR;
``--previous-state DIR`` reads the state the previous run wrote, carries its
dummies over and, without ``--clusters``, keeps its clusters.  The state
(``state.json``: version, generation, clusters; ``dummies.csv``: dummy_id,
source_patient_id, source_digest, born, code) is private like the dummy map:
it names real patients and links dummies across releases.  With ``--state``
the key draws the generation's random choices too (``persist.run_seed``), so
a lineage run is drawn again only with the same ``--pseudonym-key-file``;
without one it cannot be drawn again at all.

``--code-system`` (icd9cm, the default, or icd10cm), ``--drop-unknown``,
``--mixed`` and ``--gem`` check the input's codes before anything is drawn,
as every command reading codes does (``anonymizers.io.clean_codes``): an
unknown code exits 2 naming its row, writing nothing, or its row is dropped
and counted (``rows_dropped_unknown_code`` in the metrics), so it never
reaches the release.  Codes keep the input's spelling, which the clusters of
``cluster-codes`` (same input, same options) use too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from anonymizers.cli.options import (
    FRESH,
    add_config_options,
    add_pseudonym_key_option,
    add_verify_option,
    config_from_args,
    pseudonym_key,
)
from anonymizers.dummies import DummyConfig, NoReleaseError, generate_dummies, persist
from anonymizers.errors import InputError
from anonymizers.io import (
    add_code_system_arguments,
    read_codes,
    read_json,
)
from anonymizers.verify.dummies import verify_dummies


def add_arguments(parser) -> None:
    parser.add_argument("--input", required=True, help="CSV with columns patient_id,code")
    parser.add_argument("--clusters", default=None,
                        help="clusters JSON from cluster-codes (required without "
                             "--previous-state; with it, default: the state's clusters)")
    parser.add_argument("--output", required=True, help="released CSV to write (patient_id,code)")
    parser.add_argument("--dummy-map", required=True,
                        help="private CSV to write (pseudonym,is_dummy,source_patient_id)")
    parser.add_argument("--min-anonymity-set", type=int, default=None,
                        help="also verify that every cluster has at least this many codes")
    parser.add_argument("--previous-state", default=None,
                        help="private state folder of the previous release (needs --state)")
    parser.add_argument("--state", default=None,
                        help="private state folder to write for the next release")
    add_config_options(parser, DummyConfig)
    add_pseudonym_key_option(parser)
    add_verify_option(parser)
    add_code_system_arguments(parser)


def run(args) -> int:
    _check_state_options(args)
    key = pseudonym_key(args)
    config = config_from_args(DummyConfig, args, pseudonym_key=key.key)
    clean = read_codes(args.input, ["patient_id", "code"], args)
    df = clean.table
    previous = persist.read_state(args.previous_state) if args.previous_state else None
    if args.clusters is not None:
        clusters = _read_clusters(args.clusters)
    else:
        clusters = persist.clusters_for(df, previous)
    try:
        if args.state is None:
            result, state = generate_dummies(df, clusters, config), None
        else:
            result, state = persist.apply(df, clusters, config, previous)
    except NoReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    verdict = verify_dummies(df, result.released, result.dummy_map, clusters,
                             args.min_anonymity_set) if args.verify else None
    print(json.dumps({"metrics": {**result.metrics, "seed": config.seed,
                                  "pseudonyms": key.drawn, **_lineage_draws(state, key),
                                  **clean.metrics(args.code_system)},
                      "verdict": None if verdict is None else verdict.as_dict()}, indent=1))
    if verdict is not None and not verdict.ok:
        print("error: the release failed verification; nothing was written", file=sys.stderr)
        return 1
    result.released.to_csv(args.output, index=False)
    result.dummy_map.to_csv(args.dummy_map, index=False)
    if state is not None:
        persist.write_state(state, args.state)
    return 0


def _lineage_draws(state, key) -> dict:
    """A lineage run under a fresh key says that its dummies, not only their
    labels, cannot be drawn again, even from the printed seed."""
    if state is None or key.drawn != FRESH:
        return {}
    return {"lineage_draws": "under the fresh key: this generation's dummies cannot be drawn "
                             "again, even from the seed; keep a --pseudonym-key-file to redraw"}


def _check_state_options(args) -> None:
    if args.previous_state is not None and args.state is None:
        raise InputError("--previous-state", "needs --state: a run that continues a lineage "
                         "must write the state the next run reads")
    if args.previous_state is None and args.clusters is None:
        raise InputError("--clusters", "required unless --previous-state gives the clusters")
    if args.state is not None:
        folder = Path(args.state)
        if folder.exists() and not folder.is_dir():
            raise InputError(f"--state {args.state}", "is a file, not a folder")
        if not folder.parent.is_dir():
            raise InputError(f"--state {args.state}",
                             f"the folder {str(folder.parent)!r} does not exist")


def _read_clusters(path: str) -> list:
    data = read_json(path)
    if not isinstance(data, dict) or "clusters" not in data:
        raise InputError(path, 'expected a JSON object {"clusters": [["code", ...], ...]}')
    return data["clusters"]
