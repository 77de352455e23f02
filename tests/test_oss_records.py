"""`mpsbench ingest` of PyTorch's own benchmark records (db/ingest/records.py, bundle/pytorch_oss/reading.py): real-format
files of gpt-fast, vLLM and the operator benchmark on MPS (tests/fixtures/pytorch_oss/README.md names the code
that writes each) stored with the metrics whose meaning is certain, `--metric NAME=metric:unit` for the rest
(checked against the registries), units checked, and hostile files (deep nesting, huge records, wrong types, unit
mismatches, empty, not UTF-8) each one ERROR naming the record and the field, with nothing stored. The reader
streams: its peak memory follows the bundle it makes, not the file."""

from __future__ import annotations

import json
import tracemalloc
from datetime import datetime, timezone
from pathlib import Path

import pytest

import db.ingest.records
from bundle.pytorch_oss.writing import to_records
from db.cli import main
from db.query.read import read_frame
from db.store.engine import open_store

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "pytorch_oss"
NOW = datetime(2026, 12, 5, tzinfo=timezone.utc)


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines()]


def _stored(store: Path) -> tuple[list[dict], list[dict]]:
    engine = open_store(store)
    try:
        runs = read_frame(engine, "SELECT * FROM runs").to_dict("records")
        results = read_frame(engine, "SELECT * FROM results ORDER BY workload, metric").to_dict("records")
    finally:
        engine.dispose()
    return runs, results


