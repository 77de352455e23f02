"""The store: tables, the connection, migrations, reads, triage writes. Of db it imports only db.stats (the pure
statistics its stored A/A noise and side figures are computed with) and db.errors, both below it in pyproject's
db contract (`lint-imports`, run by tests/test_layers.py)."""
