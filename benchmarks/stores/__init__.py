"""What the benchmarks, the tests and scripts/screenshots.py build stores from: the seeded store with known answers
(seed), the typed bundle envelope its runs share (bundles) and a throwaway Postgres for a DuckLake store (pg_lake)."""
