"""Placeholders for names private to LangGraph that the store test files import.

Used only with ``--impl plait`` (read by ``../shared/lgtests/alias``).  When
plait lacks one of these names, an inert placeholder is attached so that the
test *file* still imports; the tests that use it fail (functions raise
``NotImplementedError``).  Only names private to LangGraph's implementation are
listed: a public module or name that plait lacks makes its file fail to import,
as it should.
"""

STUBS = {
    "langgraph.store.base.batch": {"_dedupe_ops": "func"},
    "langgraph.store.sqlite.base": {
        # LangGraph's SQL builder class and the name of its SQLite match function:
        # only its query-text test uses them.
        "BaseSqliteStore": "class",
        "NS_MATCH_FUNCTION": ("const", "_langgraph_namespace_match"),
        "_escape_glob_literal": "func",
        "_namespace_match_pattern": "func",
    },
    "langgraph.store.postgres.base": {
        "_escape_like_literal": "func",
        "_namespace_match_pattern": "func",
    },
    # LangGraph's private connection helpers (one test counts pool checkouts with them)
    "langgraph.checkpoint.postgres": {"_ainternal": "class"},
}
WHOLE_MODULE_OK: set[str] = set()
