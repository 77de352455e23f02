"""A bundle as PyTorch OSS benchmark records, and such records as a bundle.

PyTorch's benchmark database (HUD dashboards, the ClickHouse table `oss_ci_benchmark_v3`) reads a JSON list of
records, one per metric: `benchmark` {name, mode, dtype, extra_info}, `model` {name, type, backend, origins},
`metric` {name, benchmark_values, target_value, extra_info} and `runners` [{name, type, cpu_info, cpu_count,
avail_mem_in_gb, gpu_info, gpu_count, avail_gpu_mem_in_gb, extra_info}]. Modelled on pytorch/pytorch
`benchmarks/gpt_fast/benchmark.py` (`output_json`: the unit in the metric's name, "memory_bandwidth(GB/s)";
`benchmark.extra_info` {device, arch}; `model.origins` ["pytorch"]) and pytorch/test-infra
`.github/scripts/upload_benchmark_results.py` (`get_runner_info`: the runner's fields; `timestamp`;
`read_benchmark_results`: a JSON list or JSON-each-row). See docs/pytorch-oss.md.

`to_records(bundle)`: one record per result; the unit in the metric's name as PyTorch's records write it
(`op_time(us)`) and exactly in `metric.extra_info.unit`; every sample in `benchmark_values`; what the PyTorch
fields cannot hold (worker processes, contention, status, the run's header, the case's kernels breakdown:
bundle.oss_kernels) under `extra_info`, so an export read back is the same run. A figure the bundle lacks is "unavailable" (text) or null (a number), never 0.

`from_records(records, …)`: a bundle from one file's records (a run per file). Records this module wrote carry
their run; records from elsewhere give what they say — the build from `benchmark.extra_info.torch_version` (or
`dependencies.pytorch.version`), the device from `benchmark.extra_info.device`, the machine from `runners[0]` —
and what they cannot say is stated on the run as unavailable (worker processes: none; memory kinds: a metric that
is not an mpsbench metric is not stored, and is named as skipped). Bad input is a RecordError naming the field."""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone
from typing import Any

from bundle import oss_kernels
from bundle.builds import infer_channel, parse_version
from bundle.metrics import METRICS
from bundle.units import UnitError, unit

BENCHMARK_NAME = "mpsbench"
OWN = "mpsbench"  # the extra_info key carrying what the PyTorch fields cannot
UNAVAILABLE = "unavailable"
ASCII_UNITS = {"µs": "us"}  # PyTorch's names are ASCII: "latency(us)"
_NAMED_UNIT = re.compile(r"^(?P<base>[^()]+?)\s*\((?P<unit>[^()]+)\)$")
IMPORTED = (
    "imported from PyTorch OSS benchmark records ({source}): worker processes, contention, memory kinds, "
    "power source and thermal state are unavailable in that format"
)


class RecordError(ValueError):
    def __init__(self, field: str, rule: str):
        super().__init__(f"{field}: {rule}")
        self.field, self.rule = field, rule


def _gib(size: int | None) -> float | None:
    return None if size is None else size / 1024**3


def runner(bundle: dict[str, Any]) -> dict[str, Any]:
    """The machine as PyTorch's `runners` entry: name, chip as its type, its CPU and GPU."""
    m, device = bundle["machine"], bundle["device"]
    cores = [m.get("cpu_p_cores"), m.get("cpu_e_cores")]
    gpu = device["type"] != "cpu"
    return {
        "name": m["name"],
        "type": m.get("chip") or device["name"],
        "cpu_info": m.get("cpu_model") or UNAVAILABLE,
        "cpu_count": sum(cores) if None not in cores else None,
        "avail_mem_in_gb": _gib(m.get("memory_bytes")),
        "gpu_info": device["name"] if gpu else "",
        "gpu_count": 1 if gpu else 0,
        # Apple's GPU shares the machine's memory: no figure of its own to give
        "avail_gpu_mem_in_gb": None,
        "extra_info": {
            k: m.get(k)
            for k in (
                "hw_model",
                "gpu_cores",
                "os",
                "os_version",
                "arch",
                "power_source",
                "low_power_mode",
                "thermal_state",
            )
        },
    }


