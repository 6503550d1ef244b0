"""Great Expectations gates run on every release table before anything is loaded.

Great Expectations 1.x is called directly (an ephemeral context, a pandas data
source, one suite per table).  Results are kept as BOOLEAN_ONLY: a failed
"no original patient ids" expectation must not copy those ids into logs or
the audit row.  The verifiers' verdicts enter as a table of their own so that
one mechanism decides whether a run may load.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pandas as pd

os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")

DATE_LIKE = r"(?:19|20)\d{2}-?\d{2}-?\d{2}"


@dataclass(frozen=True)
class Gate:
    """One expectation's outcome, in words."""

    table: str
    expectation: str
    kwargs: str
    ok: bool

    def as_dict(self) -> dict:
        return {"table": self.table, "expectation": self.expectation,
                "kwargs": self.kwargs, "ok": self.ok}


def _context():
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    return ctx


#: value sets larger than this are tested as a column of their own (below)
LARGE_SET = 1000


def run_suite(table: str, df: pd.DataFrame, expectations: list) -> list[Gate]:
    """Validate ``df`` against GX expectation objects; one Gate per expectation,
    in their order.

    An in-set or not-in-set expectation with a value set of more than
    ``LARGE_SET`` values (pseudonyms, source ids) is validated as GX's same
    expectation on a membership column (True, False, or null where the value
    is null, which GX skips as it would the value): GX copies an
    expectation's arguments each time it reads them, dozens of times per
    validation; with about 100,000 ids that took 152 of the 334 s of an HHP
    release's validation at 113,000 members (under cProfile)."""
    plain, sets, derived = [], {}, []
    for i, e in enumerate(expectations):
        if _large_set(e):
            name = f"member_{i}"
            sets[name] = _membership(df[e.column], e.value_set)
            want = type(e).__name__ == "ExpectColumnValuesToBeInSet"
            derived.append((i, e, _in_set(name, [want], e.mostly)))
        else:
            plain.append((i, e))
    gates = dict(zip([i for i, _ in plain], _validate(table, df, [e for _, e in plain])))
    if derived:
        done = _validate(table + "_sets", pd.DataFrame(sets, index=df.index),
                         [d for _, _, d in derived])
        for (i, e, _), gate in zip(derived, done):
            kwargs = {"column": e.column, "value_set": e.value_set}
            if e.mostly != 1:  # as GX describes it: only when given
                kwargs["mostly"] = e.mostly
            gates[i] = Gate(table, e.expectation_type, _describe(kwargs), gate.ok)
    return [gates[i] for i in range(len(expectations))]


def _validate(table: str, df: pd.DataFrame, expectations: list) -> list[Gate]:
    import great_expectations as gx

    if not expectations:
        return []
    ctx = _context()
    batch = (ctx.data_sources.add_pandas(f"src_{table}")
             .add_dataframe_asset(name=table)
             .add_batch_definition_whole_dataframe("all")
             .get_batch(batch_parameters={"dataframe": df}))
    suite = gx.ExpectationSuite(name=f"release_{table}")
    for e in expectations:
        suite.add_expectation(e)
    result = batch.validate(suite, result_format="BOOLEAN_ONLY")
    return [Gate(table, r.expectation_config.type, _describe(r.expectation_config.kwargs),
                 bool(r.success)) for r in result.results]


def _large_set(e) -> bool:
    return type(e).__name__ in ("ExpectColumnValuesToBeInSet",
                                "ExpectColumnValuesToNotBeInSet") \
        and len(e.value_set) > LARGE_SET


def _membership(column: pd.Series, values) -> pd.Series:
    out = column.isin(list(values)).astype("boolean")
    out[column.isna()] = pd.NA
    return out


def _in_set(column: str, values: list, mostly):
    import great_expectations as gx

    return gx.expectations.ExpectColumnValuesToBeInSet(column=column, value_set=values,
                                                       mostly=mostly)


def _describe(kwargs: dict) -> str:
    """Expectation arguments for the audit, with value sets summarised by size."""
    parts = []
    for k, v in sorted(kwargs.items()):
        if k in ("batch_id",):
            continue
        if isinstance(v, (list, set, tuple)) and len(v) > 5:
            v = f"<{len(v)} values>"
        parts.append(f"{k}={v}")
    return ", ".join(parts)


def release_records_expectations(columns: list[str], id_col: str, code_col: str,
                                 vocabulary, source_ids, expected_rows: int) -> list:
    """Structure and values of a (patient, code) release table."""
    import great_expectations as gx

    E = gx.expectations
    return [
        E.ExpectTableColumnsToMatchOrderedList(column_list=columns),
        E.ExpectTableRowCountToEqual(value=int(expected_rows)),
        E.ExpectColumnValuesToNotBeNull(column=id_col),
        E.ExpectColumnValuesToNotBeNull(column=code_col),
        E.ExpectColumnValuesToBeInSet(column=code_col, value_set=sorted(vocabulary)),
        E.ExpectColumnValuesToNotBeInSet(column=id_col, value_set=sorted(source_ids)),
        E.ExpectColumnValuesToNotMatchRegex(column=id_col, regex=DATE_LIKE),
        E.ExpectColumnValuesToNotMatchRegex(column=code_col, regex=DATE_LIKE),
    ]


def verdict_expectations() -> list:
    """Every verifier verdict must be ok."""
    import great_expectations as gx

    return [gx.expectations.ExpectColumnValuesToBeInSet(column="ok", value_set=[True]),
            gx.expectations.ExpectTableRowCountToBeBetween(min_value=1)]


def verdict_table(verdicts: list[dict]) -> pd.DataFrame:
    return pd.DataFrame({"property": [v["property"] for v in verdicts],
                         "ok": [bool(v["ok"]) for v in verdicts]})
