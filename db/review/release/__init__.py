"""A judged review as a release answer: the release summary (summary) over its rows per group (group_rows), its
answers and words (answer, scope_answer, group_words), the listed cases (listing), the evidence per group
(evidence) and the cases whose status changed (status_changes)."""
