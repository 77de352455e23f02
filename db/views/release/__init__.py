"""The release question's views: Overview's answer, Compare's cases and chart, Regressions' list, the verdict cards."""