def to_records(bundle: dict[str, Any]) -> list[dict[str, Any]]:
    """The bundle (JSON-ready: Bundle.model_dump(mode="json"), or a stored run rebuilt) as records."""
    header = {k: v for k, v in bundle.items() if k not in ("results", "kernels")}
    build, device, machine = bundle["build"], bundle["device"], bundle["machine"]
    run = runner(bundle)
    kernels = oss_kernels.by_case(bundle)  # each on the record of the metric it explains
    out = []
    for r in bundle["results"]:
        extra = {
            k: r.get(k)
            for k in ("status", "message", "warnings", "processes", "contention", "passed", "tolerance", "rounding")
            if r.get(k) not in (None, [])
        }
        out.append(
            {
                "benchmark": {
                    "name": BENCHMARK_NAME,
                    "mode": "inference",
                    "dtype": r["dtype"],
                    "extra_info": {
                        "device": device["type"],
                        "arch": machine.get("arch") or UNAVAILABLE,
                        "torch_version": build["torch_version"],
                        "git_hash": build.get("git_hash") or UNAVAILABLE,
                        OWN: header,
                    },
                },
                "model": {
                    "name": r["workload"],
                    "type": "micro-benchmark" if r["suite"] == "kernels" else "OSS model",
                    "backend": r.get("compile", "eager"),
                    "origins": ["pytorch"] if r["suite"] == "kernels" else ["huggingface"],
                    "extra_info": {"suite": r["suite"], "params": r["params"]},
                },
                "metric": {
                    "name": f"{r['metric']}({ASCII_UNITS.get(r['unit'], r['unit'])})",
                    "benchmark_values": list(r.get("samples") or []),
                    "target_value": r.get("tolerance"),
                    "extra_info": {"unit": r["unit"], **extra, **oss_kernels.extra(kernels, r)},
                },
                "runners": [run],
            }
        )
    return out


def _get(record: dict, path: str) -> Any:
    value: Any = record
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _metric(record: dict, i: int) -> tuple[str, str] | str:
    """(mpsbench metric, unit) of a record, or why it is not stored."""
    name = str(_get(record, "metric.name") or "")
    found = _NAMED_UNIT.match(name)
    base = found["base"] if found else name
    symbol = _get(record, "metric.extra_info.unit") or (found["unit"] if found else None)
    if base not in METRICS:
        return (
            f"records[{i}].metric.name {name!r}: not an mpsbench metric, so what it measures (which memory "
            "kind, which time) is unavailable; not stored"
        )
    if not symbol:
        return f"records[{i}].metric.name {name!r}: no unit in its name or metric.extra_info.unit; not stored"
    try:
        canonical = unit(str(symbol)).symbol
    except UnitError as exc:
        return f"records[{i}].metric: {exc}; not stored"
    if unit(canonical).dimension != METRICS[base].dimension:
        return f"records[{i}].metric: {symbol!r} does not measure {base} ({METRICS[base].unit}); not stored"
    return base, canonical


def _values(record: dict, i: int) -> list[float]:
    values = _get(record, "metric.benchmark_values")
    if not isinstance(values, list):
        raise RecordError(f"records[{i}].metric.benchmark_values", "must be a list of numbers")
    try:  # gpt-fast writes its figures as text ("12.34")
        return [float(v) for v in values]
    except (TypeError, ValueError):
        raise RecordError(f"records[{i}].metric.benchmark_values", "must be a list of numbers") from None


def _result(record: dict, i: int, base: str, symbol: str) -> dict[str, Any]:
    extra = _get(record, "metric.extra_info") or {}
    model_extra = _get(record, "model.extra_info") or {}
    params = (
        model_extra.get("params")
        if isinstance(model_extra.get("params"), dict)
        else {"benchmark": str(_get(record, "benchmark.name") or UNAVAILABLE)}
    )
    workload = _get(record, "model.name")
    if not workload:
        raise RecordError(f"records[{i}].model.name", "is required (the model or test name)")
    samples = _values(record, i)
    out = {
        "workload": str(workload),
        "suite": str(model_extra.get("suite") or "pytorch-oss"),
        "params": params,
        "dtype": str(_get(record, "benchmark.dtype") or UNAVAILABLE),
        "compile": str(_get(record, "model.backend") or UNAVAILABLE),
        "metric": base,
        "unit": symbol,
        "status": str(extra.get("status") or ("ok" if samples else "error")),
        "samples": samples,
    }
    if not samples and "status" not in extra:
        out["message"] = "the record has no benchmark_values"
    for key in ("message", "warnings", "processes", "contention", "passed", "tolerance", "rounding"):
        if extra.get(key) is not None:
            out[key] = extra[key]
    return out


