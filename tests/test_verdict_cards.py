"""Verdict cards (db/views/release/verdict_cards.py): one per summary group with its counts, families, memory,
correctness and status changes; regressions first; the seeded store's cards per chip; Overview carries them."""

from __future__ import annotations

import pandas as pd

from benchmarks.stores.seed import BASELINE, CANDIDATE
from db.views.release.verdict_cards import cards_from

GROUP = {"device": "mps", "compile": "eager"}


def _group(scope: str, dtype: str, regressed: int, **counts) -> dict:
    return {
        "scope": scope,
        "dtype": dtype,
        **GROUP,
        "verdict": f"{regressed} regressions" if regressed else "no regressions",
        "regressed": regressed,
        "faster": counts.get("faster", 0),
        "slower": counts.get("slower", 0),
        "unchanged": counts.get("unchanged", 0),
        "compared": regressed + sum(counts.values()),
        "unmatched": 0,
        "memory": "no memory figures compared",
        "correctness": "no correctness figures compared",
    }


def test_cards_from_a_summary_put_regressions_first_and_count_status_changes():
    summary = {
        "baseline": "torch=2.14.1",
        "candidate": "torch=2.15.0rc1",
        "scope": "chip",
        "verdict": "2 regressions",
        "groups": [
            _group("M2", "float32", 0, faster=4),
            _group("M3", "bfloat16", 2, faster=38, slower=3, unchanged=120),
        ],
        "families": [
            {
                "scope": "M3",
                "dtype": "bfloat16",
                **GROUP,
                "workload": w,
                "metric": "op_time",
                "n_cases": n,
                "summary": f"M3 · {w} op_time bfloat16 eager: geomean 1.50× faster "
                f"(95 % CI 1.40–1.60×) over {n} cases, baseline torch=2.14.1",
            }
            for w, n in (("linear", 100), ("softmax", 50), ("sdpa", 10), ("pad", 1))
        ],
    }
    changes = pd.DataFrame(
        [
            {"scope": "M3", "dtype": "bfloat16", **GROUP, "kind": k, "direction": d}
            for k, d in (("newly supported", "better"), ("OOM fixed", "better"), ("new error", "worse"))
        ]
    )
    cards = cards_from(summary, changes)
    first, second = cards.cards
    assert first["title"] == "M3 · bfloat16 · eager" and first["verdict"] == "2 regressions"
    # a partition of the group's cases: the counts add up to what was compared
    assert first["counts"] == "163 cases: 2 regressed · 38 faster · 3 slower · 120 unchanged"
    assert [f["text"] for f in first["families"]] == [
        "linear op_time: geomean 1.50× faster (95 % CI 1.40–1.60×) over 100 cases",
        "softmax op_time: geomean 1.50× faster (95 % CI 1.40–1.60×) over 50 cases",
        "sdpa op_time: geomean 1.50× faster (95 % CI 1.40–1.60×) over 10 cases",
    ]
    # Compare's own kind words, counted (the status changes table says the same)
    assert first["status"] == "status changes: 1 newly supported; 1 OOM fixed; 1 new error"
    assert (first["newly_supported"], first["fixed"], first["oom_fixed"], first["new_failures"]) == (1, 1, 1, 1)
    assert second["title"] == "M2 · float32 · eager" and second["families"] == []
    assert second["status"] == "no status changes"


