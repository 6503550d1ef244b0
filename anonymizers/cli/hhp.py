"""``python -m anonymizers hhp``: the Heritage Health Prize claims release
(El Emam et al., JMIR 2012, Multimedia Appendix; ``anonymizers.claims``):
screening (section 2), truncation (section 1) and global recoding to the
least-loss lattice node whose measured risk is at most MaxSup (sections 5-11).

    python -m anonymizers hhp --members members.csv --claims claims.csv \\
        --output release/ --seed 2012 [--max-sup 0.05 --k 5 --p-max 5 ...] \\
        [--key key.csv]

Input, two CSV files (plain or gzip, UTF-8, a header line):

- ``--members``: ``member_id,sex[,birth_date]``, one row per member; sex
  ``1``/``2`` or ``M``/``F`` (CMS: 1 = male); birth_date ``YYYYMMDD`` or
  ``YYYY-MM-DD`` (DE-SynPUF's beneficiary summary, renamed).
- ``--claims``: ``member_id,claim_id,service_date,dx_code`` and optionally
  ``age_at_service``, ``other_dx_codes``, ``procedure_code``,
  ``place_of_service``, ``specialty``, ``length_of_stay`` (the columns of
  ``anonymizers.claims``) and ``code_version``; dx_code may be empty.  Dates
  are ``YYYY-MM-DD`` or ``YYYYMMDD``.

Codes: ``--code-system`` (icd9cm, the default, or icd10cm), ``--drop-unknown``,
``--mixed``/``--gem`` (``anonymizers.io.clean_codes``) check ``dx_code`` and
``other_dx_codes`` before anything else (``clean_dx_codes``); the metrics'
``codes`` counts what was dropped, mapped or kept as written.  The screening
policy (default: the bundled one of ``--code-system``), the hierarchies and
the claims must be of one code system, else exit 2 (docs/methods/hhp.md).

Reading chosen: a claim's age is its ``age_at_service`` when the claims have
that column, otherwise the member's age in whole calendar years on the
service date (a birthday on 29 February counts from 1 March in other years).
A claim whose member is not in ``--members`` is an input error; members
without claims are not released (they have nothing to release).

Output: ``DIR/members.csv`` and ``DIR/claims.csv`` (the release),
``DIR/metrics.json`` (the method's record, which the verifier reads: chosen
node, policy version, truncation threshold); a JSON report ``{"seed",
"metrics", "verdict", "files"}`` on stdout.  ``--key`` writes the pseudonym
-> source member id key (identifying: never release it).  The member
pseudonyms are drawn under the key of ``--pseudonym-key-file`` or under a
fresh key nobody keeps (``anonymizers.cli.options``; the metrics'
``pseudonyms`` says which), not from the seed.

Seed: ``--seed`` is required, as by every command that draws random numbers
(``anonymizers.cli.options``), and recorded in the metrics and the report;
it draws the risk experiment, not the pseudonyms.
The method's options come from ``HHPConfig``'s declaration.  The release is
verified by ``anonymizers.verify.claims`` unless ``--no-verify``; a release
that fails it is not written (exit 1).  A release that would keep no member
is refused (exit 2), as an unusable input.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from anonymizers import codesystems as cs
from anonymizers.claims import HHPConfig, hhp_release
from anonymizers.claims.codes import split_code_lists
from anonymizers.claims.groupings import hierarchies_code_system
from anonymizers.claims.inputs import OPTIONAL, _dates, _sex
from anonymizers.claims.screening import (
    NAMED_POLICIES,
    POLICY_CODE_SYSTEM,
    POLICY_OF_SYSTEM,
    policy_code_system,
)
from anonymizers.cli.options import (
    add_config_options,
    add_pseudonym_key_option,
    add_verify_option,
    config_from_args,
    pseudonym_key,
)
from anonymizers.errors import InputError
from anonymizers.io import (
    CODE_VERSION,
    add_code_system_arguments,
    clean_codes,
    read_table,
    write_json,
)
from anonymizers.verify.claims import verify_hhp

MEMBER_REQUIRED, MEMBER_OPTIONAL = ["member_id", "sex"], ["birth_date"]
CLAIM_REQUIRED = ["member_id", "claim_id", "service_date"]
CLAIM_OPTIONAL = (["dx_code", "age_at_service"] + [c for c in OPTIONAL if c != "birth_date"]
                  + [CODE_VERSION])
DX_FIELDS = ("dx_code", "other_dx_codes")  # the diagnosis columns whose codes are checked
SYSTEM_FLAG = {flag_system: flag for flag, flag_system in cs.VERSION_FLAGS.items()}
FILES = ("members.csv", "claims.csv", "metrics.json")
# the value a message of anonymizers.claims.inputs ends with: ": '...'", ", got '...'"
QUOTED = re.compile(r"(:|,\s*got)\s+('[^']*'|\"[^\"]*\"|-?[\d.]+|nan|None|NaT)$")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--members", required=True, metavar="CSV",
                        help="member_id,sex[,birth_date]; birth_date YYYY-MM-DD or YYYYMMDD")
    parser.add_argument("--claims", required=True, metavar="CSV",
                        help="member_id,claim_id,service_date,dx_code[,age_at_service,"
                             f"other_dx_codes,...,{CODE_VERSION}]; service_date YYYY-MM-DD "
                             "or YYYYMMDD (not RIF's 30-May-2015); "
                             f"{CODE_VERSION}: CMS's flag of the row's diagnosis codes "
                             "(9 ICD-9-CM, 0 ICD-10-CM), see --mixed")
    parser.add_argument("--output", dest="output_dir", required=True, metavar="DIR",
                        help=f"folder to write {', '.join(FILES)} in (created if missing)")
    parser.add_argument("--screening-policy", default=None, metavar="NAME|YAML",
                        help="bundled policy ("
                             + ", ".join(f"{n}: {s}" for n, s in POLICY_CODE_SYSTEM.items())
                             + ") or a policy YAML file; default: the bundled policy of "
                             "--code-system. The policy's, the hierarchies' and the claims' "
                             "code systems must agree")
    add_config_options(parser, HHPConfig)
    parser.add_argument("--key", metavar="CSV", default=None,
                        help="also write the pseudonym -> source member id key here "
                             "(identifying: never release it)")
    add_pseudonym_key_option(parser)
    add_verify_option(parser)
    add_code_system_arguments(parser)


def run(args: argparse.Namespace) -> int:
    out = _output_dir(args.output_dir)
    policy = _policy(args.screening_policy, args.code_system)
    key = pseudonym_key(args)
    config = _config(args, policy, key.key)
    _same_code_system(args.code_system, config)
    with _no_values(args.claims):
        claims = read_claims(args.members, args.claims)
        claims, codes = clean_dx_codes(claims, str(args.claims), args)
        result = hhp_release(claims, config)
    result.metrics["pseudonyms"] = key.drawn
    result.metrics["codes"] = codes
    if len(result.members) == 0 or len(result.claims) == 0:
        raise InputError(str(args.claims), "the release would keep no member or no claim "
                         f"(screening removed {result.metrics['members_removed_by_screening']}"
                         f" of {result.metrics['input']['members']} members); nothing written")
    verdict = None if not args.verify else verify_hhp(result, claims, config.policy_source,
                                                     config.hierarchies_source)
    report = {"seed": result.metrics["seed"], "metrics": result.metrics,
              "verdict": None if verdict is None else verdict.as_dict(),
              "files": [str(out / f) for f in FILES]}
    if verdict is not None and not verdict.ok:
        print(json.dumps(report, indent=1, default=_jsonable))
        print("error: the release failed verification; nothing was written", file=sys.stderr)
        return 1
    out.mkdir(exist_ok=True)
    result.members.to_csv(out / FILES[0], index=False)
    result.claims.to_csv(out / FILES[1], index=False)
    write_json(result.metrics, out / FILES[2])
    if args.key:
        result.key.to_csv(args.key, index=False)
    print(json.dumps(report, indent=1, default=_jsonable))
    return 0


def read_claims(members_path, claims_path) -> pd.DataFrame:
    """The claims table of ``anonymizers.claims`` from the two CSV files: each
    claim with its member's sex, birth date and age at service.  InputError
    naming the file, row and field of the first problem."""
    msrc, csrc = str(members_path), str(claims_path)
    members = read_table(members_path, MEMBER_REQUIRED, MEMBER_OPTIONAL)
    claims = read_table(claims_path, CLAIM_REQUIRED, CLAIM_OPTIONAL)
    if "dx_code" not in claims.columns:
        raise InputError(csrc, "missing column 'dx_code': the header (first line) must name "
                         "it (its values may be empty)", field="dx_code")
    ids = members["member_id"].str.strip()
    twice = ids.duplicated().to_numpy()
    if twice.any():
        raise InputError(msrc, "a member listed twice", row=int(twice.argmax()) + 1,
                         field="member_id")
    at = pd.Index(ids).get_indexer(claims["member_id"].str.strip())
    if (at < 0).any():
        raise InputError(csrc, "member_id not in the members file",
                         row=int((at < 0).argmax()) + 1, field="member_id")
    out = claims.copy()
    out["sex"] = _sex(members["sex"], msrc)[at]
    birth = (_dates(members["birth_date"], msrc, "birth_date", required=False)
             if "birth_date" in members.columns else None)
    if birth is not None:
        out["birth_date"] = birth[at]
    if "age_at_service" not in out.columns:
        out["age_at_service"] = _ages(birth, at, claims["service_date"], msrc, csrc)
    return out


def clean_dx_codes(claims: pd.DataFrame, source: str, args) -> tuple[pd.DataFrame, dict]:
    """``claims`` with ``dx_code`` and each code of ``other_dx_codes`` checked
    against ``args.code_system`` (``anonymizers.io.clean_codes``; a row's
    ``code_version`` flags all its codes), normalised, and the flag column
    removed.  An unknown code is an InputError naming its file row and field,
    or with ``--drop-unknown`` leaves its claim (``dx_code`` then empty);
    ``--mixed map-to-icd10`` maps flagged ICD-9-CM codes.  As the Airflow
    extract reads claims for this method (``deid.extract.clean_claim_codes``):
    CMS's placeholders stay as written, and an ICD-9-CM release keeps codes
    of ICD-9-CM's form that CMS's v32 list lacks (``codesystems.legacy_icd9``:
    DE-SynPUF writes them).  Returns the claims and the counts for the metrics."""
    if CODE_VERSION in claims.columns:  # every row's flag, before any code (row order)
        flag = claims[CODE_VERSION].fillna("").astype(str).str.strip()
        bad = np.flatnonzero(~flag.isin([*cs.VERSION_FLAGS, ""]).to_numpy())
        if len(bad):
            raise InputError(source, "not a version flag (9 ICD-9-CM, 0 ICD-10-CM, or empty)",
                             row=int(bad[0]) + 1, field=CODE_VERSION)
    out = claims.drop(columns=[CODE_VERSION], errors="ignore").copy()
    counts = {"code_system": args.code_system, "codes_dropped_unknown": 0,
              "codes_mapped_to_code_system": 0, "placeholder_codes": 0,
              "legacy_icd9_codes": 0}
    for field in DX_FIELDS:
        if field in claims.columns:
            out[field] = _clean_field(claims, field, source, args, counts)
    return out, counts


def _clean_field(claims, field: str, source: str, args, counts: dict) -> np.ndarray:
    rows, codes = _pieces(claims[field])
    flags = (claims[CODE_VERSION].to_numpy(dtype=object)[rows]
             if CODE_VERSION in claims.columns else np.full(len(rows), None, dtype=object))
    flags = pd.Series(flags, dtype=object).fillna(SYSTEM_FLAG[args.code_system])
    placeholder = np.isin(codes, list(cs.CMS_PLACEHOLDERS))
    legacy = (cs.legacy_icd9(pd.Series(codes, dtype=object), flags) & ~placeholder
              if args.code_system == cs.ICD9CM else np.zeros(len(codes), dtype=bool))
    kept = codes.copy()
    kept[legacy] = cs.normalize(codes[legacy])
    check = np.flatnonzero(~placeholder & ~legacy)
    if len(check):
        long = pd.DataFrame({"code": codes[check], "position": check})
        if CODE_VERSION in claims.columns:
            long[CODE_VERSION] = flags.to_numpy()[check]
        try:
            clean = clean_codes(long, source, args.code_system, args.drop_unknown, args.mixed,
                                args.gem)
        except InputError as exc:
            if exc.row is None:
                raise
            where = field if exc.field == "code" else exc.field
            raise InputError(source, exc.problem, int(rows[check[exc.row - 1]]) + 1,
                             where) from None
        kept[check] = None
        kept[clean.table["position"].to_numpy()] = clean.table["code"].to_numpy(dtype=object)
        counts["codes_dropped_unknown"] += clean.dropped
        counts["codes_mapped_to_code_system"] += clean.mapped
    counts["placeholder_codes"] += int(placeholder.sum())
    counts["legacy_icd9_codes"] += int(legacy.sum())
    return _joined(rows, kept, len(claims))


def _pieces(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """The non-empty codes of a column (a list of codes split like
    ``other_dx_codes``) with the 0-based row each comes from."""
    rows, index = split_code_lists(values.fillna("").astype(str).tolist())
    return rows, np.array(index.uniques, dtype=object)[index.index] if len(rows) else \
        np.zeros(0, dtype=object)


def _joined(rows: np.ndarray, codes: np.ndarray, n: int) -> np.ndarray:
    """Each row's kept codes joined by ';' (NaN where none is left)."""
    kept: list[list[str]] = [[] for _ in range(n)]
    for row, code in zip(rows.tolist(), codes.tolist()):
        if code is not None:
            kept[row].append(code)
    return np.array([";".join(k) if k else np.nan for k in kept], dtype=object)


