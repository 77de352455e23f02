"""The project's own benchmarks: each module a command (`python -m benchmarks.<name>` or `python benchmarks/<x>.py`)
measuring one cost or one verdict's accuracy, and stores/ (the stores and bundles they and the tests build).
Nothing in the product imports them; they import no `tests` (pyproject's import-linter contracts)."""
