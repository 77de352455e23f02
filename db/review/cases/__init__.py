"""The case table a comparison answers: its columns and each case's direction (columns), its text columns
(text_columns), a change in words (wording) and the figures derived from a timing (derived_figures)."""