def _same_code_system(claims_system: str, config: HHPConfig) -> None:
    """InputError unless the screening policy and the hierarchies group codes
    of the claims' code system (a policy file of unknown version is taken at
    its word)."""
    for option, value, system in (
            ("--screening-policy", config.policy_source, policy_code_system(config.policy_source)),
            ("--hierarchies" if config.hierarchies_path is not None
             else "the default hierarchies", config.hierarchies_source,
             hierarchies_code_system(config.hierarchies_source))):
        if system is not None and system != claims_system:
            raise InputError(f"{option} {value}", f"its lists are {system} codes but "
                             f"--code-system is {claims_system}: give the policy and "
                             "hierarchies of the claims' code system")


def _ages(birth, at, service, msrc: str, csrc: str) -> np.ndarray:
    """Whole calendar years from the member's birth to each service date."""
    if birth is None:
        raise InputError(csrc, "no age: give the claims an age_at_service column or the "
                         "members a birth_date column", field="age_at_service")
    born = pd.DatetimeIndex(birth[at])
    if born.isna().any():
        member = int(at[int(born.isna().argmax())])
        raise InputError(msrc, "empty value (the claims have no age_at_service column)",
                         row=member + 1, field="birth_date")
    day = pd.DatetimeIndex(_dates(service, csrc, "service_date", required=True))
    before = (day.month < born.month) | ((day.month == born.month) & (day.day < born.day))
    age = np.asarray(day.year - born.year - before, dtype=np.int64)
    if (age < 0).any():
        raise InputError(csrc, "the service date is before the member's birth date",
                         row=int((age < 0).argmax()) + 1, field="service_date")
    return age


