"""Issue 44's smaller items, page by page, on issue 44's release store (tests/release_store.py: two Macs, 2.14.1 run
twice a round, 2.15.0rc1, a nightly; 10 worker processes), each under AppTest as a browser opens it. Every figure
a page shows for a case is checked against the judged review's (what Compare shows for it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import streamlit as st

from db.store.engine import open_store
from tests import release_store as r
from tests.page_store import open_page

SIDES = {"baseline": r.STABLE, "candidate": r.RC}


@pytest.fixture(scope="module")
def release_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("smaller44") / "release.duckdb"
    engine = open_store(path)
    r.release_store(engine)
    engine.dispose()
    return path


@pytest.fixture
def release(release_path, tmp_path, monkeypatch) -> Path:
    """The release store, served to the pages (a copy: a page that writes, the triage form, changes only it)."""
    path = tmp_path / "release.duckdb"
    shutil.copy(release_path, path)
    monkeypatch.setenv("MPSBENCH_DB", str(path))
    st.cache_resource.clear()
    st.cache_data.clear()
    return path


def _no_errors(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


# -- 6. Runs: which run, where, of which build, when — before the hardware ---------------------------------------
def test_runs_lead_with_run_machine_chip_build_git_hash_and_start(release):
    at = open_page("runs.py")
    _no_errors(at)
    runs = at.dataframe[0].value
    assert list(runs.columns[:6]) == ["run_id", "machine_name", "chip", "torch_version", "git_hash", "started_at"]
    assert len(runs) == len(r.release_bundles()) and set(runs.git_hash) == {"a" * 10, "b" * 10, "c" * 10}


# -- 9. Upload: a file that is no bundle is named, with the rule ---------------------------------------------------
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4  # a picture's first bytes: no UTF-8, no JSON


def test_upload_of_a_picture_names_the_file_and_the_rule(release, monkeypatch):
    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "alice=tok-alice")
    at = open_page("upload.py", token="tok-alice")
    # the browser judged the file type itself (type=["json"]): a red icon, no words; any file now reaches the page
    assert not at.file_uploader[0].proto.type
    at.file_uploader[0].set_value([("shot.png", PNG, "image/png")])
    at.run()
    assert not at.exception
    [message] = [e.value for e in at.error]
    assert message.startswith("shot.png is not a JSON bundle: bundles are UTF-8 JSON"), message
    assert message.endswith("Nothing of it was stored.") and "\n" not in message  # one short sentence
    assert at.dataframe[0].value.outcome.tolist() == ["refused"]
    at.file_uploader[0].set_value(
        [("shot.png", PNG, "image/png"), ("list.json", b"[1, 2]", "application/json")]
    )  # two refused: each named with its rule, in one message
    [message] = [e.value for e in at.run().error]
    assert (
        "shot.png is not a JSON bundle: " in message
        and "list.json is not a JSON bundle: a bundle is one JSON object" in message
    )


# -- 5. A build against itself: no verdict, and the pages say why --------------------------------------------------
SAME = f"Baseline and candidate are the same build ({r.STABLE}): nothing to compare."


@pytest.mark.parametrize("file", ["overview.py", "compare.py", "regressions.py"])
def test_a_build_against_itself_says_so_where_the_verdict_goes(release, file):
    at = open_page(file, {"baseline": r.STABLE, "candidate": r.STABLE})
    assert not at.exception, [e.value for e in at.exception]
    said = [w.value for w in at.warning]
    assert len(said) == 1 and said[0].startswith(SAME), said
    # no verdict beside it: no answer cards (their "no change" read as a verdict of one build), no ratio chart
    assert not [m.value for m in at.markdown if "no change" in m.value or "regression" in m.value]
    assert not at.get("arrow_vega_lite_chart")


# -- 1. Compare's case detail follows the review ------------------------------------------------------------------
def _case_menu(at):
    return next(s for s in at.selectbox if s.label.startswith("Case"))


def _judged_rows(params: dict):
    from db.review.comparison import CompareQuery
    from db.review.review import Review, cached_review
    from db.store.engine import shared_store
    from db.views.release.compare_chart import case_labels, case_rows

    judged = cached_review(shared_store(), Review(CompareQuery.from_params(params)))
    rows = case_rows(judged)
    return rows.assign(label=case_labels(rows))


def test_switching_the_candidate_opens_the_new_reviews_case_with_its_own_numbers(release):
    from db.review.cases.wording import format_value

    asked = {**SIDES, "scope": "chip", "metric": "op_time"}
    at = open_page("compare.py", asked)
    menu = _case_menu(at)
    default = menu.value
    other = next(o for o in menu.options if o != menu.format_func(default) and "M3 Ultra" in o)
    menu.select_index(menu.options.index(other))
    at.run()
    assert _case_menu(at).format_func(_case_menu(at).value) == other  # picked
    next(s for s in at.selectbox if s.label == "Candidate").set_value(r.NIGHTLY)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    menu = _case_menu(at)
    shown = menu.format_func(menu.value)
    rows = _judged_rows({**asked, "candidate": r.NIGHTLY})
    # the new review opens on its own first case (its worst regression), not on the row number picked before
    assert shown == rows.loc[menu.value, "label"] and shown != other
    assert "sdpa" in shown and "M4 Pro" in shown
    case = rows.loc[menu.value]
    [said] = [t.value for t in at.text if "baseline median" in t.value]
    assert (
        f"baseline median {case.baseline_median:.4g} µs" in said and f"candidate {case.candidate_median:.4g} µs" in said
    )
    assert format_value(case.candidate_median, "µs") in said  # Compare's own figure, to the shown digits


# -- 2. Compare's per-case table: the figures with their units, regressions first, the largest changes next ------
def _case_table(at):
    return next(f.value for f in at.dataframe if "candidate_value" in f.value.columns)


def test_compare_lists_regressions_first_then_the_largest_changes_each_side_with_its_unit(release):
    import math

    at = open_page("compare.py", {**SIDES, "scope": "chip"})
    assert not at.exception, [e.value for e in at.exception]
    table = _case_table(at)
    lead = ["case", "metric", "baseline_value", "candidate_value", "change", "direction", "regression", "scope"]
    assert list(table.columns[: len(lead)]) == lead
    assert list(table.columns[-5:]) == ["device", "workload", "dtype", "compile", "case_key"]  # raw keys pinned right
    rows = _judged_rows({**SIDES, "scope": "chip"})
    assert len(table) == len(rows) == 30

    # the order, computed here: regressions, then |log| of each change's factor (a dB change as its power factor)
    def size(row) -> float:
        if row.oriented_ratio == row.oriented_ratio:
            return abs(math.log(row.oriented_ratio))
        return abs(row.difference) * math.log(10) / 10

    expected = sorted(rows.itertuples(), key=lambda row: (not row.regression, -size(row)))
    key = ["scope", "workload", "case_key", "dtype", "compile", "metric"]
    assert [tuple(getattr(e, k) for k in key) for e in expected] == list(table[key].itertuples(index=False, name=None))
    assert table.regression.tolist()[:4] == [True, True, True, False]  # the 3 planted regressions
    assert set(table.metric[:3]) == {"op_time"}
    # each side's value in its unit, Compare's own median: the VAE's driver peak 270 GiB → 8.1 GiB, not bytes
    vae = table[(table.workload == "vae_tiled_decode") & (table.metric == "memory_driver_peak")]
    assert vae.baseline_value.tolist() == ["270.000 GiB"] * 2 and vae.candidate_value.tolist() == ["8.100 GiB"] * 2
    sdpa = table[(table.workload == "sdpa") & (table.metric == "op_time") & table.scope.str.contains("M4")].iloc[0]
    mine = rows[(rows.workload == "sdpa") & (rows.metric == "op_time") & rows.scope.str.contains("M4")].iloc[0]
    assert (sdpa.baseline_median, sdpa.candidate_median) == (mine.baseline_median, mine.candidate_median)
    assert sdpa.baseline_value == f"{mine.baseline_median:,.4g} µs" and sdpa.change == mine.change


# -- 3. The ratio chart's axis: a 1.17× regression visibly long, an 8× win marked beyond the edge -----------------
def test_the_ratio_axis_keeps_small_regressions_wide_and_marks_what_lies_beyond(release):
    import math

    from db.views.release.compare_chart import chart_rows
    from pages.parts.charts import ratio_chart

    data = chart_rows(_judged_rows({**SIDES, "scope": "chip"}), 20)
    spec = ratio_chart(data, r.STABLE).to_dict(validate=True)
    bars = spec["layer"][0]["encoding"]
    low, high = bars["x"]["scale"]["domain"]
    assert (low, high) == pytest.approx((1 / 3, 3))  # the 8× softmax and the 33× VAE peak stretched it to 0.03–38×
    assert (
        bars["x"]["field"] == "drawn"
        and {"field": "oriented_ratio"}.items()
        <= next(t for t in bars["tooltip"] if t["field"] == "oriented_ratio").items()
    )  # the tooltip keeps the true ratio
    # the planted regressions (1.17–1.21× slower) take a seventh of the half-axis or more (a twentieth before)
    for row in data[data.regression].itertuples():
        assert abs(math.log(row.oriented_ratio)) / math.log(high) > 0.14
        assert not row.beyond and row.drawn == row.oriented_ratio
    # past 3×: drawn to the edge, marked with the true value
    past = data[data.oriented_ratio > 3]
    assert set(past.workload) == {"softmax", "vae_tiled_decode"} and (past.drawn == 3.0).all() and past.beyond.all()
    for row in past.itertuples():
        assert row.beyond_text == f"beyond: {row.oriented_ratio:.3g}×"
    assert "beyond: 8.13×" in set(past.beyond_text) and "beyond: 33.3×" in set(past.beyond_text)
    texts = [layer for layer in spec["layer"] if layer.get("mark", {}).get("type") == "text"]
    assert [t["encoding"]["text"]["field"] for t in texts] == ["beyond_text", "beyond_text"]
    assert data.drawn_ci_high.max() <= 3.0 and data.drawn_ci_low.min() >= 1 / 3  # whiskers inside too (NaN: no CI)


# -- 8. Noise counts a measurement once: bandwidth and tokens/s are their timing read another way -----------------
def _aa_runs(engine) -> None:
    """Three runs of one build on one Mac: softmax op time with its bandwidth and share of peak, a decode with its
    tokens/s, a linear op time alone; the softmax runs 10 % apart (noisy), the others 1 %."""
    from db.ingest.core import ingest_bundle
    from db.store.writers.upkeep import catch_up
    from tests.bundles import make_bundle, make_result

    decode = {"workload": "decode", "suite": "models", "params": {"model": "tiny", "tokens": 32}}
    for i, (soft, calm) in enumerate(((1.0, 1.0), (1.1, 1.01), (0.9, 0.99))):
        results = [
            make_result(samples=[10.0 * soft] * 3),
            make_result(metric="achieved_bandwidth", unit="GB/s", samples=[100.0 / soft] * 3),
            make_result(metric="bandwidth_fraction", unit="%", samples=[20.0 / soft] * 3),
            make_result(**decode, metric="decode_time", unit="s", samples=[2.0 * calm] * 3),
            make_result(**decode, metric="decode_throughput", unit="tokens/s", samples=[16.0 / calm] * 3),
            make_result(workload="linear", params={"M": 4}, samples=[5.0 * calm] * 3),
        ]
        bundle = make_bundle(
            run_id=f"{i + 1:032x}", results=results, build={**make_bundle()["build"], "git_hash": "a" * 40}
        )
        ingest_bundle(engine, __import__("json").dumps(bundle).encode())
    catch_up(engine)


def test_noise_counts_each_measurement_once(tmp_path, monkeypatch):
    from db.views.browse.noise import noise_view
    from tests.page_store import page_store

    path = page_store(tmp_path, monkeypatch, _aa_runs)
    at = open_page("noise.py")
    _no_errors(at)
    # the measurements, named here: softmax op time (noisy: runs 10 % apart), decode time, linear op time
    groups = at.dataframe[0].value
    assert sorted(zip(groups.workload, groups.metric)) == [
        ("decode", "decode_time"),
        ("linear", "op_time"),
        ("softmax", "op_time"),
    ]
    said = [m.value for m in at.markdown if "groups are noisier" in m.value]
    assert said and said[0].startswith("1 of 3 groups are noisier than the 5 % threshold"), said
    assert "3 such groups are counted under their op time or decode time" in said[0]
    # the pairs beside them: 3 runs make 3 pairs a case, 3 measurements (18 stored: one a figure)
    assert [m.value for m in at.metric] == ["9"] and groups.pairs.tolist() == [3, 3, 3]
    # a derived figure asked for alone stands for its measurement
    engine = open_store(path)
    alone = noise_view(engine, {"metric": "achieved_bandwidth"})
    engine.dispose()
    assert alone.groups.metric.tolist() == ["achieved_bandwidth"] and alone.derived == 0


# -- 10. The triage form shows the picked regression's saved state and what a state does --------------------------
def test_the_triage_form_shows_the_saved_state_of_the_regression_picked(release, monkeypatch):
    from db.store.writers.triage import NOTE_KEY, save_note
    from db.views.release.regressions import TRIAGE_RULE

    monkeypatch.setenv("MPSBENCH_UPLOAD_TOKENS", "alice=tok-alice,bob=tok-bob")
    engine = open_store(release)
    from db.review.comparison import CompareQuery
    from db.review.release.listing import regressions

    found = regressions(engine, CompareQuery.from_params({**SIDES, "scope": "machine"}))
    second = found.iloc[1]
    save_note(
        engine, r.STABLE, r.RC, {k: second[k] for k in NOTE_KEY}, "noise", "bob", "flaky runner", "https://x.example/1"
    )
    engine.dispose()
    st.cache_data.clear()
    at = open_page("regressions.py", SIDES, token="tok-alice")
    _no_errors(at)
    picked = next(s for s in at.selectbox if s.label == "Regression")
    state = next(s for s in at.selectbox if s.label == "State")
    assert picked.value == 0 and state.value == "new" and at.text_area[0].value == ""
    captions = [c.value for c in at.caption]
    assert "Saved: nothing yet (state new)." in captions
    assert any(
        c.startswith("A state of noise, expected or accepted takes the regression out of the counts") for c in captions
    )
    assert TRIAGE_RULE.startswith("A state of noise, expected or accepted")
    picked.select_index(1)
    at.run()
    state = next(s for s in at.selectbox if s.label == "State")
    assert state.value == "noise" and at.text_area[0].value == "flaky runner"
    assert next(t for t in at.text_input if t.label.startswith("Link")).value == "https://x.example/1"
    assert any("Saved: noise, by bob — “flaky runner”" in c.value for c in at.caption)
    # saved through the form: the form shows it at once, and the regression leaves the count
    state.set_value("expected")
    at.text_area[0].input("known: new kernel")
    next(b for b in at.button if b.label == "Save triage").click()
    at.run()
    assert not at.exception
    assert next(s for s in at.selectbox if s.label == "State").value == "expected"
    assert any("Saved: expected, by alice — “known: new kernel”" in c.value for c in at.caption)
    listed = next(f.value for f in at.dataframe if "state" in f.value.columns)
    assert listed.loc[1, "state"] == "expected" and listed.loc[1, "case"] == second["case"]


# -- 4 and 11. A card says each side's runs, in plain words; the statistics live under "How this is decided" -------
JARGON = ("Holm", "family-wise", "scope · device", "A/A", "80% power", "80 % power", "runs a side", "run a side")
JARGON += ("median case",)
JARGON += ("replicates", "power)")


def test_each_sides_runs_are_said_apart_when_they_differ():
    import pandas as pd

    from db.review.detectable import detection
    from db.review.release.evidence import evidence_words

    assert evidence_words(2, 1, 0, 5, baseline="torch=2.14.1") == (
        "2 baseline runs, 1 candidate run (one run: only the spread within it); no reruns of torch=2.14.1 (the runs' "
        "own spread is the noise)"
    )  # was "1 run a side (single run …)": the thinner side only
    assert evidence_words(3, 3, 8, 8, baseline="torch=2.14.1") == (
        "3 runs of each build; reruns of torch=2.14.1 give the noise for 8 of 8 timing cases"
    )
    cases = pd.DataFrame(
        {
            "scope": ["m1"] * 2,
            "se": [0.02, 0.03],
            "df": [18.0] * 2,
            "baseline_pooled": [2, 2],
            "candidate_pooled": [1, 1],
        }
    )
    words = detection(cases, ["scope"], 0.05)[("m1",)]["words"]
    assert "with 2 baseline runs, 1 candidate run" in words and words.startswith("can see a ")


def _card_strings(cards) -> list[str]:
    said = []

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k != "link":
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, str):
            said.append(x)

    walk(cards.answers)
    walk(cards.cards)
    return said + [cards.verdict]


def test_cards_say_each_sides_runs_in_plain_words_and_keep_the_terms_for_how_it_is_decided(release):
    from db.review.comparison import CompareQuery
    from db.review.review import Review
    from db.store.engine import shared_store
    from db.views.release.verdict_cards import verdict_cards

    for candidate in (r.RC, r.NIGHTLY):
        for scope in ("chip", "machine"):
            cards = verdict_cards(
                shared_store(), Review(CompareQuery.from_params({**SIDES, "candidate": candidate, "scope": scope}))
            )
            said = _card_strings(cards)
            assert not [(t, s) for s in said for t in JARGON if t in s], scope
            # the release store: 2.14.1 runs twice a round for 3 rounds on each Mac (its A/A pairs), the others once
            evidence = {c["evidence"] for c in cards.cards}
            assert evidence == {
                f"6 baseline runs, {r.ROUNDS} candidate runs; reruns of {r.STABLE} give the noise for {n} of {n} "
                "timing cases"
                for n in (1, 2, 8)
            }, evidence
    # the page: the cards in plain words; the statistical terms under "How this is decided", nowhere else
    at = open_page("overview.py")
    _no_errors(at)
    how = next(e for e in at.expander if e.label == "How this is decided")
    inside = [t.value for t in how.text]
    assert any("Holm's first step" in t and "80 % power" in t and "A/A pairs" in t for t in inside)
    shown = [e.value for kind in ("markdown", "text", "caption") for e in getattr(at, kind)]
    outside = [s for s in shown if s not in inside]
    assert not [(t, s) for s in outside for t in JARGON if t in s]
    assert any("6 baseline runs, 3 candidate runs" in s for s in outside)


# -- 7. Card links: in-app page links (Back returns), and a correctness link opens its case ----------------------
def _page_links(at) -> list[tuple[str, str, dict[str, str]]]:
    from urllib.parse import parse_qsl

    return [(p.proto.label, p.proto.page, dict(parse_qsl(p.proto.query_string))) for p in at.get("page_link")]


def test_card_links_are_page_links_and_the_correctness_one_opens_its_case(tmp_path, monkeypatch):

    from benchmarks.stores.seed import BASELINE, CANDIDATE, seed_store
    from db.review.comparison import CompareQuery
    from db.review.review import Review, cached_review
    from db.store.engine import shared_store
    from db.views.release.compare_chart import case_rows
    from tests.page_store import page_store

    page_store(tmp_path, monkeypatch, seed_store)  # the seed: softmax's PSNR on the M2 falls 40 dB (a regression)
    sides = {"baseline": BASELINE, "candidate": CANDIDATE, "scope": "machine"}
    at = open_page("compare.py", sides)
    assert not at.exception, [e.value for e in at.exception]
    links = _page_links(at)
    correct = [(label, page, q) for label, page, q in links if page == "correctness"]
    trends = [(label, page, q) for label, page, q in links if page == "trends"]
    assert correct and trends  # in-app links (st.page_link), not Markdown links opening a new tab
    assert not [m.value for m in at.markdown if "](trends?" in m.value or "](correctness?" in m.value]
    label, _, asked = correct[0]
    case = {"workload": "softmax", "case_key": '{"rows":1,"vocab":128256}', "dtype": "float32", "compile": "eager"}
    assert asked == {"baseline": BASELINE, "candidate": CANDIDATE, "metric": "psnr_vs_cpu", **case}
    assert "regressed:" in label and "softmax" in label
    # the link opened: the case alone (its three machines), its metric picked, a way back to every case
    cor = open_page("correctness.py", asked)
    _no_errors_but_faster_but_wrong(cor)
    assert next(s for s in cor.selectbox if s.label == "metric").value == "psnr_vs_cpu"
    slopes = next(f.value for f in cor.dataframe if "baseline_margin" in f.value.columns)
    assert set(slopes.workload) == {"softmax"} and set(slopes.case_key) == {case["case_key"]} and len(slopes) == 3
    assert any(
        i.value.startswith("One case: softmax · rows=1 vocab=128256 · fp32, on every machine (4 cases")
        for i in cor.info
    )
    back = [(p, q) for label, p, q in _page_links(cor) if label == "Show every case"]
    # (the builds as the page's own pickers write them into the address)
    every = {"baseline": "2.14.1 (stable)", "candidate": "2.15.0rc1 (rc)", "metric": "psnr_vs_cpu"}
    assert back == [("correctness", every)]
    every_case = open_page("correctness.py", every)
    assert len(next(f.value for f in every_case.dataframe if "baseline_margin" in f.value.columns)) == 4
    assert not [i.value for i in every_case.info if i.value.startswith("One case")]
    # each machine's figures there are Compare's for the same case (machine scope, psnr_vs_cpu)
    rows = case_rows(
        cached_review(shared_store(), Review(CompareQuery.from_params({**sides, "metric": "psnr_vs_cpu"})))
    )
    rows = rows[(rows.workload == "softmax") & (rows.dtype == "float32")].set_index("scope")
    for s in slopes.itertuples():
        assert (s.baseline_median, s.candidate_median) == (
            rows.loc[s.machine_name, "baseline_median"],
            rows.loc[s.machine_name, "candidate_median"],
        )
    # the trend link carries its case as Trends reads it
    _, _, trend = trends[0]
    assert set(trend) == {"workload", "case_key", "dtype", "compile", "metric"}


def _no_errors_but_faster_but_wrong(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not [e.value for e in at.error if not e.value.startswith("faster but wrong")]  # the seed's finding
