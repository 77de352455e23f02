"""Known answers for the Memory and Matrix pictures, per machine: what each panel and cell says, computed here
from the bundles' own figures, and what the chart specs draw."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from db.ingest.core import ingest_bundle
from db.store.engine import open_store
from db.views.browse.matrix import builds_ran, matrix, matrix_builds, matrix_defaults, matrix_grid, matrix_view
from db.views.browse.memory import NESTED, chart_rows, memory_builds, memory_compare, memory_long, memory_panels
from pages.parts.browse_charts import matrix_chart, memory_chart
from tests.bundles import make_bundle, make_result

GIB = 1024**3
VAE = {"model": "Wan2.1-VAE", "height": 480}
DECODE = {"model": "Qwen3-0.6B", "context": 512}


def _mem(params: dict, metric: str, gib: float | None, status: str = "ok", message: str = "") -> dict:
    samples = [gib * GIB] if gib is not None else []
    return make_result(
        workload="vae",
        suite="models",
        params=params,
        dtype="bfloat16",
        metric=metric,
        unit="B",
        status=status,
        samples=samples,
        **({"message": message} if message else {}),
    )


def _bundle(machine: str, chip: str | None, version: str, channel: str, day: int, results: list[dict]) -> dict:
    found = make_bundle(
        results=results,
        started_at=f"2026-11-{day:02d}T10:00:00+00:00",
        ended_at=f"2026-11-{day:02d}T10:05:00+00:00",
        tags={},
    )
    found["machine"] = found["machine"] | {"name": machine, "chip": chip}
    found["build"] = found["build"] | {"torch_version": version, "channel": channel}
    return found


# Studio (M3 Ultra): VAE driver 270 → 8.1 GiB, reserved 8.07 → 8.07, live 6 → 5; decode driver 2 → 2.5.
# The same build twice on the studio (median of the two runs, not their sum): reserved 8.07 and 8.07.
# A machine with no chip recorded: the VAE runs out of memory on the baseline and fits on the candidate.
STUDIO = [
    ("2.14.1", "stable", 1, [270, 8.07, 6], [2.0]),
    ("2.14.1", "stable", 2, [270, 8.07, 6], [2.0]),
    ("2.15.0rc1", "rc", 3, [8.1, 8.07, 5], [2.5]),
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    engine = open_store(tmp_path_factory.mktemp("memory") / "s.duckdb")
    for version, channel, day, (driver, reserved, live), (decode,) in STUDIO:
        ingest_bundle(
            engine,
            _bundle(
                "studio",
                "Apple M3 Ultra",
                version,
                channel,
                day,
                [
                    _mem(VAE, "memory_driver_peak", driver),
                    _mem(VAE, "memory_reserved_peak", reserved),
                    _mem(VAE, "memory_allocated_peak", live),
                    _mem(DECODE, "memory_driver_peak", decode),
                ],
            ),
        )
    ingest_bundle(
        engine,
        _bundle(
            "lab-box",
            None,
            "2.14.1",
            "stable",
            4,
            [
                _mem(VAE, "memory_driver_peak", None, "error", "MPS backend out of memory (MPS allocated: 60 GiB)"),
                _mem(VAE, "memory_reserved_peak", None, "unavailable", "no reserved-peak API"),
            ],
        ),
    )
    ingest_bundle(
        engine,
        _bundle(
            "lab-box",
            None,
            "2.15.0rc1",
            "rc",
            5,
            [
                _mem(VAE, "memory_driver_peak", 30.0),
                _mem(VAE, "memory_reserved_peak", None, "unavailable", "no reserved-peak API"),
            ],
        ),
    )
    yield engine
    engine.dispose()


def _panels(engine) -> dict[str, pd.DataFrame]:
    compared = memory_compare(engine, memory_long(engine), "2.14.1 (stable)", "2.15.0rc1 (rc)")
    return dict(memory_panels(compared))


def _figure(panel: pd.DataFrame, case_start: str, figure: str) -> pd.Series:
    found = panel[panel.case.str.startswith(case_start) & (panel.figure == figure)]
    assert len(found) == 1, (case_start, figure, found)
    return found.iloc[0]


def test_builds_in_version_order(engine):
    assert memory_builds(memory_long(engine)) == (["2.14.1 (stable)", "2.15.0rc1 (rc)"], ["stable", "rc"])


def test_one_panel_per_machine_and_a_machine_without_a_chip_keeps_its_own(engine):
    assert sorted(_panels(engine)) == ["lab-box · no chip recorded", "studio · Apple M3 Ultra"]


def test_studio_figures_are_per_case_medians_never_sums(engine):
    studio = _panels(engine)["studio · Apple M3 Ultra"]
    driver = _figure(studio, "vae · Wan2.1-VAE", "driver total peak")
    assert (driver.baseline_GiB, driver.candidate_GiB) == pytest.approx((270.0, 8.1))
    assert driver.baseline_runs == 2 and driver.candidate_runs == 1
    # the review's figure and words (Compare's for the same runs): 33× less memory, better by the memory rule
    assert (driver.change, driver.direction) == ("33.33× less memory", "better")
    reserved = _figure(studio, "vae · Wan2.1-VAE", "allocator reserved peak")
    assert (reserved.baseline_GiB, reserved.candidate_GiB) == pytest.approx((8.07, 8.07))  # not 16.14
    decode = _figure(studio, "vae · Qwen3-0.6B", "driver total peak")
    assert (decode.baseline_GiB, decode.candidate_GiB) == pytest.approx((2.0, 2.5))


def test_oom_and_unavailable_are_marked_never_zero(engine):
    lab = _panels(engine)["lab-box · no chip recorded"]
    driver = _figure(lab, "vae · Wan2.1-VAE", "driver total peak")
    assert driver.baseline.startswith("OOM: MPS backend out of memory") and math.isnan(driver.baseline_GiB)
    assert driver.candidate == "30.000 GiB" and driver.change == ""
    reserved = _figure(lab, "vae · Wan2.1-VAE", "allocator reserved peak")
    assert reserved.baseline == reserved.candidate == "unavailable: no reserved-peak API"


def test_memory_chart_draws_one_bar_per_case_figure_and_side(engine):
    studio = _panels(engine)["studio · Apple M3 Ultra"]
    rows = chart_rows(studio)
    spec = memory_chart(rows, NESTED).to_dict(validate=True)
    drawn = [r for rows in spec["datasets"].values() for r in rows]
    keyed = {(r["case"].split(" · ")[1], r["figure"], r["side"]): r["GiB"] for r in drawn}
    assert len(keyed) == len(drawn) == 8  # VAE: 3 figures × 2 sides; decode: driver × 2 sides
    assert keyed[("Wan2.1-VAE", "allocator reserved peak", "candidate")] == pytest.approx(8.07)
    assert keyed[("Wan2.1-VAE", "driver total peak", "baseline")] == pytest.approx(270.0)
    assert spec["facet"]["sort"] == NESTED
    lab = chart_rows(_panels(engine)["lab-box · no chip recorded"])
    assert set(lab[lab.GiB.isna()].label) == {"OOM", "unavailable"}


def _op(params: dict, us: float) -> dict:
    return make_result(params=params, dtype="float32", samples=[us * f for f in (0.99, 1.0, 1.01, 1.0, 1.0)])


@pytest.fixture(scope="module")
def matrix_engine(tmp_path_factory):
    """Two chips × three builds; op_time per case: baseline 10 µs; on the M3 the rc is 3.469× faster and the
    nightly 1.52× faster; on the M2 the rc is 2× slower and the nightly has no data."""
    engine = open_store(tmp_path_factory.mktemp("matrix") / "s.duckdb")
    times = {
        ("Apple M3 Ultra", "2.14.1"): 10.0,
        ("Apple M3 Ultra", "2.15.0rc1"): 10.0 / 3.469,
        ("Apple M3 Ultra", "2.16.0.dev20261120"): 10.0 / 1.52,
        ("Apple M2 Max", "2.14.1"): 10.0,
        ("Apple M2 Max", "2.15.0rc1"): 20.0,
    }
    channels = {"2.14.1": "stable", "2.15.0rc1": "rc", "2.16.0.dev20261120": "nightly"}
    for day, ((chip, version), us) in enumerate(times.items(), start=1):
        bundle = _bundle(
            chip.split()[-2].lower(),
            chip,
            version,
            channels[version],
            day,
            [_op({"rows": 1}, us), _op({"rows": 2}, us)],
        )
        if "dev" in version:
            bundle["build"]["nightly_date"] = "2026-11-20"
        ingest_bundle(engine, bundle)
    yield engine
    engine.dispose()


def test_matrix_cells_scale_and_no_data(matrix_engine):
    builds = matrix_builds(matrix_engine)
    assert builds == ["2.14.1", "2.15.0rc1", "2.16.0.dev20261120"]
    cells = matrix(matrix_engine, "op_time", "2.14.1", "chip", "float32", "eager", "")
    grid, span = matrix_grid(cells, builds, "2.14.1")
    found = {(r.row, r.build): r for r in grid.itertuples()}
    m3, m2 = "Apple M3 Ultra", "Apple M2 Max"
    assert found[(m3, "2.15.0rc1")].geomean == pytest.approx(3.469, rel=1e-6)
    assert found[(m3, "2.15.0rc1")].label == "3.47×" and found[(m3, "2.16.0.dev20261120")].label == "1.52×"
    assert found[(m2, "2.15.0rc1")].label == "0.50×"
    assert found[(m2, "2.16.0.dev20261120")].label == "no data" and not found[(m2, "2.16.0.dev20261120")].has_data
    assert span == pytest.approx(3.469, rel=1e-6)  # the largest |log| of any cell: 3.469× beats 1/0.5 = 2
    assert bool(found[(m3, "2.15.0rc1")].dark) and not bool(found[(m3, "2.16.0.dev20261120")].dark)

    spec = matrix_chart(grid, builds, span).to_dict(validate=True)
    scale = spec["layer"][0]["encoding"]["color"]["scale"]
    assert scale["domainMid"] == 1.0 and scale["type"] == "log"
    low, high = scale["domain"]
    assert low * high == pytest.approx(1.0) and high == pytest.approx(3.469, rel=1e-6)  # symmetric in log space
    legend = spec["layer"][0]["encoding"]["color"]["legend"]
    # readable steps between the ends 1/3.469 = 0.2883 and 3.469 (none within 8 % of an end), 1× said plainly
    assert legend["values"] == [0.2883, 0.5, 0.8, 0.9, 1.0, 1.1, 1.25, 2.0, 3.469]
    assert "'1×'" in legend["labelExpr"] and legend["orient"] == "bottom"
    labels = {r["label"] for rows in spec["datasets"].values() for r in rows}
    assert {"3.47×", "1.52×", "0.50×", "no data"} <= labels


def test_matrix_says_not_run_where_a_chip_never_ran_the_build(matrix_engine):
    assert builds_ran(matrix_engine) == {
        ("Apple M3 Ultra", "2.14.1"),
        ("Apple M3 Ultra", "2.15.0rc1"),
        ("Apple M3 Ultra", "2.16.0.dev20261120"),
        ("Apple M2 Max", "2.14.1"),
        ("Apple M2 Max", "2.15.0rc1"),
    }
    view = matrix_view(matrix_engine, {})
    cells = {(r.row, r.build): r.label for r in view.grid.itertuples()}
    # the M2 never ran the nightly: "not run", not "no data" (and never a blank cell); the M3 ran every build
    assert cells == {
        ("Apple M2 Max", "2.15.0rc1"): "0.50×",
        ("Apple M3 Ultra", "2.15.0rc1"): "3.47×",
        ("Apple M3 Ultra", "2.16.0.dev20261120"): "1.52×",
        ("Apple M2 Max", "2.16.0.dev20261120"): "not run",
    }
    assert list(view.cells.columns) == [
        "row",
        "build",
        "geomean",
        "ci_low",
        "ci_high",
        "ci",
        "n_cases",
        "unit",
        "baseline",
    ]


def test_a_build_the_chip_ran_without_a_comparable_case_still_says_no_data(matrix_engine):
    cells = matrix(matrix_engine, "op_time", "2.14.1", "chip", "float32", "eager", "")
    ran = builds_ran(matrix_engine) | {("Apple M2 Max", "2.16.0.dev20261120")}  # as if the M2 ran it, no op_time
    grid, _ = matrix_grid(cells, matrix_builds(matrix_engine), "2.14.1", ran)
    assert dict(zip(zip(grid.row, grid.build), grid.label))[("Apple M2 Max", "2.16.0.dev20261120")] == "no data"


def test_matrix_defaults_to_the_metric_and_dtype_with_the_most_cases(matrix_engine, tmp_path):
    from benchmarks.stores.seed import seed_store

    assert matrix_defaults(matrix_engine)[:2] == ("op_time", "float32")  # the only thing stored
    seeded = open_store(tmp_path / "seeded.duckdb")
    seed_store(seeded)
    # benchmarks/stores/seed.py: bf16 op_time cases are linear q, k_v, o and grouped_mm (4); fp32: softmax ×2, constant_pad (3)
    assert matrix_defaults(seeded)[:2] == ("op_time", "bfloat16")
    view = matrix_view(seeded, {})
    assert (view.metric, view.dtype) == ("op_time", "bfloat16") and len(view.cells) == 2
    assert tuple(matrix_defaults(open_store(tmp_path / "empty.duckdb"))) == ("op_time", "float32", "", "eager")
    seeded.dispose()


def test_memory_chart_tells_eager_from_inductor_and_names_its_colours():
    from bundle.case_names import case_name

    names = [
        case_name(
            "vae_tiled_decode",
            {"model": "Wan2.2-TI2V-5B", "frames": 21, "height": 704, "width": 1280, "tiles": 28},
            "bfloat16",
            mode,
        )
        for mode in ("eager", "inductor")
    ]
    rows = pd.DataFrame(
        [
            {"case": name, "figure": figure, "side": side, "GiB": 1.0, "state": "ok", "label": "1.00", "change": ""}
            for name in names
            for figure in NESTED
            for side in ("baseline", "candidate")
        ]
    )
    spec = memory_chart(rows, NESTED, "2.14.1 (stable)", "2.15.0rc1 (rc)").to_dict(validate=True)
    drawn = {r["lines"] for data in spec["datasets"].values() for r in data}
    assert len(drawn) == 2  # two rows, not one shared label
    assert [line.split("\n")[-1].endswith("inductor") for line in sorted(drawn)] == [False, True]
    assert all(len(line) <= 60 for label in drawn for line in label.split("\n"))  # wrapped, none cut
    legend = spec["spec"]["layer"][0]["encoding"]["color"]["legend"]
    assert legend["orient"] == "top" and "baseline 2.14.1 (stable)" in legend["labelExpr"]
    assert "candidate 2.15.0rc1 (rc)" in legend["labelExpr"]
    # each figure on its own GiB axis: a 270 GiB driver total no longer squashes 0.4–8 GiB live-tensor bars
    assert spec["resolve"] == {"scale": {"x": "independent"}}
    assert spec["spec"]["layer"][0]["encoding"]["x"]["title"] == "peak (GiB)"


def _cuda_store(path, cuda_builds: tuple[str, ...]):
    """Two Macs' op_time (2 cases) on 2.14.1 → 2.15.0rc1, and an NVIDIA machine's first_call_time on 5 cases per
    CUDA build (cu wheels sort before the Macs' builds): the CUDA figures outnumber the Macs' op times."""
    engine = open_store(path)
    for day, (version, channel) in enumerate((("2.14.1", "stable"), ("2.15.0rc1", "rc")), start=1):
        ingest_bundle(
            engine,
            _bundle("m3u", "Apple M3 Ultra", version, channel, day, [_op({"rows": 1}, 10.0), _op({"rows": 2}, 10.0)]),
        )
    for day, version in enumerate(cuda_builds, start=5):
        firsts = [make_result(params={"rows": r}, metric="first_call_time", unit="ms", samples=[3.0]) for r in range(5)]
        bundle = _bundle("h100", "NVIDIA H100", version, "stable", day, firsts)
        bundle["device"] = {"type": "cuda", "name": "NVIDIA H100 80GB HBM3"}
        ingest_bundle(engine, bundle)
    return engine


def test_an_nvidia_upload_leaves_the_matrix_on_a_comparison_that_exists(tmp_path):
    # issue 35: one CUDA build's first_call_time had the most cases and sorted first: "Nothing compared"
    engine = _cuda_store(tmp_path / "one.duckdb", ("2.13.0+cu126",))
    assert matrix_builds(engine)[0] == "2.13.0+cu126"
    assert tuple(matrix_defaults(engine)) == ("op_time", "float32", "2.14.1", "eager")
    view = matrix_view(engine, {})
    assert view.why_empty == "" and (view.metric, view.baseline) == ("op_time", "2.14.1")
    assert dict(zip(view.cells.row, view.cells.n_cases)) == {"Apple M3 Ultra": 2}
    engine.dispose()
    # two CUDA builds pair 5 first_call_time cases: op time (2 cases on the Mac) is still the default
    engine = _cuda_store(tmp_path / "two.duckdb", ("2.13.0+cu126", "2.13.1+cu126"))
    assert tuple(matrix_defaults(engine)) == ("op_time", "float32", "2.14.1", "eager")
    engine.dispose()


def test_matrix_defaults_pick_the_pair_with_the_most_compared_cases(matrix_engine, tmp_path):
    # matrix_engine: the M3 pairs 2 cases for each of 2.14.1→rc, 2.14.1→nightly, rc→nightly; the M2 2.14.1→rc:
    # 2.14.1→rc pairs 4, the most; a stable baseline
    assert tuple(matrix_defaults(matrix_engine)) == ("op_time", "float32", "2.14.1", "eager")
    # no op_time pairs: the ratio metric that pairs most (first_call_time, 5 cases on the two CUDA builds)
    engine = open_store(tmp_path / "cuda.duckdb")
    for day, version in enumerate(("2.13.0+cu126", "2.13.1+cu126"), start=1):
        firsts = [
            make_result(params={"rows": r}, metric="first_call_time", unit="ms", samples=[3.0 + day]) for r in range(5)
        ]
        ingest_bundle(engine, _bundle("h100", "NVIDIA H100", version, "stable", day, firsts))
    ingest_bundle(engine, _bundle("m3u", "Apple M3 Ultra", "2.14.1", "stable", 9, [_op({"rows": 1}, 10.0)]))
    assert tuple(matrix_defaults(engine)) == ("first_call_time", "float32", "2.13.0+cu126", "eager")
    assert matrix_view(engine, {}).cells.n_cases.tolist() == [5]
    engine.dispose()


def test_legend_ticks_are_readable_steps_within_the_scale():
    from db.views.browse.matrix import legend_ticks

    assert legend_ticks(1.1) == [0.9091, 1.0, 1.1]  # 0.9 and 1.1 lie outside or at the ends: left out
    assert legend_ticks(1.3) == [0.7692, 0.9, 1.0, 1.1, 1.3]  # 0.8 (log 0.223) is within 0.08 of log 1.3 = 0.262
    assert legend_ticks(2.0) == [0.5, 0.8, 0.9, 1.0, 1.1, 1.25, 2.0]
