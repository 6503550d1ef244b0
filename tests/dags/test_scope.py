"""Release scope: only a whitelisted filter over the claims reaches the SQL."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from deid import scope
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymizers.errors import InputError

ACCEPTED = [
    "TRUE",
    "c.clm_from_dt >= '2010-01-01'",
    "c.desynpuf_id IN ('00013D2EFD8E45D1', '00016F745862898F')",
    "clm_from_dt BETWEEN '2008-01-01'::date AND '2009-12-31'",
    "date_part('year', c.clm_from_dt) = 2009 OR c.clm_from_dt IS NULL",
    "EXTRACT(YEAR FROM c.clm_from_dt) >= 2009 AND NOT c.desynpuf_id LIKE '00%'",
    "c.clm_from_dt >= CURRENT_DATE - INTERVAL '10 years'",
    "lower(c.desynpuf_id) = ANY (ARRAY['a', 'b']) /* a comment */",
    "c.clm_from_dt >= DATE '2009-01-01' -- from 2009, as a folded YAML scalar ends",
]

REJECTED = [
    ("TRUE) UNION SELECT 1 FROM pg_authid WHERE (TRUE", "changes the query"),
    ("TRUE) ORDER BY (1", "changes the query"),
    ("(SELECT count(*) FROM source.carrier_claims) > 0", "subquery"),
    ("EXISTS (SELECT 1 FROM pg_authid)", "subquery"),
    ("CAST((SELECT rolpassword FROM pg_authid LIMIT 1) AS int) = 1", "subquery"),
    ("pg_sleep(10) IS NULL", "function pg_sleep()"),
    ("set_config('role', 'postgres', false) = 'x'", "function set_config()"),
    ("pg_catalog.pg_read_file('/etc/passwd') <> ''", "function pg_read_file()"),
    ("count(*) > 0", "function count()"),
    ("lower(DISTINCT c.desynpuf_id) = 'a'", "plain call"),
    ("b.bene_birth_dt < '1940-01-01'", "column b.bene_birth_dt"),
    ("c.clm_id = 'x'", "column clm_id"),
    ("c.* IS NULL", "column *"),
    ("c.clm_from_dt::regclass IS NULL", "cast to regclass"),
    ("c.desynpuf_id OPERATOR(pg_catalog.=) 'x'", "operator pg_catalog.="),
    ("c.desynpuf_id ~ 'a.*'", "operator ~"),
    ("c.desynpuf_id SIMILAR TO 'a%'", "SIMILAR"),
    ("$1 = 1", "parameter"),
    ("ROW(c.desynpuf_id) IS NULL", "row constructor"),
    ("TRUE AND", "one SQL expression"),
    ("TRUE; DROP TABLE source.carrier_claims", "one SQL expression"),
    ("SESSION_USER = 'postgres'", "SESSION_USER"),
    ("", "non-empty"),
    ("   ", "non-empty"),
    ("substring(c.desynpuf_id FROM '(a*)*b') = 'b'", "function substring()"),
    # a newline inside a literal could end a -- comment of a query template
    (("c.desynpuf_id <> '\nSELECT $$ AS j, (SELECT string_agg(desynpuf_id, $x$,$x$) "
      "FROM source.beneficiary_summary)::int AS k --'"), "control characters"),
    ("c.desynpuf_id <> E'a\\rb'", "U+000D"),
    (" + ".join(["1"] * 200) + " > 0", "nested too deeply"),
    ("c.desynpuf_id = '" + "x" * 2000 + "'", "at most 2000 characters"),
    ("(1 BETWEEN 0 AND 2) BETWEEN FALSE AND TRUE", "normalization"),
    # deparsed as NOT TRUE BETWEEN ..., which parses to another tree
    ("(NOT TRUE) BETWEEN (c.desynpuf_id IN ('a')) AND TRUE", "normalization"),
    ("TRUE /* \udfff */", "not valid text"),
    ("c.desynpuf_id = '\ud800'", "not valid text"),
]


@pytest.mark.parametrize("text", ACCEPTED)
def test_documented_filters_pass_and_run_as_deparsed(text):
    out = scope.checked(text)
    assert scope.checked(out) == out  # what runs passes the same check
    assert "comment" not in out


@pytest.mark.parametrize("text, message", REJECTED)
def test_anything_else_is_refused_naming_what(text, message):
    with pytest.raises(InputError, match="release scope") as err:
        scope.checked(text)
    assert message in str(err.value)


@pytest.mark.parametrize("template", ["extract_claims.sql", "extract_claims_hhp.sql"])
@pytest.mark.parametrize("text", ACCEPTED)
def test_scope_is_the_last_condition_of_both_extract_queries(template, text):
    from deid.paths import sql_text
    from pglast import parse_sql
    from pglast.stream import RawStream

    query = scope.splice(sql_text(template), text)
    (statement,) = parse_sql(query)
    assert RawStream()(statement.stmt.whereClause.args[-1]) == scope.checked(text)


def test_splice_refuses_a_template_that_lets_the_scope_out():
    with pytest.raises(ValueError, match="exactly once"):
        scope.splice("-- {scope}\nSELECT 1 FROM claims c WHERE ({scope})", "TRUE")
    # the scope must end up as the WHERE clause's last condition, not elsewhere
    with pytest.raises(InputError, match="last condition"):
        scope.splice("SELECT {scope} FROM claims c WHERE TRUE", "c.clm_from_dt IS NULL")


def test_splice_of_a_cached_deep_scope_deeper_in_the_stack_is_an_input_error():
    """checked() caches: a scope checked near the top of the stack may be
    spliced much deeper, where the deparser runs out of recursion."""
    import sys

    deep = "1" + " + 1" * 160 + " = 1"
    try:
        scope.checked(deep)
    except InputError:
        return  # refused outright on this interpreter: nothing to splice

    def nested(n):
        return nested(n - 1) if n else scope.splice("SELECT 1 FROM claims c WHERE "
                                                    "TRUE AND ({scope})", deep)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(400)  # what 20 frames deeper means at the default limit
    try:
        nested(40)
    except InputError as err:
        assert "nested too deeply" in str(err)
    finally:
        sys.setrecursionlimit(limit)


def test_gccens_sample_cannot_escape_the_scope(monkeypatch):
    """GCCens extracts (scope) AND (sample); each is checked and normalized
    alone, so parentheses in one cannot regroup the other."""
    from deid.methods import gccens

    class Stop(Exception):
        pass

    def capture(path, joined, codes=None):
        seen.append(joined)
        raise Stop

    seen = []
    monkeypatch.setattr(gccens, "extract_to_parquet", capture)
    with pytest.raises(Stop):
        run = SimpleNamespace(path=lambda name: Path("no-such-dir") / name)  # no staged params
        gccens.censor(run, {"scope": "c.clm_from_dt >= '2010-01-01'",
                            "gccens_sample": "TRUE) OR (c.desynpuf_id LIKE '%'"})
    assert seen == ["(c.clm_from_dt >= '2010-01-01') AND (TRUE OR c.desynpuf_id LIKE '%')"]


def test_non_text_scope_is_refused():
    with pytest.raises(InputError, match="non-empty SQL expression"):
        scope.checked(None)


# Pieces an attacker might assemble, the whitelist's own words among them:
# a soup of tokens, and expressions nested by a small grammar.
TOKENS = ["c.clm_from_dt", "c.desynpuf_id", "clm_from_dt", "b.bene_birth_dt", "'2009-01-01'",
          "'x'", "1", "TRUE", "NULL", "(", ")", ",", "=", "<", ">=", "AND", "OR", "NOT", "IN",
          "LIKE", "IS", "BETWEEN", "::date", "::regclass", "lower(", "pg_sleep(", "date_part(",
          "SELECT", "FROM", "UNION", "WHERE", "pg_authid", "--", "/*", "*/", ";", "$1", "[1]",
          "ARRAY[", "]", "CURRENT_DATE", "CURRENT_USER", "\\", '"', "E'\\''", "$$", "*",
          "'\n", "E'\\n'", "U&'\\000A'", "$q$\n$q$"]
ATOMS = ["c.clm_from_dt", "c.desynpuf_id", "'2009-01-01'", "1", "NULL", "TRUE", "CURRENT_DATE",
         "b.bene_birth_dt", "CURRENT_USER", "$1", "pg_authid.rolname", "c.codes[1]"]


def _grammar(e):
    def join(*parts):
        return st.tuples(*parts).map(" ".join)
    word = st.sampled_from
    return st.one_of(
        join(e, word(["=", "<", "<>", "~", "||", "LIKE", "AND", "OR", "IN"]), e),
        join(word(["lower(", "pg_sleep(", "date_part('year',", "set_config('a',", "count("]),
             e, word([")"])),
        e.map(lambda x: f"({x})"), e.map(lambda x: f"NOT {x}"),
        e.map(lambda x: f"{x} IS NULL"), e.map(lambda x: f"ARRAY[{x}]"),
        e.map(lambda x: f"(SELECT {x})"), e.map(lambda x: f"EXISTS (SELECT {x} FROM pg_authid)"),
        e.map(lambda x: f"{x}::regclass"), e.map(lambda x: f"{x}::date"),
        e.map(lambda x: f"{x}) UNION SELECT (1"), e.map(lambda x: f"{x} /* c */"),
        e.map(lambda x: f"{x} <> '\n{x} --'"))


SCOPES = st.one_of(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=12).map(" ".join),
                   st.recursive(st.sampled_from(ATOMS), _grammar, max_leaves=8))
# Written out, not taken from deid.scope, so that widening the whitelist there
# fails here until this list is widened too.
IDENTIFIERS_ALLOWED = {"c", "pg_catalog", "desynpuf_id", "clm_from_dt", "date_part", "extract",
                       "date_trunc", "make_date", "lower", "upper", "substr", "substring",
                       "left", "right", "length", "char_length", "btrim", "ltrim", "rtrim",
                       "abs", "date", "int2", "int4", "int8", "integer", "bigint", "smallint",
                       "text", "varchar", "bpchar", "numeric", "bool", "interval"}
KEYWORDS_FORBIDDEN = {"SELECT", "FROM", "UNION", "WHERE", "INTERSECT", "EXCEPT", "EXISTS",
                      "ORDER", "LIMIT", "WITH", "INTO", "OPERATOR", "COLLATE", "CURRENT_USER"}


@settings(max_examples=600, deadline=None)
@given(SCOPES)
def test_accepted_output_holds_only_whitelisted_words(text):
    """Whatever the input, the check either refuses it with InputError or
    returns a text in which every word (read by PostgreSQL's own scanner,
    independently of the tree walk) is a whitelisted column, function or
    type, a literal, an operator or a harmless keyword."""
    from pglast import parse_sql
    from pglast.parser import scan

    try:
        out = scope.checked(text)
    except InputError:
        return
    for token in scan(out):
        word = out[token.start:token.end + 1]
        if token.name == "IDENT":
            assert word.strip('"') in IDENTIFIERS_ALLOWED, (text, out, word)
        assert word.upper() not in KEYWORDS_FORBIDDEN, (text, out, word)
        assert token.name != "PARAM", (text, out, word)
        assert token.name != "Op" or word == "||", (text, out, word)
    assert scope.checked(out) == out
    for template in TEMPLATES:
        assert len(parse_sql(scope.splice(template, text))) == 1


TEMPLATES = [
    # as sql/extract_claims*.sql end; with a -- comment before, which a
    # newline in a literal would end
    "-- a comment\nSELECT 1 FROM claims c WHERE c.clm_from_dt IS NOT NULL AND ({scope})",
    "SELECT 1 FROM claims c JOIN bene b USING (desynpuf_id) WHERE d.code <> '' AND ({scope})",
]
