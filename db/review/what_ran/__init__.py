"""What changed in what ran: one case's kernels breakdowns judged (kernels), and the listed cases' read at once
(cases)."""
