"""The store: tables, the connection, migrations, the derived tables (db.store.derived) and the writers
(db.store.writers). Of db it imports only db.query (the Compare's pivot, through which its side summaries are
computed; its reads), db.stats (the pure statistics its stored A/A noise and side figures are computed with) and
db.errors, all below it in pyproject's db contract (`lint-imports`, run by tests/test_layers.py)."""
