"""PyTorch OSS benchmark records as one run's bundle: the reading side of bundle/pytorch_oss/writing.py (docs/pytorch-oss.md).

A file is one run. `RunFromRecords` takes its records one at a time (db.ingest.records streams them from the file)
and writes each stored result's JSON to a sink as it goes, so no file is held whole. Records mpsbench exported
carry their run; records from elsewhere give what they say — the build from `benchmark.extra_info.torch_version`
(or `dependencies.pytorch.version`, which pytorch/test-infra's uploader adds), the device from
`benchmark.extra_info.device` (or the runner's `name`, where test-infra's gather_runners_info puts the device
kind), the machine from the runner (its `extra_info.hostname`, else its `name`) — and what they cannot say is stated
on the run as unavailable.

Which mpsbench metric each record is, its unit checked: bundle/pytorch_oss/metrics.py. Bad input is a RecordError naming
the field."""

from __future__ import annotations

import hashlib
import io
import json
import math
from datetime import datetime, timezone
from typing import IO, Any

from bundle.builds import infer_channel, parse_version
from bundle.pytorch_oss import kernels as oss_kernels
from bundle.pytorch_oss.metrics import MetricMap, RecordError, get, record_metric
from bundle.pytorch_oss.writing import IMPORTED, OWN, UNAVAILABLE

SKIPPED_KEPT = 200  # reasons kept word for word; more are counted (a file of 200,000 unknown metrics)


def _values(record: dict, i: int) -> list[float]:
    values = get(record, "metric.benchmark_values")
    field = f"records[{i}].metric.benchmark_values"
    if not isinstance(values, list):
        raise RecordError(field, "must be a list of numbers")
    try:  # gpt-fast writes its figures as text ("12.34")
        out = [float(v) for v in values if not isinstance(v, bool)]
    except (TypeError, ValueError, OverflowError):
        raise RecordError(field, "must be a list of numbers") from None
    if len(out) != len(values) or not all(math.isfinite(v) for v in out):
        raise RecordError(field, "must be a list of finite numbers")
    return out


def _result(record: dict, i: int, base: str, symbol: str, own: bool) -> dict[str, Any]:
    extra = get(record, "metric.extra_info") if own else None
    extra = extra if isinstance(extra, dict) else {}
    model_extra = get(record, "model.extra_info") if own else None
    params = model_extra.get("params") if isinstance(model_extra, dict) else None
    workload = get(record, "model.name")
    if not workload or not isinstance(workload, str):
        raise RecordError(f"records[{i}].model.name", "is required as text (the model or test name)")
    samples = _values(record, i)
    out = {
        "workload": workload,
        "suite": str((model_extra or {}).get("suite") or "pytorch-oss"),
        "params": params
        if isinstance(params, dict)
        else {"benchmark": str(get(record, "benchmark.name") or UNAVAILABLE)},
        "dtype": str(get(record, "benchmark.dtype") or UNAVAILABLE),
        "compile": str(get(record, "model.backend") or UNAVAILABLE),
        "metric": base,
        "unit": symbol,
        "status": str(extra.get("status") or ("ok" if samples else "error")),
        "samples": samples,
    }
    if not samples and "status" not in extra:
        out["message"] = "the record has no benchmark_values"
    for key in ("message", "warnings", "processes", "contention", "passed", "tolerance", "rounding"):
        if extra.get(key) is not None:  # mpsbench's own export: what the PyTorch fields cannot hold
            out[key] = extra[key]
    return out


def _runner(first: dict) -> dict:
    runners = first.get("runners")
    return runners[0] if isinstance(runners, list) and runners and isinstance(runners[0], dict) else {}


def _foreign_header(first: dict, source: str, fallback_time: datetime) -> dict[str, Any]:
    version, said = _foreign_version(first)
    runner = _runner(first)
    device = get(first, "benchmark.extra_info.device") or (
        runner.get("name") if runner.get("name") in ("mps", "cuda", "cpu") else None
    )
    if device not in ("mps", "cuda", "cpu"):
        raise RecordError(
            "records[0].benchmark.extra_info.device", f"must be mps, cuda or cpu (got {str(device)[:40]!r})"
        )
    name = get(runner, "extra_info.hostname") or runner.get("name")
    if not name:
        raise RecordError("records[0].runners[0].name", "the machine is unavailable in these records: a run needs it")
    stamp = first.get("timestamp")
    started = _foreign_start(stamp, fallback_time)
    warnings = [IMPORTED.format(source=source)]
    if stamp is None:
        warnings.append("started_at: the file's modification time (the records carry no timestamp)")
    sha = get(first, "benchmark.extra_info.git_hash") or get(first, "dependencies.pytorch.sha")
    gpu = runner.get("gpu_info") or runner.get("type") or device
    return {
        "schema_version": 1,
        "run_id": "",  # a hash of the whole file: known when it is read (RunFromRecords.head)
        "started_at": started.isoformat(),
        "complete": True,
        "warnings": warnings,
        "tags": {"source": "pytorch-oss"},
        "machine": {
            "name": str(name),
            "chip": runner.get("type") or None,
            "os": UNAVAILABLE,
            "cpu_model": runner.get("cpu_info") or None,
            "arch": get(first, "benchmark.extra_info.arch") or None,
        },
        "build": {
            "torch_version": str(version),
            "git_hash": sha if sha and sha != UNAVAILABLE else None,
            "channel": infer_channel(str(version)),
            "nightly_date": said.nightly_date,
            "local_variant": said.local_variant,
            "python_version": UNAVAILABLE,
            "collector_version": UNAVAILABLE,
            "command_line": f"imported: {source}",
        },
        "device": {"type": device, "name": str(gpu)},
    }


