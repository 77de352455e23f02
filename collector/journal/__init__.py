"""JSON-lines journals: the one writer (append, flush, fsync) every journal uses, the run's journal and the one
reader that checks a journal read back (the run's, the sweep's, confirm's and bisect's)."""
