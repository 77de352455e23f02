"""The DuckLake store beside the DuckDB file store (`python -m benchmarks.lake`, in __main__): its parts load
(replicas under load over HTTP) and sizes (cold Compare on a large store)."""
