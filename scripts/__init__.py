"""Developer scripts: setup and start (shell), and screenshots (`python -m scripts.screenshots`). Nothing in the
product imports them; they import no `tests` (pyproject's import-linter contracts)."""
