"""`mpsbench export --format pytorch-oss` and `mpsbench ingest` of PyTorch OSS benchmark records
(bundle/pytorch_oss/writing.py): the record's fields as PyTorch's writers fill them; export → ingest into a fresh store
→ the same review (every median, every verdict); records written elsewhere (gpt-fast's shape, JSON-each-row)
stored with what they say, what they cannot say stated, non-mpsbench metrics named as not stored; bad input is
"ERROR: …" naming the field, with nothing stored."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

import db.store.engine
from bundle.pytorch_oss.reading import from_records
from bundle.pytorch_oss.writing import to_records
from bundle.schema import Bundle
from db.cli import main
from db.query.read import read_frame
from db.review.release.summary import review_answer
from db.review.review import Review
from db.store.engine import open_store
from tests import release_walk as w
from tests.bundles import make_bundle, make_result

NOW = datetime(2026, 12, 5, tzinfo=timezone.utc)


def _answer(path) -> dict:
    engine = open_store(path)
    try:
        review = Review.from_params({"baseline": w.BASELINE, "candidate": w.CANDIDATE, "scope": "machine"})
        return json.loads(json.dumps(review_answer(engine, review)))
    finally:
        engine.dispose()


def test_export_then_ingest_into_a_fresh_store_gives_the_same_review(tmp_path, monkeypatch, capsys):
    source = tmp_path / "source.duckdb"
    engine = open_store(source)
    w.walk_store(engine, processes=10, runs=3)  # 18 runs: 2 Macs × 3 builds × 3 rounds, 10 processes each
    engine.dispose()
    monkeypatch.setenv("MPSBENCH_DB", str(source))
    assert (
        main(
            [
                "export",
                "--format",
                "pytorch-oss",
                "--out",
                str(tmp_path / "review"),
                "--baseline",
                w.BASELINE,
                "--candidate",
                w.CANDIDATE,
            ]
        )
        == 0
    )
    assert len(list((tmp_path / "review").glob("*.json"))) == 12
    said = capsys.readouterr().out
    assert said.endswith(f"12 run(s) exported to {tmp_path / 'review'} (PyTorch OSS benchmark format)\n")
    monkeypatch.setenv("MPSBENCH_DB", str(tmp_path / "review.duckdb"))
    assert main(["ingest", str(tmp_path / "review")]) == 0
    assert capsys.readouterr().out.count(" new, ") == 12
    before, after = _answer(source), _answer(tmp_path / "review.duckdb")
    key = ("scope", "workload", "case_key", "dtype", "metric")
    medians = {tuple(r[k] for k in key): (r["baseline_median"], r["candidate_median"]) for r in before["regressions"]}
    assert len(medians) == 3 and medians == {
        tuple(r[k] for k in key): (r["baseline_median"], r["candidate_median"]) for r in after["regressions"]
    }
    # the nightly's runs too (selectors add up): the A/A noise model then has every pair, and the review is the same
    monkeypatch.setenv("MPSBENCH_DB", str(source))
    assert (
        main(
            [
                "export",
                "--format",
                "pytorch-oss",
                "--out",
                str(tmp_path / "all"),
                "--select",
                w.NIGHTLY,
                "--baseline",
                w.BASELINE,
                "--candidate",
                w.CANDIDATE,
            ]
        )
        == 0
    )
    files = sorted((tmp_path / "all").glob("*.json"))
    monkeypatch.setenv("MPSBENCH_DB", str(tmp_path / "all.duckdb"))
    assert len(files) == 18 and main(["ingest", str(tmp_path / "all")]) == 0
    assert _answer(tmp_path / "all.duckdb") == before  # every figure, verdict, doubt and note
    capsys.readouterr()
    assert main(["ingest", str(files[0])]) == 0 and "already present" in capsys.readouterr().out


def test_the_records_carry_the_fields_pytorch_reads_with_units_in_the_metric_names():
    bundle = Bundle.model_validate(
        make_bundle(
            results=[
                make_result(samples=[10.0, 11.0, 12.0, 13.0], processes=[2, 2], contention=[0.0, None]),
                make_result(
                    workload="vae",
                    suite="models",
                    params={"px": 512},
                    metric="memory_driver_peak",
                    unit="GiB",
                    samples=[2.0],
                ),
            ]
        )
    ).model_dump(mode="json")
    timing, memory = to_records(bundle)
    assert timing["benchmark"]["name"] == "mpsbench" and timing["benchmark"]["mode"] == "inference"
    assert timing["benchmark"]["dtype"] == bundle["results"][0]["dtype"]
    assert timing["benchmark"]["extra_info"]["device"] == bundle["device"]["type"]
    assert timing["benchmark"]["extra_info"]["torch_version"] == bundle["build"]["torch_version"]
    assert timing["metric"]["name"] == "op_time(us)" and timing["metric"]["extra_info"]["unit"] == "µs"
    assert timing["metric"]["benchmark_values"] == [10.0, 11.0, 12.0, 13.0]
    assert timing["metric"]["extra_info"]["processes"] == [2, 2]
    assert timing["metric"]["extra_info"]["contention"] == [0.0, None]
    assert timing["model"] == {
        "name": "softmax",
        "type": "micro-benchmark",
        "backend": "eager",
        "origins": ["pytorch"],
        "extra_info": {"suite": "kernels", "params": bundle["results"][0]["params"]},
    }
    assert memory["metric"]["name"] == "memory_driver_peak(GiB)" and memory["metric"]["extra_info"]["unit"] == "GiB"
    assert memory["metric"]["benchmark_values"] == [2.0] and memory["model"]["origins"] == ["huggingface"]
    [run] = timing["runners"]
    assert run["name"] == bundle["machine"]["name"] and run["gpu_count"] == 1
    assert run["avail_gpu_mem_in_gb"] is None  # unified memory: no GPU figure of its own, never 0
    back, skipped = from_records(json.loads(json.dumps([timing, memory])), b"", "x.json", NOW)
    assert skipped == [] and Bundle.model_validate(back).results[0].contention == [0.0, None]


def _gpt_fast_like(metric: str, values: list, **extra) -> dict:
    """A record shaped as pytorch/pytorch benchmarks/gpt_fast/benchmark.py writes it, with the runner that
    pytorch/test-infra's uploader adds, and its timestamp."""
    return {
        "benchmark": {
            "name": "PyTorch gpt-fast benchmark",
            "mode": "inference",
            "dtype": "bfloat16",
            "extra_info": {"device": "mps", "arch": "arm64", "torch_version": "2.16.0.dev20261201", **extra},
        },
        "model": {"name": "layer_norm", "type": "micro-benchmark", "origins": ["pytorch"]},
        "metric": {"name": metric, "benchmark_values": values, "target_value": None},
        "runners": [{"name": "macos-m2-15", "type": "Apple M2", "cpu_info": "arm", "gpu_info": "Apple M2"}],
        "timestamp": 1764547200,
    }


