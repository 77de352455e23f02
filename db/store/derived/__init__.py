"""Tables derived from the stored results, kept beside them: the A/A pairs and their noise figures (aa_pairs), the
contention each result carries (contention) and the side summaries a Compare of two builds reads (side_cases)."""