def test_the_seeded_stores_cards_per_chip(seeded):
    from db.review.comparison import CompareQuery
    from db.review.review import Review
    from db.views.release.verdict_cards import verdict_cards

    query = CompareQuery.from_params({"baseline": BASELINE, "candidate": CANDIDATE, "scope": "chip"})
    cards = {c["title"]: c for c in verdict_cards(seeded, Review(query)).cards}
    # linear: q 0.8× the time, k_v 1.1× (the regression), o same; the M3 Ultra's bf16 decode is a fourth case
    for chip, counts in (
        ("Apple M3 Ultra (80-core GPU)", "4 cases: 1 regressed · 2 faster · 1 unchanged"),
        ("Apple M2 (10-core GPU)", "3 cases: 1 regressed · 1 faster · 1 unchanged"),
    ):
        card = cards[f"{chip} · bfloat16 · eager"]
        assert (card["verdict"], card["regressed"], card["counts"]) == ("1 case regressed", 1, counts)
        assert card["status"] == "status changes: 1 now falls back to the CPU"  # grouped_mm falls back
        assert cards[f"{chip} · float8_e4m3fn · eager"]["newly_supported"] == 1  # fp8: unsupported → ok
    assert list(cards)[:2] == sorted(list(cards)[:2]) and all(c["regressed"] for c in list(cards.values())[:2])


def test_overview_carries_the_default_comparisons_cards(seeded):
    from db.views.release.overview import overview

    verdict = overview(seeded).verdict  # latest stable 2.15.0 against the newest nightly, chip scope
    assert (verdict["baseline"], verdict["candidate"], verdict["scope"]) == (
        "torch=2.15.0",
        "torch=2.16.0.dev20261202",
        "chip",
    )
    card = verdict["cards"][0]
    assert card["title"] == "Apple M3 Ultra (80-core GPU) · float32 · eager"
    assert card["counts"] == "1 case: 1 faster"  # softmax 45.6 → 36.5 µs


def _mac(name: str, chip: str) -> dict:
    return {
        "name": name,
        "os": "macOS",
        "os_version": "15.2",
        "chip": chip,
        "arch": "arm64",
        "memory_bytes": 64 * 1024**3,
        "power_source": "ac",
    }


def test_a_chip_without_a_candidate_run_gets_a_grey_card_that_says_why_never_green(tmp_path):
    """M4 Pro ran the baseline only: its card says nothing was compared and why, sorts after the compared chips,
    and the overall verdict counts it apart; the M3 Ultra card names its regression and states its evidence."""
    from db.ingest.core import ingest_bundle
    from db.review.comparison import CompareQuery
    from db.review.review import Review
    from db.store.engine import open_store
    from db.views.release.verdict_cards import verdict_cards
    from tests.bundles import make_bundle, make_result

    stable = {"torch_version": "2.14.1", "channel": "stable", "python_version": "3.11.7", "collector_version": "0.1.0"}
    engine = open_store(tmp_path / "s.duckdb")
    # 10 worker processes of 2 samples each (schema 2): replicates to test on; the candidate 2× the baseline
    slow = [make_result(samples=[2 * (7.1 + 0.01 * i) for i in range(20)], processes=[2] * 10)]
    fast = [make_result(samples=[7.1 + 0.01 * i for i in range(20)], processes=[2] * 10)]
    for machine, build, results in (("m3u", stable, fast), ("m4p", stable, fast), ("m3u", None, slow)):
        chip = "Apple M3 Ultra" if machine == "m3u" else "Apple M4 Pro"
        extra = {"build": build} if build else {}
        ingest_bundle(engine, make_bundle(schema_version=2, machine=_mac(machine, chip), results=results, **extra))
    query = CompareQuery.from_params({"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1", "scope": "chip"})
    cards = verdict_cards(engine, Review(query))
    engine.dispose()
    by_chip = {c["scope"]: c for c in cards.cards}
    m4 = by_chip["Apple M4 Pro"]
    assert m4["compared"] == 0 and m4["regressed"] == 0
    assert m4["verdict"] == "nothing compared: no torch=2.15.0rc1 run on Apple M4 Pro"
    assert [c["scope"] for c in cards.cards][-1] == "Apple M4 Pro"  # after every compared chip
    assert cards.verdict.endswith("; 1 chip with nothing compared")
    assert [(a["scope"], a["answer"]) for a in cards.answers] == [
        ("Apple M3 Ultra", "regression"),
        ("Apple M4 Pro", "nothing compared"),
    ]
    m3 = by_chip["Apple M3 Ultra"]
    assert m3["compared"] == 1 and m3["regressed"] == 1
    assert [w["text"].split(" · ")[-1] for w in m3["worst"]] == ["op_time 2.00× slower"]
    assert m3["worst"][0]["link"].startswith("trends?workload=softmax")
    assert (
        m3["evidence"] == "1 run of each build (one run: only the spread within it); no reruns of torch=2.14.1 "
        "(the runs' own spread is the noise)"
    )
    assert m3["verdict"] == "1 case regressed" and m4["worst"] == [] and m4["evidence"] == "no timing case compared"