def test_records_from_pytorchs_jobs_are_stored_with_what_they_say_and_the_rest_named(tmp_path, monkeypatch, capsys):
    path = tmp_path / "oss" / "gpt_fast.json"
    path.parent.mkdir()
    rows = [
        _gpt_fast_like("op_time(ms)", ["0.050", "0.051", "0.052"]),  # gpt-fast writes its figures as text
        _gpt_fast_like("memory_bandwidth(GB/s)", [812.0]),
        _gpt_fast_like("peak_memory", [3.5]),
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")  # JSON-each-row, as test-infra reads it
    monkeypatch.setenv("MPSBENCH_DB", str(tmp_path / "s.duckdb"))
    assert main(["ingest", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 results (PyTorch OSS records; 1 not stored)" in out  # gpt-fast's bandwidth is mpsbench's (KNOWN)
    assert "records[2].metric.name 'peak_memory': not an mpsbench metric, so what it measures (which memory kind" in out
    engine = open_store(tmp_path / "s.duckdb")
    run = read_frame(engine, "SELECT * FROM runs").iloc[0]
    result, bandwidth = (r for _, r in read_frame(engine, "SELECT * FROM results ORDER BY metric DESC").iterrows())
    engine.dispose()
    assert (bandwidth.metric, bandwidth.unit, list(bandwidth.samples)) == ("achieved_bandwidth", "GB/s", [812.0])
    assert (run.machine_name, run.chip, run.device_type, run.torch_version, run.channel, run.nightly_date) == (
        "macos-m2-15",
        "Apple M2",
        "mps",
        "2.16.0.dev20261201",
        "nightly",
        "2026-12-01",
    )
    assert run.started_at.replace(tzinfo=timezone.utc) == datetime.fromtimestamp(1764547200, timezone.utc)
    assert "worker processes, contention, memory kinds" in run.warnings_json and "unavailable" in run.warnings_json
    what = (result.workload, result.metric, result.unit, result["dtype"])
    assert what == ("layer_norm", "op_time", "µs", "bfloat16")
    assert list(result.samples) == pytest.approx([50.0, 51.0, 52.0]) and list(result.processes) == []


@pytest.mark.parametrize(
    "change,field",
    [
        (lambda r: r["benchmark"]["extra_info"].pop("torch_version"), "records[0].benchmark.extra_info.torch_version"),
        (lambda r: r["benchmark"]["extra_info"].update(device="xpu"), "records[0].benchmark.extra_info.device"),
        (lambda r: r.update(runners=[]), "records[0].runners[0].name"),
        (lambda r: r["metric"].update(benchmark_values=["fast"]), "records[0].metric.benchmark_values"),
        (lambda r: r["metric"].update(name="op_time"), "records"),  # no unit anywhere: nothing stored
    ],
)
def test_a_record_file_the_format_cannot_make_a_run_of_is_refused_naming_the_field(
    tmp_path, monkeypatch, capsys, change, field
):
    record = _gpt_fast_like("op_time(ms)", [0.05])
    change(record)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([record]))
    monkeypatch.setenv("MPSBENCH_DB", str(tmp_path / "s.duckdb"))
    assert main(["ingest", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}: ERROR: " in out and f"  {field}: " in out and "Traceback" not in out
    engine = db.store.engine.open_store(tmp_path / "s.duckdb")
    assert int(read_frame(engine, "SELECT count(*) AS n FROM runs").n[0]) == 0
    engine.dispose()


@pytest.mark.parametrize(
    "args,words",
    [
        (["--format", "csv", "--out", "x", "--select", "torch=2.14.1"], "argument --format"),
        (["--format", "pytorch-oss", "--out", "x"], "--select or --baseline/--candidate"),
        (["--format", "pytorch-oss", "--out", "x", "--baseline", "torch=2.14.1"], "--baseline and --candidate"),
        (["--format", "pytorch-oss", "--out", "x", "--select", "torch=9.9.9"], "torch=9.9.9: no stored run"),
        (["--format", "pytorch-oss", "--out", "x", "--select", "runs:xyz"], "runs:<id>,<id>"),
    ],
)
def test_bad_export_arguments_are_one_error_line(tmp_path, monkeypatch, capsys, args, words):
    engine = open_store(tmp_path / "s.duckdb")
    w.walk_store(engine)
    engine.dispose()
    monkeypatch.setenv("MPSBENCH_DB", str(tmp_path / "s.duckdb"))
    monkeypatch.chdir(tmp_path)
    assert main(["export", *args]) == 1
    out = capsys.readouterr().out
    assert out.startswith("ERROR: ") and words in out and not (tmp_path / "x").exists()
