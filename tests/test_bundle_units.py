"""Units convert only within a dimension; metrics refuse units of another dimension and name what is allowed."""

import pytest

from bundle.metrics import METRICS, Better, Comparison, MetricError, check_unit, metric
from bundle.units import UnitError, canonical_symbol, convert


@pytest.mark.parametrize(
    ("value", "source", "target", "expected"),
    [
        (1.0, "s", "µs", 1e6),
        (2500.0, "ns", "µs", 2.5),
        (3.0, "ms", "s", 0.003),
        (1.0, "GiB", "MiB", 1024.0),
        (8.070, "GiB", "B", 8.070 * 2**30),
        (2.0, "GB/s", "B/s", 2e9),
        (50.0, "%", "1", 0.5),
    ],
)
def test_convert_within_dimension(value, source, target, expected):
    assert convert(value, source, target) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("source", "target"), [("µs", "B"), ("tokens/s", "s"), ("dB", "%"), ("GiB", "GB/s")])
def test_convert_across_dimensions_is_refused(source, target):
    with pytest.raises(UnitError, match="cannot convert"):
        convert(1.0, source, target)


def test_unknown_unit_lists_allowed():
    with pytest.raises(UnitError, match=r"unknown unit 'furlongs'.*allowed: ns, µs"):
        canonical_symbol("furlongs")


def test_aliases_map_to_one_canonical_symbol():
    assert canonical_symbol("us") == canonical_symbol("μs") == "µs"  # ASCII, Greek mu and micro sign


def test_metric_units_are_checked_against_dimension():
    assert check_unit("op_time", "ms") == "ms"
    with pytest.raises(MetricError, match=r"not a time unit for metric 'op_time'; allowed: ns, µs, ms, s"):
        check_unit("op_time", "GiB")
    with pytest.raises(MetricError, match=r"unknown metric 'speed'; allowed: op_time"):
        metric("speed")


def test_every_metric_is_coherent():
    for m in METRICS.values():
        assert check_unit(m.name, m.unit) == m.unit
        # dB and signed quantities are differences; a ratio of them would be meaningless
        if m.unit == "dB":
            assert m.comparison is Comparison.difference
    assert metric("decode_throughput").better is Better.higher
    assert metric("op_time").better is Better.lower
    assert metric("memory_outside_allocator").comparison is Comparison.difference  # can be negative
