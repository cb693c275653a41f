"""The read-only guard of ``oral sql`` (:meth:`Warehouse.query <tasks.warehouse.Warehouse.query>`):
one SELECT / WITH / SHOW / DESCRIBE / EXPLAIN statement, or :class:`QueryRefused`."""
from __future__ import annotations

import duckdb

from .errors import QueryRefused

_READ_ONLY_KEYWORDS = ("SELECT", "WITH", "SHOW", "DESCRIBE", "EXPLAIN", "FROM", "SUMMARIZE",
                       "VALUES", "(")


def check_read_only(sql: str, con: duckdb.DuckDBPyConnection) -> None:
    """Refuse anything but one SELECT / WITH / SHOW / DESCRIBE / EXPLAIN statement."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as err:
        raise QueryRefused(f"cannot parse the query: {' '.join(str(err).split())}") from None
    if len(statements) != 1:
        raise QueryRefused(f"exactly one statement is allowed, got {len(statements)}")
    stmt = statements[0]
    head = _first_keyword(sql)
    if stmt.type not in (duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN) or \
            head not in _READ_ONLY_KEYWORDS:
        raise QueryRefused(f"only SELECT, WITH, SHOW, DESCRIBE and EXPLAIN queries are allowed, "
                           f"got {statement_name(head, stmt.type.name)}")
    if stmt.type == duckdb.StatementType.EXPLAIN:
        # EXPLAIN ANALYZE runs its statement: the explained statement must be read-only too
        body = _strip_keywords(sql, ("EXPLAIN", "ANALYZE", "ANALYSE"))
        inner = con.extract_statements(body) if body.strip() else []
        if len(inner) != 1 or inner[0].type != duckdb.StatementType.SELECT:
            raise QueryRefused("EXPLAIN is allowed on SELECT queries only")


def statement_name(keyword: str, kind: str) -> str:
    """How a refusal names a statement: by its first keyword as written (DuckDB calls INSTALL a
    LOAD statement), else by DuckDB's kind, with its article: ``an ATTACH statement``."""
    word = keyword if keyword.isalpha() else kind
    return f"{'an' if word[:1] in 'AEIOU' else 'a'} {word} statement"


def _first_keyword(sql: str) -> str:
    """The first token of ``sql`` after comments and whitespace, upper-cased."""
    text = _skip_comments(sql)
    if text.startswith("("):
        return "("
    word = ""
    for ch in text:
        if not (ch.isalnum() or ch == "_"):
            break
        word += ch
    return word.upper()


def _skip_comments(sql: str) -> str:
    text = sql.lstrip()
    while True:
        if text.startswith("--"):
            end = text.find("\n")
            text = "" if end < 0 else text[end + 1:].lstrip()
        elif text.startswith("/*"):
            end = text.find("*/")
            text = "" if end < 0 else text[end + 2:].lstrip()
        else:
            return text


def _strip_keywords(sql: str, words: tuple[str, ...]) -> str:
    text = _skip_comments(sql)
    while True:
        head = _first_keyword(text)
        if head in words:
            text = _skip_comments(text[len(head):])
        else:
            return text
