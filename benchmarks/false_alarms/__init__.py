"""Do the review's verdicts hold on real runs (`python -m benchmarks.false_alarms`, in __main__)? Its parts:
disturbance (the competing load and the planted builds) and review_outcomes (the reviews of the runs collected)."""
