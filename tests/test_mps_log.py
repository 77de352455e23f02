"""The MPSProfiler statistics parser, on text in the format PyTorch's MPSProfiler.mm prints (tests/fixtures/
mps_profiler/README.md cites the lines): one test per table, GRAPH vs KERNEL rows, CPU fallbacks and copies."""

from pathlib import Path

import pytest

from collector.adapters.mps_log import Logged, parse

FIXTURES = Path(__file__).parent / "fixtures" / "mps_profiler"


def _read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_operations_table_tells_graphs_from_kernels():
    graph = parse(_read("graph.txt"))
    # softmax: 23 runs, Total GPU 1.323 ms; the fill kernel: 1 run, 0.004 ms (make.py's rows)
    assert graph.rows[:2] == (
        Logged("graph", "softmax_mps_out:f32[1,128256]:Contiguous:1", 23, 1323.0),
        Logged("kernel", "fill_scalar_contiguous_float:MPS:Float[1, 128256]", 1, 4.0),
    )
    kernel = parse(_read("kernel.txt"))
    assert kernel.rows[0] == Logged("kernel", "softmax_float:MPS:Float[1, 128256]:MPS:Float[1, 128256]", 23, 164.0)
    assert [r.kind for r in kernel.rows if r.kind in ("graph", "kernel")] == ["kernel", "kernel"]


def test_cpu_fallback_table_with_its_copy_overhead():
    stats = parse(_read("fallback.txt"))
    fallbacks = [r for r in stats.rows if r.kind == "cpu_fallback"]
    # 23 runs, 9.384 ms of CPU time, 23 × 32768 B copied (printed "736.00 KB": KB are 1024 B)
    assert fallbacks == [Logged("cpu_fallback", "aten::_linalg_eigh", 23, 9384.0, 753664)]
    assert stats.tables == ("operations", "cpu_fallbacks", "copies")


def test_copy_table_every_kind():
    stats = parse(_read("copies.txt"))
    assert stats.rows == (
        Logged("copy", "MPS to MPS", 46, 92.0, 94208),  # 46 × 2048 B = "92.00 KiB"
        Logged("copy", "MPS to CPU", 23, 46.0, 92),  # scalar copies: "92 bytes"
        Logged("copy", "CPU to MPS", 3, 0.0, 3 * 1536 * 1024**2),  # memcpy: no GPU time; "4.50 GiB"
    )
    assert stats.tables == ("operations", "cpu_fallbacks", "copies")  # two of them as "There are no …" lines


def test_copies_beside_a_fallback_in_the_older_size_units():
    rows = {r.name: r for r in parse(_read("fallback.txt")).rows if r.kind == "copy"}
    assert rows["MPS to CPU"] == Logged("copy", "MPS to CPU", 23, 115.0, 23 * 16384)  # "368.00 KB"
    assert rows["CPU to MPS"] == Logged("copy", "CPU to MPS", 24, 138.0, 24 * 16384)


def test_lines_around_the_tables_are_ignored_and_no_tables_is_nothing():
    text = "Traceback (most recent call last):\n  ...\n" + _read("graph.txt") + "\nprocess ended\n"
    assert parse(text) == parse(_read("graph.txt"))
    assert parse("nothing here\n").tables == () and parse("").rows == ()


@pytest.mark.parametrize("name", ["graph.txt", "kernel.txt", "fallback.txt", "copies.txt"])
def test_every_fixture_row_is_read(name):
    """Each printed row is read once: as many rows as the tables' titles and counts say."""
    text = _read(name)
    data_rows = [
        line
        for line in text.splitlines()
        if line.strip() and not set(line.strip()) <= {"-"} and "|" not in line and "Profiling" not in line
    ]
    data_rows = [line for line in data_rows if not line.startswith(("There are no", "[W]"))]
    assert len(parse(text).rows) == len(data_rows)
