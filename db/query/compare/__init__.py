"""The Compare query: both sides' samples paired per case in DuckDB (pivot: its SQL; pairs: read in key order),
a Compare of two builds from the side summaries (side_reads), and the cases one side lacks (unmatched)."""
