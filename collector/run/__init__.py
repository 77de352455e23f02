"""One collector run: what it measures (plan), its session (fingerprint, journal, processes, bundle) and the
kernel pass after its timing."""