def _foreign_header(records: list[dict], raw: bytes, source: str, fallback_time: datetime) -> dict[str, Any]:
    first = records[0]
    version = _get(first, "benchmark.extra_info.torch_version") or _get(first, "dependencies.pytorch.version")
    if not version:
        raise RecordError(
            "records[0].benchmark.extra_info.torch_version",
            "the build is unavailable in these records (nor dependencies.pytorch.version): a run needs it",
        )
    said = parse_version(str(version))
    if said.channel == "unknown":
        raise RecordError("records[0].benchmark.extra_info.torch_version", f"not a torch version: {version!r}")
    device = _get(first, "benchmark.extra_info.device")
    if device not in ("mps", "cuda", "cpu"):
        raise RecordError("records[0].benchmark.extra_info.device", f"must be mps, cuda or cpu (got {device!r})")
    runners = first.get("runners") or [{}]
    name = runners[0].get("name") if isinstance(runners[0], dict) else None
    if not name:
        raise RecordError("records[0].runners[0].name", "the machine is unavailable in these records: a run needs it")
    stamp = first.get("timestamp")
    started = datetime.fromtimestamp(float(stamp), timezone.utc) if isinstance(stamp, (int, float)) else fallback_time
    warnings = [IMPORTED.format(source=source)]
    if stamp is None:
        warnings.append("started_at: the file's modification time (the records carry no timestamp)")
    sha = _get(first, "benchmark.extra_info.git_hash") or _get(first, "dependencies.pytorch.sha")
    gpu = runners[0].get("gpu_info") or runners[0].get("type") or device
    return {
        "schema_version": 1,
        "run_id": hashlib.sha256(raw).hexdigest()[:32],
        "started_at": started.isoformat(),
        "complete": True,
        "warnings": warnings,
        "tags": {"source": "pytorch-oss"},
        "machine": {
            "name": str(name),
            "chip": runners[0].get("type") or None,
            "os": UNAVAILABLE,
            "cpu_model": runners[0].get("cpu_info") or None,
            "arch": _get(first, "benchmark.extra_info.arch") or None,
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


def from_records(records: list[Any], raw: bytes, source: str, fallback_time: datetime) -> tuple[dict, list[str]]:
    """One file's records as a bundle (JSON-ready), and the records not stored, each with its reason."""
    if not records or not all(isinstance(r, dict) for r in records):
        raise RecordError("records", "a PyTorch OSS file is a non-empty JSON list of records (objects)")
    own = _get(records[0], f"benchmark.extra_info.{OWN}")
    header = dict(own) if isinstance(own, dict) else _foreign_header(records, raw, source, fallback_time)
    results, skipped, kernels = [], [], []
    for i, record in enumerate(records):
        mine = _get(record, f"benchmark.extra_info.{OWN}.run_id")
        if isinstance(own, dict) and mine != own.get("run_id"):
            raise RecordError(
                f"records[{i}].benchmark.extra_info.{OWN}.run_id",
                "a file holds one run (mpsbench export writes a file per run)",
            )
        found = _metric(record, i)
        if isinstance(found, str):
            skipped.append(found)
            continue
        results.append(_result(record, i, *found))
        carried = oss_kernels.from_record(results[-1], _get(record, "metric.extra_info") or {})
        kernels += [carried] if carried else []
    return {**header, **({"kernels": kernels} if kernels else {}), "results": results}, skipped


def looks_like_records(doc: Any) -> bool:
    """A JSON document that is PyTorch OSS records (a list of objects with `benchmark` and `metric`), not a bundle."""
    return (
        isinstance(doc, list)
        and bool(doc)
        and isinstance(doc[0], dict)
        and "benchmark" in doc[0]
        and "metric" in doc[0]
    )
