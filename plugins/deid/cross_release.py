"""A new release beside the releases published before it (issue 25).

``verdicts`` is what ``deid.steps.validate`` adds to a run's verdicts:

* disassociation, UGACLIP, LDA, GCCens: the library's independent
  cross-release verifier, ``anonymizers.successive.check.check(method,
  history, new, params)`` (k-anonymity composed over the releases against
  the linking adversary; GCCens: k-map of each patient's union), on the new
  release and every earlier one of the release's history, oldest first;
* MedCo: its defence is state (``anonymizers.dummies.persist``).  Two
  verdicts: this run's dummies continued the state of the last published
  release (a run that started a new lineage beside published releases
  fails it: the issue's attack then tells real from dummy with precision
  0.99); and the library's verdict on the comparison attacks over every
  release of the history and the new one, scored with their dummy maps
  (``anonymizers.successive.medco.check``: no attack beats the base rate
  by more than 5 points, significantly).

``of_run`` gives the verifier's inputs of a staged run in the shapes its
docstring lists; every source patient id is replaced by its keyed link
(``deid.history.link``), so that the same patient is the same id across
releases and no source id is stored.  ``deid.history.parts`` stores them
(all but ``NEW_ONLY``) with the load, so that a later run can re-check
after the release table was replaced.

HHP has no cross-release property (docs/threat-model-successive.md, 3.6):
its second release stops validate with one line (``ValidationFailed``)
saying why and what the operator can do.  Another method without a
verifier gets a failed verdict for a release that has earlier ones: what is
not checked is not published twice.

``of_run`` dispatches to each method module's public ``history_inputs(run,
params, key)`` (UGACLIP, LDA, GCCens, MedCo); disassociation's inputs are
still read here.
"""

from __future__ import annotations

from deid import history, staging
from deid.secret import pseudonym_key

#: inputs the verifier reads of the new release only (not stored)
NEW_ONLY = frozenset({"population"})


def _inputs_of(method: str):
    """The function giving ``method``'s verifier inputs of a staged run: the
    method module's public ``history_inputs(run, params, key)``."""
    from deid.methods import METHODS

    return getattr(METHODS.get(method), "history_inputs", None)


def of_run(run, method: str, params: dict) -> dict:
    """The verifier's inputs of the staged run (empty for a method without)."""
    make = _inputs_of(method)
    return {} if make is None else make(run, params, pseudonym_key())


def kept(run, method: str, params: dict) -> dict:
    """The inputs the load stores for later runs (all but ``NEW_ONLY``)."""
    return {name: v for name, v in of_run(run, method, params).items() if name not in NEW_ONLY}


def check_params(run, method: str, params: dict, releases: list = ()) -> dict:
    """The verifier's parameters: the release's k, m where the method has
    one, and UGACLIP's privacy constraints: the union of the policies each
    of ``releases`` (verifier inputs, the new one last) was protected under
    (its stored ``policy``; the run's PPE policy for one stored before
    policies were kept)."""
    out = {"k": params["k"]}
    if "m" in params:
        out["m"] = params["m"]
    if method == "lda":  # its trajectories generalize in the tree of the claims' system
        out["code_system"] = params.get("code_system", "icd9cm")
    if method == "ugaclip":
        seen: dict[tuple, list] = {}
        for r in releases:
            for c in (r.get("policy") or {}).get("constraints", []):
                seen.setdefault(tuple(c), c)
        if not releases or any("policy" not in r for r in releases):
            for c in run.read_json(staging.POLICY)["constraints"]:
                seen.setdefault(tuple(c), c)
        out["constraints"] = list(seen.values())
    return out


def verdicts(run, method: str, params: dict, earlier: list) -> list[dict]:
    """The run's cross-release verdicts against ``earlier`` (published
    releases, oldest first); none for a first release, whose single-release
    verifiers say all there is."""
    if not earlier:
        return []
    other = [f"{p.run_id} ({p.method})" for p in earlier if p.method != method]
    if other:
        return [_unchecked(method, earlier, f"earlier release(s) {other} were made by another "
                                            "method: no verifier compares them")]
    if method == "medco":
        return [_medco_continued(run, earlier[-1]), _medco_attacked(run, params, earlier)]
    from anonymizers.successive.check import METHODS as CHECKED
    from anonymizers.successive.check import check

    if method == "hhp":
        _refuse_hhp(earlier)
    if method not in CHECKED:
        return [_unchecked(method, earlier, f"no cross-release verifier for {method} "
                                            f"(anonymizers.successive.check knows "
                                            f"{', '.join(CHECKED)}): a release with earlier "
                                            "releases is not published unchecked")]
    stored = history.earlier_inputs(run.release, earlier)
    missing = [p.run_id for p, inputs in zip(earlier, stored) if not inputs]
    if missing:
        return [_unchecked(method, earlier,
                           f"earlier release(s) {missing} kept nothing to check against")]
    new = of_run(run, method, params)
    return [check(method, stored, new, check_params(run, method, params, [*stored, new]))
            .as_dict()]


def _refuse_hhp(earlier: list) -> None:
    """HHP's documented limit (docs/threat-model-successive.md, 3.6): one
    release per release file.  The run stops here with one line saying why
    and what to do."""
    from deid.steps import ValidationFailed

    ran = [p.run_id for p in earlier]
    raise ValidationFailed(
        f"HHP release {earlier[0].release_name} already published {ran} and HHP "
        "has no cross-release guarantee, so it is released once (docs/threat-model-"
        "successive.md, 3.6): keep the published release, release the current data with a "
        "method that has a successive-release defence, or, once every reader has given up "
        "the earlier release, have the warehouse owner retire it from the history")


def _unchecked(method: str, earlier: list, why: str) -> dict:
    """A failed verdict: the combination could not be checked."""
    return {"property": f"cross-release check of {method} over {len(earlier) + 1} releases",
            "ok": False, "checked": 0, "violations": [why]}


def _medco_continued(run, last) -> dict:
    """MedCo's dummies continued the state of the last published release."""
    began = run.read_json(staging.STATE_FROM)
    prop = (f"MedCo dummies persist across releases: this run continued the state of the "
            f"last published release ({last.run_id})")
    ok = began.get("run_id") == last.run_id and bool(began.get("had_state"))
    why = [] if ok else [
        f"the run started from {began.get('run_id')!r} "
        f"({'with' if began.get('had_state') else 'without'} a stored state), not from the "
        f"state of {last.run_id!r}: its dummies are new where the earlier release's persist, "
        "which tells real patients from dummies"]
    return {"property": prop, "ok": ok, "checked": 1, "violations": why}


def _medco_attacked(run, params: dict, earlier: list) -> dict:
    """The library's comparison attacks on the history and the new release,
    scored with their dummy maps (``anonymizers.successive.medco.check``)."""
    from anonymizers.successive.medco import check

    stored = history.earlier_inputs(run.release, earlier)
    missing = [p.run_id for p, inputs in zip(earlier, stored) if "released" not in inputs]
    if missing:
        return _unchecked("medco", earlier, f"earlier release(s) {missing} kept nothing to "
                                            "attack")
    releases = [*stored, of_run(run, "medco", params)]
    return check([r["released"] for r in releases],
                 [r["dummy_map"] for r in releases]).as_dict()
