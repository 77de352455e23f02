"""The store: tables, the connection, migrations, reads, triage writes. Imports nothing else of db."""
