"""A release's scope: the SQL filter over the claims, checked before it runs.

The scope comes from a release file or from the trigger form, so anyone who
may trigger a run writes it.  Spliced into the extract queries as text, a
free SQL expression could read other tables (a subquery, or closing the
parenthesis and adding ``UNION SELECT``), leak values through error messages
(``CAST((SELECT ...) AS int)``), or call functions with effects
(``pg_sleep``, ``set_config``, ``dblink``, ``lo_export``).  So the scope is
parsed by PostgreSQL's own parser (pglast, libpg_query) inside a fixed
``SELECT 1 FROM claims c WHERE (<scope>)``; the statement must keep that
shape, and every node of the expression must be on a whitelist: columns of
the claims that both extract queries share, constants, casts to plain types,
comparisons, ``IN``/``BETWEEN``/``LIKE``, ``AND``/``OR``/``NOT``, ``IS NULL``
and a few pure date and text functions.  What runs is the deparsed tree, not
the submitted text, so comments and quoting tricks cannot differ between
what was checked and what executes.  ``splice`` puts it in a query template
and parses the result again: the scope must be exactly the last condition of
the query's WHERE clause (a literal holding a newline could otherwise end a
``--`` comment of the template, so control characters are refused too).  The
extract transaction is also READ ONLY (deid.extract), as a second wall, and
the extract withholds PostgreSQL's message on a data error, which may quote
a source value (``CAST(c.desynpuf_id AS int)`` would name an identifier);
the warehouse server's own log still records it, as it does any query error
(a DBA's log, not the Airflow user's).  The deparse must re-parse to the same
tree.  Not closed: whoever writes the scope chooses which claims are
extracted, and a run's counts answer questions about them (how many ids
start with "AB"); the release itself is anonymized whatever the scope.
"""

from __future__ import annotations

from functools import lru_cache

from anonymizers.errors import InputError

SOURCE = "release scope"
#: columns of the claims alias ``c`` with the same meaning in
#: sql/extract_claims.sql and sql/extract_claims_hhp.sql (a release's
#: screening reads the second whatever the method)
COLUMNS = frozenset({"desynpuf_id", "clm_from_dt"})
#: pure, and none matches a pattern (``substring(x FROM pattern)`` is a regex)
FUNCTIONS = frozenset({"date_part", "extract", "date_trunc", "make_date", "lower", "upper",
                       "substr", "left", "right", "length", "char_length", "btrim", "ltrim",
                       "rtrim", "abs"})
TYPES = frozenset({"date", "int2", "int4", "int8", "integer", "bigint", "smallint", "text",
                   "varchar", "bpchar", "numeric", "bool", "interval"})
COMPARISONS = frozenset({"=", "<>", "!=", "<", ">", "<=", ">="})
OPERATORS = COMPARISONS | {"+", "-", "*", "/", "||"}
#: A_Expr kinds by name -> operators allowed with that kind
EXPR_KINDS = {"AEXPR_OP": OPERATORS, "AEXPR_OP_ANY": COMPARISONS, "AEXPR_OP_ALL": COMPARISONS,
              "AEXPR_IN": {"=", "<>"}, "AEXPR_LIKE": {"~~", "!~~"},
              "AEXPR_ILIKE": {"~~*", "!~~*"}, "AEXPR_DISTINCT": {"="},
              "AEXPR_NOT_DISTINCT": {"="}, "AEXPR_BETWEEN": None,
              "AEXPR_NOT_BETWEEN": None, "AEXPR_NULLIF": {"="}}
#: node classes allowed anywhere in the expression; the ones with more
#: conditions are checked in ``_check_node``
NODES = frozenset({"BoolExpr", "A_Expr", "NullTest", "BooleanTest", "A_Const", "TypeCast",
                   "TypeName", "ColumnRef", "FuncCall", "A_ArrayExpr", "CoalesceExpr",
                   "SQLValueFunction", "String", "Integer", "Float", "Boolean"})
