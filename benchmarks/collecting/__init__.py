"""What collecting costs, each a script (`python benchmarks/collecting/<name>.py`): the timing loop against
torch.utils.benchmark (timing), crash isolation per case and per worker (case_isolation), a sweep over running its
plan by hand (sweep_overhead)."""