def _foreign_version(first: dict) -> tuple[str, Any]:
    """The records' torch version and what it says (bundle.builds.parse_version); a RecordError where absent or
    not a torch version."""
    version = get(first, "benchmark.extra_info.torch_version") or get(first, "dependencies.pytorch.version")
    if not version:
        raise RecordError(
            "records[0].benchmark.extra_info.torch_version",
            "the build is unavailable in these records (nor dependencies.pytorch.version): a run needs it",
        )
    if not isinstance(version, str):
        raise RecordError(
            "records[0].benchmark.extra_info.torch_version", f"must be text: not a torch version: {version!r:.80}"
        )
    said = parse_version(version)
    if said.channel == "unknown":
        raise RecordError(
            "records[0].benchmark.extra_info.torch_version", f"not a torch version: {str(version)[:80]!r}"
        )
    return version, said


def _foreign_start(stamp: Any, fallback_time: datetime) -> datetime:
    """When the run started: the records' timestamp, else `fallback_time` (the file's modification time)."""
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        try:  # test-infra's uploader stamps seconds; milliseconds (its DynamoDB path) read as such
            return datetime.fromtimestamp(stamp / 1000 if stamp > 1e11 else stamp, timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise RecordError("records[0].timestamp", "must be seconds since 1970") from None
    return fallback_time


class RunFromRecords:
    """One file's records as one run: `add` each record in order, then `head` (the bundle's JSON up to its results
    array) once the file's digest is known. Each stored result's JSON goes to `sink`, comma-separated."""

    def __init__(self, source: str, fallback_time: datetime, given: MetricMap, sink: IO[bytes]) -> None:
        self.source, self.fallback_time, self.given, self.sink = source, fallback_time, given, sink
        self.header: dict[str, Any] | None = None
        self.own: dict | None = None  # mpsbench's own export: the run's header it carries
        self.records = self.results = self.skipped = 0
        self.reasons: list[str] = []
        self.kernels: list[
            dict[str, Any]
        ] = []  # the breakdowns records carry (bundle.pytorch_oss.kernels): in the head

    def add(self, record: Any) -> None:
        i = self.records
        if not isinstance(record, dict):
            raise RecordError(f"records[{i}]", "must be a JSON object (a PyTorch OSS record)")
        if self.header is None:
            own = get(record, f"benchmark.extra_info.{OWN}")
            self.own = own if isinstance(own, dict) else None
            self.header = dict(self.own) if self.own else _foreign_header(record, self.source, self.fallback_time)
        elif self.own is not None and get(record, f"benchmark.extra_info.{OWN}.run_id") != self.own.get("run_id"):
            raise RecordError(
                f"records[{i}].benchmark.extra_info.{OWN}.run_id",
                "a file holds one run (mpsbench export writes a file per run)",
            )
        self.records += 1
        found = record_metric(record, i, self.given)
        if isinstance(found, str):
            self.skipped += 1
            if len(self.reasons) < SKIPPED_KEPT:
                self.reasons.append(found)
            return
        result = _result(record, i, *found, self.own is not None)
        carried = oss_kernels.from_record(result, get(record, "metric.extra_info") or {})
        if carried:
            self.kernels.append(carried)
        text = json.dumps(result, ensure_ascii=False)
        self.sink.write((b"," if self.results else b"") + text.encode("utf-8", "surrogatepass"))
        self.results += 1

    def skipped_reasons(self) -> list[str]:
        more = self.skipped - len(self.reasons)
        return self.reasons + ([f"… and {more} more records not stored"] if more > 0 else [])

    def head(self, digest: str) -> bytes:
        """The bundle's JSON before its results (results last, as the bundle reader wants them; db.ingest)."""
        if self.header is None:
            raise RecordError("records", "a PyTorch OSS file is a non-empty JSON list of records (objects)")
        header = {**self.header, "run_id": self.header.get("run_id") or digest[:32]}
        header.pop("results", None)
        if self.kernels:
            header["kernels"] = self.kernels
        return json.dumps(header, ensure_ascii=False)[:-1].encode("utf-8", "surrogatepass") + b', "results": ['


def from_records(
    records: list[Any], raw: bytes, source: str, fallback_time: datetime, given: MetricMap | None = None
) -> tuple[dict, list[str]]:
    """A list of records (already parsed) as a bundle (JSON-ready) and the records not stored with why; `raw`: the
    file's bytes (a foreign run's id is their hash)."""
    sink = io.BytesIO()
    run = RunFromRecords(source, fallback_time, given or {}, sink)
    for record in records:
        run.add(record)
    bundle = json.loads(run.head(hashlib.sha256(raw).hexdigest()) + sink.getvalue() + b"]}")
    return bundle, run.skipped_reasons()