WRAPPER = "SELECT 1 FROM claims c WHERE ({}\n)"  # \n: a scope may end in a -- comment
#: longer scopes are refused: the expression runs on every claim
MAX_LENGTH = 2000
PLACEHOLDER = "{scope}"


def checked(scope: str) -> str:
    """The scope as PostgreSQL will run it (deparsed), or InputError naming
    what is not allowed."""
    if not isinstance(scope, str) or not scope.strip():
        raise InputError(SOURCE, f"a scope must be a non-empty SQL expression, got {scope!r}")
    return _checked(scope)


def splice(template: str, scope: str) -> str:
    """``template`` with its one ``{scope}`` replaced by the checked scope,
    parsed again: InputError unless the scope is exactly the last condition
    of the outermost WHERE clause."""
    from pglast import ast, parse_sql
    from pglast.enums import BoolExprType
    from pglast.parser import ParseError
    from pglast.stream import RawStream

    text = checked(scope)
    if template.count(PLACEHOLDER) != 1:
        raise ValueError(f"a query template must hold {PLACEHOLDER} exactly once")
    query = template.replace(PLACEHOLDER, text)
    try:
        statements = parse_sql(query)
        where = statements[0].stmt.whereClause if len(statements) == 1 else None
        last = where.args[-1] if isinstance(where, ast.BoolExpr) and \
            where.boolop == BoolExprType.AND_EXPR else where
        spliced = None if last is None else RawStream()(last)
    except ParseError as exc:
        raise InputError(SOURCE, f"the query with this scope does not parse: {exc}") from None
    except RecursionError:
        raise InputError(SOURCE, "the expression is nested too deeply") from None
    if spliced != text:
        raise InputError(SOURCE, "the scope does not stay the last condition of the "
                         "query's WHERE clause")
    return query


@lru_cache(maxsize=256)
def _checked(scope: str) -> str:
    from pglast.stream import RawStream

    if len(scope) > MAX_LENGTH:
        raise InputError(SOURCE, f"a scope is at most {MAX_LENGTH} characters, this one has "
                         f"{len(scope)}")
    try:
        scope.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(SOURCE, f"not valid text: {exc.reason} at character {exc.start}") \
            from None
    try:
        where = _where_clause(scope)
        _check_tree(where)
        text = RawStream()(where)
        # the deparser must give back the same tree (locations aside): it
        # drops needed parentheses around some BETWEEN operands
        try:
            again = _where_clause(text)
        except InputError:
            again = None
        if again != where:
            raise InputError(SOURCE, "the expression does not survive normalization; "
                             "add parentheses or simplify it")
    except RecursionError:
        raise InputError(SOURCE, "the expression is nested too deeply") from None
    bad = sorted({f"U+{ord(ch):04X}" for ch in text if ord(ch) < 0x20 or ord(ch) == 0x7F})
    if bad:
        raise InputError(SOURCE, "control characters are not allowed in a scope (not even "
                         "inside a string constant): " + ", ".join(bad))
    return text


def _where_clause(scope: str):
    from pglast import parse_sql
    from pglast.parser import ParseError

    try:
        statements = parse_sql(WRAPPER.format(scope))
    except ParseError as exc:
        raise InputError(SOURCE, f"not one SQL expression: {exc}") from None
    if len(statements) != 1:
        raise InputError(SOURCE, "must be one SQL expression, not several statements")
    stmt = statements[0].stmt
    shape = (type(stmt).__name__, int(stmt.op) if hasattr(stmt, "op") else None,
             len(stmt.fromClause or ()), len(stmt.targetList or ()))
    extras = [name for name in ("withClause", "groupClause", "havingClause", "sortClause",
                                "limitCount", "limitOffset", "lockingClause", "windowClause",
                                "distinctClause", "intoClause", "valuesLists")
              if getattr(stmt, name, None)]
    if shape != ("SelectStmt", 0, 1, 1) or extras or stmt.whereClause is None:
        raise InputError(SOURCE, "must be one SQL expression over the claims; it changes "
                         "the query around it (a closing parenthesis, UNION, ORDER BY...)")
    return stmt.whereClause