@contextmanager
def _no_values(claims_path):
    """Re-raise an InputError of ``anonymizers.claims.inputs`` without the
    value it quotes (a date, an age: patient data must not reach a log), and
    with the claims file's name where the library says "claims" (the rows of
    the frame it reads are the rows of that file)."""
    try:
        yield
    except InputError as exc:
        source = str(claims_path) if exc.source == "claims" else exc.source
        problem = QUOTED.sub("", exc.problem)
        raise InputError(source, problem, exc.row, exc.field) from None


def _config(args, policy_path: str, key: bytes) -> HHPConfig:
    return config_from_args(HHPConfig, args, policy_path=policy_path, pseudonym_key=key)


def _policy(value: str | None, code_system: str) -> str:
    """A bundled policy name (``NAMED_POLICIES``; None: that of the code
    system) or the path of a policy file."""
    if value is None:
        return POLICY_OF_SYSTEM[code_system]
    if value in NAMED_POLICIES or Path(value).is_file():
        return value
    raise InputError(f"--screening-policy {value}", "neither a bundled policy "
                     f"({', '.join(NAMED_POLICIES)}) nor a policy file")


def _output_dir(value: str) -> Path:
    """The output folder, checked before any work: it may exist (as a folder)
    or be created in an existing folder, and must be writable."""
    out = Path(value)
    option = f"--output {value}"
    if out.exists() and not out.is_dir():
        raise InputError(option, "is a file, not a folder")
    parent = out if out.is_dir() else out.parent
    if not parent.is_dir():
        raise InputError(option, f"the folder {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise InputError(option, "cannot be written (permission denied)")
    return out


def _jsonable(x):
    if hasattr(x, "item"):
        return x.item()
    if hasattr(x, "tolist"):
        return x.tolist()
    return str(x)


__all__ = ["add_arguments", "read_claims", "run"]
