"""Session-wide test settings."""
import os

# Collector runs in the tests (CLI, sweeps, benchmarks at tiny size) use two worker processes: the multi-process
# path is exercised, at a fifth of the default's cost on a 2-core machine. Tests of the default set their own.
os.environ.setdefault("MPSBENCH_PROCESSES", "2")