def _check_tree(node) -> None:
    from pglast import ast

    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, ast.Node):
            _check_node(item)
            stack.extend(getattr(item, slot) for slot in type(item).__slots__)


def _check_node(node) -> None:
    kind = type(node).__name__
    if kind not in NODES:
        raise InputError(SOURCE, f"{_describe(kind)} is not allowed in a scope; allowed: "
                         "columns " + ", ".join(f"c.{c}" for c in sorted(COLUMNS)) +
                         ", constants, comparisons, IN, BETWEEN, LIKE, AND/OR/NOT, IS NULL, "
                         "casts and the functions " + ", ".join(sorted(FUNCTIONS)))
    check = _CHECKS.get(kind)
    if check:
        check(node)


def _describe(kind: str) -> str:
    return {"SubLink": "a subquery", "ParamRef": "a parameter ($n)",
            "A_Indirection": "a subscript or field selection",
            "CollateClause": "COLLATE", "RowExpr": "a row constructor"}.get(kind, kind)


def _column(node) -> None:
    from pglast import ast

    fields = node.fields
    names = [f.sval if isinstance(f, ast.String) else "*" for f in fields]
    if len(names) == 2 and names[0] == "c":
        names = names[1:]
    if len(names) != 1 or names[0] not in COLUMNS:
        raise InputError(SOURCE, f"column {'.'.join(names)} is not one a scope may filter on; "
                         "use " + ", ".join(f"c.{c}" for c in sorted(COLUMNS)))


def _function(node) -> None:
    names = [n.sval for n in node.funcname]
    if names[:1] == ["pg_catalog"]:
        names = names[1:]
    name = ".".join(names)
    if name not in FUNCTIONS:
        raise InputError(SOURCE, f"function {name}() is not allowed in a scope; allowed: "
                         + ", ".join(sorted(FUNCTIONS)))
    if node.agg_star or node.agg_distinct or node.agg_filter or node.agg_order or node.over \
            or node.agg_within_group or node.func_variadic:
        raise InputError(SOURCE, f"{name}() must be a plain call (no *, DISTINCT, FILTER, "
                         "ORDER BY, OVER or VARIADIC)")


def _type(node) -> None:
    names = [n.sval for n in node.names]
    if names[:1] == ["pg_catalog"]:
        names = names[1:]
    if len(names) != 1 or names[0] not in TYPES or node.setof or node.pct_type \
            or node.arrayBounds:
        raise InputError(SOURCE, f"cast to {'.'.join(names)} is not allowed in a scope; "
                         "allowed types: " + ", ".join(sorted(TYPES)))


def _expression(node) -> None:
    kind = node.kind.name
    if kind not in EXPR_KINDS:
        raise InputError(SOURCE, f"operator form {kind} is not allowed in a scope")
    allowed = EXPR_KINDS[kind]
    op = ".".join(n.sval for n in node.name or ())
    if allowed is not None and op not in allowed:
        raise InputError(SOURCE, f"operator {op} is not allowed in a scope; allowed: "
                         + " ".join(sorted(OPERATORS | {"LIKE", "ILIKE", "IN", "BETWEEN"})))


def _value_function(node) -> None:
    if node.op.name != "SVFOP_CURRENT_DATE":
        raise InputError(SOURCE, f"{node.op.name.removeprefix('SVFOP_')} is not allowed in a "
                         "scope (CURRENT_DATE is)")


_CHECKS = {"ColumnRef": _column, "FuncCall": _function, "TypeName": _type,
           "A_Expr": _expression, "SQLValueFunction": _value_function}
