"""The processes that time a case: the case worker (isolator) and what runs in it (runner, profiled, capture,
failures), a run's worker processes merged per case (processes), and children tied to their parent (lifeline)."""
