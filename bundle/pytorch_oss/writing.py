"""A bundle as PyTorch OSS benchmark records (reading them back: bundle/pytorch_oss/reading.py).

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
bundle.pytorch_oss.kernels) under `extra_info`, so an export read back is the same run. A figure the bundle lacks is
"unavailable" (text) or null (a number), never 0."""

from __future__ import annotations

from typing import Any

from bundle.pytorch_oss import kernels as oss_kernels

BENCHMARK_NAME = "mpsbench"
OWN = "mpsbench"  # the extra_info key carrying what the PyTorch fields cannot
UNAVAILABLE = "unavailable"
ASCII_UNITS = {"µs": "us"}  # PyTorch's names are ASCII: "latency(us)"
IMPORTED = (
    "imported from PyTorch OSS benchmark records ({source}): worker processes, contention, memory kinds, "
    "power source and thermal state are unavailable in that format"
)


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