def test_card_lines_are_toned_wins_green_as_losses_red():
    """Issue 35: a card's memory, correctness and status lines carry a tone (the page colours better green and worse
    red, as it does the counts): from the group's regressed / gained figures and its status changes."""
    won = {
        **_group("M3", "bfloat16", 0),
        "memory": "no memory regression (3 figures compared; 2 smaller: …)",
        "memory_regressed": 0,
        "memory_gains": 2,
        "correctness": "1 of 2 cases regressed: …",
        "correctness_regressed": 1,
        "correctness_gains": 1,
    }
    quiet = {**_group("M2", "float32", 0), "memory_regressed": 0, "memory_gains": 0}
    summary = {
        "baseline": "a",
        "candidate": "b",
        "scope": "chip",
        "verdict": "",
        "groups": [won, quiet],
        "families": [],
    }
    changes = pd.DataFrame(
        [{"scope": "M3", "dtype": "bfloat16", **GROUP, "kind": "newly supported", "direction": "better"}]
    )
    cards = {c["scope"]: c for c in cards_from(summary, changes).cards}
    assert cards["M3"]["tones"] == {"memory": "better", "correctness": "worse", "status": "better"}
    assert cards["M2"]["tones"] == {"memory": "", "correctness": "", "status": ""}
    lost = pd.DataFrame(
        [
            {"scope": "M3", "dtype": "bfloat16", **GROUP, "kind": k, "direction": d}
            for k, d in (("newly supported", "better"), ("new error", "worse"))
        ]
    )
    assert cards_from(summary, lost).cards[0]["tones"]["status"] == "worse"  # a new failure outweighs a gain


def test_summary_counts_each_groups_memory_and_correctness_moves():
    from db.review.release.group_words import moved as _moved

    compared = pd.DataFrame({"improved": [True, False, True]})
    found = pd.DataFrame({"metric": ["memory_driver_peak", "op_time", "correctness"]})
    assert _moved(compared, found, "memory") == {"memory_regressed": 1, "memory_gains": 2}
    assert _moved(compared.iloc[:0], found.iloc[:0], "correctness") == {
        "correctness_regressed": 0,
        "correctness_gains": 0,
    }
    assert _moved(compared.iloc[1:2], found, "correctness") == {"correctness_regressed": 1, "correctness_gains": 0}


def test_the_walks_memory_lines_are_toned_by_what_moved(tmp_path):
    """tests/release_walk.py's extras: the M4 Pro's VAE live tensors 6 → 4 GiB (a win: green); the M3 Ultra's
    decode driver total 2.0 → 2.1 GiB (+5 %, beyond the memory rule: red)."""
    from db.store.engine import open_store
    from db.views.release.verdict_cards import overview_cards
    from tests.release_walk import walk_extras_store

    engine = open_store(tmp_path / "walk.duckdb")
    walk_extras_store(engine)
    cards = {c["title"]: c for c in overview_cards(engine)[0].cards}
    m4, m3 = (
        cards[f"{chip} · bfloat16 · eager"] for chip in ("Apple M4 Pro (20-core GPU)", "Apple M3 Ultra (80-core GPU)")
    )
    assert m4["tones"]["memory"] == "better" and "1 smaller" in m4["memory"]
    assert m3["tones"]["memory"] == "worse" and m3["memory"].startswith("1 memory regression")
    assert m3["tones"]["correctness"] == m4["tones"]["correctness"] == ""  # the bf16 PSNR jitter: within its rule
    engine.dispose()