@pytest.fixture
def store(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "s.duckdb"
    monkeypatch.setenv("MPSBENCH_DB", str(path))
    return path


def test_gpt_fast_records_are_stored_as_tokens_per_second_and_bandwidth_with_the_build_from_dependencies(store, capsys):
    """gpt-fast's `token_per_sec` is decode_throughput and `memory_bandwidth(GB/s)` achieved_bandwidth; the build
    is `dependencies.pytorch.version` (the uploader's), the machine the runner's hostname (its `name` is "cuda")."""
    rows = _rows("gpt_fast.json")
    assert main(["ingest", str(FIXTURES / "gpt_fast.json")]) == 0
    out = capsys.readouterr().out
    assert "3 results (PyTorch OSS records; 1 not stored)" in out
    assert "records[2].metric.name 'compilation_time(s)': not an mpsbench metric" in out
    (run,), results = _stored(store)
    pytorch = rows[0]["dependencies"]["pytorch"]
    assert (run["torch_version"], run["git_hash"], run["channel"], run["nightly_date"]) == (
        pytorch["version"],
        pytorch["sha"],
        "nightly",
        "2025-11-05",
    )
    runner = rows[0]["runners"][0]
    assert (run["machine_name"], run["chip"], run["device_type"]) == (
        runner["extra_info"]["hostname"],
        runner["type"],
        "cuda",
    )
    assert run["started_at"].replace(tzinfo=timezone.utc) == datetime.fromtimestamp(rows[0]["timestamp"], timezone.utc)
    want = {
        ("Llama-2-7b-chat-hf", "achieved_bandwidth", "GB/s", float(rows[1]["metric"]["benchmark_values"][0])),
        ("Llama-2-7b-chat-hf", "decode_throughput", "tokens/s", float(rows[0]["metric"]["benchmark_values"][0])),
        ("layer_norm", "achieved_bandwidth", "GB/s", float(rows[3]["metric"]["benchmark_values"][0])),
    }
    assert {(r["workload"], r["metric"], r["unit"], r["samples"][0]) for r in results} == want
    assert {r["dtype"] for r in results} == {"bfloat16"}


def test_vllm_serving_records_store_the_median_time_to_first_token(store, capsys):
    rows = _rows("vllm_serving.json")
    assert main(["ingest", str(FIXTURES / "vllm_serving.json")]) == 0
    assert "1 results (PyTorch OSS records; 11 not stored)" in capsys.readouterr().out
    (run,), (result,) = _stored(store)
    median = next(r for r in rows if r["metric"]["name"] == "median_ttft_ms")
    assert (result["metric"], result["unit"], list(result["samples"])) == (
        "time_to_first_token",
        "ms",
        median["metric"]["benchmark_values"],
    )
    assert (result["workload"], result["dtype"]) == (median["model"]["name"], "unavailable")
    assert (run["device_type"], run["machine_name"]) == ("cuda", median["runners"][0]["extra_info"]["hostname"])


def test_the_vllm_job_s_own_file_lacks_the_build_and_is_refused_naming_it(store, capsys):
    """The job leaves a JSON list without the build: test-infra's uploader adds `dependencies`."""
    assert main(["ingest", str(FIXTURES / "vllm_serving.pytorch.json")]) == 1
    out = capsys.readouterr().out
    assert "ERROR: not a run: records[0].benchmark.extra_info.torch_version: the build is unavailable" in out
    assert _stored(store) == ([], [])


def test_operator_benchmark_latencies_on_mps_are_op_times(store, capsys):
    """The operator benchmark's `latency` (its unit in metric.unit, "us") is op_time; its `peak memory` (KB, of a
    kind the format does not say) is not stored."""
    rows = _rows("operator_benchmark_mps.json")
    assert main(["ingest", str(FIXTURES / "operator_benchmark_mps.json")]) == 0
    assert "3 results (PyTorch OSS records; 3 not stored)" in capsys.readouterr().out
    (run,), results = _stored(store)
    latencies = {r["model"]["name"]: r["metric"]["benchmark_values"] for r in rows if r["metric"]["name"] == "latency"}
    assert {r["workload"]: list(r["samples"]) for r in results} == latencies
    assert {(r["metric"], r["unit"], r["dtype"]) for r in results} == {("op_time", "µs", "float")}
    assert (run["device_type"], run["machine_name"], run["chip"]) == (
        "mps",
        rows[0]["runners"][0]["extra_info"]["hostname"],
        None,
    )


def test_metric_option_stores_a_metric_of_another_name_in_the_unit_given(store, capsys):
    rows = _rows("gpt_fast.json")
    args = ["ingest", str(FIXTURES / "gpt_fast.json"), "--metric", "compilation_time(s)=compile_time:s"]
    assert main(args) == 0
    assert "4 results" in capsys.readouterr().out
    _, results = _stored(store)
    compiled = [r for r in results if r["metric"] == "compile_time"]
    assert [(r["unit"], list(r["samples"])) for r in compiled] == [
        ("s", [float(rows[2]["metric"]["benchmark_values"][0])])
    ]


def test_metric_option_that_contradicts_the_record_s_own_unit_is_refused(store, capsys):
    args = ["ingest", str(FIXTURES / "gpt_fast.json"), "--metric", "compilation_time(s)=compile_time:ms"]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "records[2].metric: 'compilation_time(s)' states its unit 's'; --metric says 'ms'" in out
    assert _stored(store) == ([], [])


@pytest.mark.parametrize(
    "option,rule",
    [
        ("abs_latency=op_time:furlongs", "unknown unit 'furlongs'; allowed: "),
        ("abs_latency=op_time:GiB", "unit 'GiB' is not a time unit for metric 'op_time'; allowed: ns, µs, ms, s"),
        ("abs_latency=latency:ms", "unknown metric 'latency'; allowed: op_time, "),
        ("abs_latency", "write NAME=metric:unit"),
        ("=op_time:ms", "write NAME=metric:unit"),
    ],
)
def test_a_bad_metric_option_is_one_error_naming_the_rule_and_makes_no_store(store, capsys, option, rule):
    assert main(["ingest", str(FIXTURES / "gpt_fast.json"), "--metric", option]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"ERROR: --metric {option!r}: ") and rule in out
    assert not store.exists()


def _record(metric: str = "op_time(ms)", values: object = (0.05,), **extra_info) -> dict:
    return {
        "benchmark": {"name": "b", "dtype": "float32", "extra_info": {"device": "mps", "torch_version": "2.15.0"}},
        "model": {"name": "softmax"},
        "metric": {
            "name": metric,
            "benchmark_values": list(values) if isinstance(values, tuple) else values,
            **extra_info,
        },
        "runners": [{"name": "mac-a"}],
    }


DEEP = "[" * 100_000 + "]" * 100_000
# (file bytes, the field the refusal names, words of its rule)
HOSTILE = {
    "op_time in furlongs": (
        json.dumps([_record("op_time(furlongs)")]),
        "records[0].metric.name",
        "unknown unit 'furlongs'",
    ),
    "op_time in GiB": (
        json.dumps([_record("op_time(GiB)")]),
        "records[0].metric.name",
        "is not a time unit for metric 'op_time'",
    ),
    "two units": (
        json.dumps([_record("op_time(ms)", extra_info={"unit": "s"})]),
        "records[0].metric",
        "stated more than once",
    ),
    "nested 100,000 deep in a list": (
        json.dumps([_record()]).replace('"b"', DEEP, 1),
        "records[0]",
        "nested deeper than 200 levels",
    ),
    "nested 100,000 deep, second record": (
        json.dumps([_record(), _record()]).replace('"softmax"', DEEP).replace(DEEP, '"softmax"', 1),
        "records[1]",
        "nested deeper than 200 levels",
    ),
    "nested 100,000 deep in a row": (
        json.dumps(_record()).replace('"b"', DEEP, 1),
        "line 1",
        "nested deeper than 200 levels",
    ),
    "a record over the limit": (
        json.dumps([_record()]).replace('"b"', json.dumps("x" * (2 << 20)), 1),
        "records[0]",
        "a record over 1 MB",
    ),
    "a line over the limit": (
        json.dumps(_record()).replace('"b"', json.dumps("x" * (2 << 20)), 1),
        "line 1",
        "a line over 1 MB",
    ),
    "values a string": (
        json.dumps([_record(values="fast")]),
        "records[0].metric.benchmark_values",
        "must be a list of numbers",
    ),
    "values a word": (
        json.dumps([_record(values=("fast",))]),
        "records[0].metric.benchmark_values",
        "must be a list of numbers",
    ),
    "values true": (json.dumps([_record(values=(True,))]), "records[0].metric.benchmark_values", "finite numbers"),
    "values NaN": (
        json.dumps([_record(values=(float("nan"),))]),
        "records[0].metric.benchmark_values",
        "finite numbers",
    ),
    "model name a list": (
        json.dumps([_record()]).replace('"softmax"', '["softmax"]'),
        "records[0].model.name",
        "is required as text",
    ),
    "a record that is a number": (json.dumps([_record(), 5]), "records[1]", "must be a JSON object"),
    "a row that is a number": (json.dumps(_record()) + "\n5\n", "line 2", "must be a JSON object"),
    "a row that is not JSON": (json.dumps(_record()) + "\n{not json\n", "line 2", "not JSON"),
    "cut short": (json.dumps([_record()])[:-1], "records", "the file ends before the list's closing ]"),
    "text after the list": (json.dumps([_record()]) + " x", "records", "text after the list's closing ]"),
    "not UTF-8 in a list": (json.dumps([_record()]).replace("softmax", "caf\udce9"), "records[0]", "not UTF-8"),
    "not UTF-8 in a row": (json.dumps(_record()).replace("softmax", "caf\udce9"), "line 1", "not UTF-8"),
    "the build a number": (
        json.dumps([_record()]).replace('"2.15.0"', "2.15"),
        "records[0].benchmark.extra_info.torch_version",
        "not a torch version",
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_record_file_is_one_error_naming_the_record_and_field_and_stores_nothing(
    store, tmp_path, monkeypatch, capsys, name
):
    monkeypatch.setenv("MPSBENCH_MAX_UPLOAD_MB", "1")
    text, field, rule = HOSTILE[name]
    path = tmp_path / "hostile.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    assert main(["ingest", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}: ERROR: not a run: {field}: " in out and rule in out, out[:2000]
    assert "Traceback" not in out and _stored(store) == ([], [])


@pytest.mark.parametrize(
    "text,words", [(b"", "not valid JSON"), (b"\n\n", "not valid JSON"), (b"[]", "not a JSON object")]
)
def test_an_empty_file_is_one_error(store, tmp_path, capsys, text, words):
    path = tmp_path / "empty.json"
    path.write_bytes(text)
    assert main(["ingest", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{path}: ERROR: ") and words in out and _stored(store) == ([], [])


@pytest.mark.parametrize("layout", ["list", "rows"])
def test_the_reader_holds_the_bundle_it_makes_not_the_file(tmp_path, monkeypatch, layout):
    """A 24 MB file of mpsbench's own export (each record carries the run's header): the reader's Python peak is
    the bundle it makes (held once) and its read buffers, not the file's records (the whole list parsed was 6× the
    file). The bundle is measured independently as the run's results' JSON."""
    monkeypatch.setattr(db.ingest.records, "CHUNK", 1 << 20)
    example = FIXTURES.parents[2] / "examples" / "cpu-quick.json"
    header = {k: v for k, v in json.loads(example.read_text(encoding="utf-8")).items() if k != "results"}
    path, results = tmp_path / f"big.{layout}.json", []
    with path.open("w", encoding="utf-8") as f:
        f.write("[" if layout == "list" else "")
        n = 0
        while f.tell() < 24e6:
            result = {"workload": "softmax", "suite": "kernels", "params": {"rows": n}, "dtype": "float32",
                      "compile": "eager", "metric": "op_time", "unit": "µs", "status": "ok",
                      "samples": [100.0 + (n + i) % 7 for i in range(50)]}  # fmt: skip
            (record,) = to_records({**header, "results": [result]})
            text = json.dumps(record)
            f.write(((",\n" if n else "") + text) if layout == "list" else text + "\n")
            results.append(result)
            n += 1
        f.write("]" if layout == "list" else "")
    tracemalloc.start()
    try:
        body, skipped, _ = db.ingest.records.records_bundle(path, "big", NOW, {})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    bundle = json.loads(body)
    assert (len(bundle["results"]), skipped) == (n, 0)
    results_json = len(json.dumps(bundle["results"]).encode())
    assert peak < 1.5 * results_json + 6 * (1 << 20), (peak, results_json)
    assert peak < path.stat().st_size / 2
