"""mpsbench's one command line: `mpsbench run|list|show|push` (the collector), `mpsbench ingest|info` (the
store), `mpsbench serve` (the dashboard and its API in one process)."""
