"""Measuring one case in one process: the timing loop and its median CI, the bench that turns samples into
Results, correctness against the CPU reference, and the CPU contention while it ran."""
