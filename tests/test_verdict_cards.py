"""Verdict cards (db/views/verdict_cards.py): one per summary group with its counts, families, memory,
correctness and status changes; regressions first; the seeded store's cards per chip; Overview carries them."""
from __future__ import annotations

import pandas as pd
import pytest

from db.views.verdict_cards import cards_from
from tests.seed import BASELINE, CANDIDATE
from tests.store_fixtures import seeded  # noqa: F401 (a fixture)

GROUP = {"device": "mps", "compile": "eager"}


def _group(scope: str, dtype: str, regressed: int, **counts) -> dict:
    return {"scope": scope, "dtype": dtype, **GROUP, "verdict": f"{regressed} regressions" if regressed
            else "no regressions", "regressed": regressed, "faster": counts.get("faster", 0),
            "slower": counts.get("slower", 0), "unchanged": counts.get("unchanged", 0), "unmatched": 0,
            "memory": "no memory figures compared", "correctness": "no correctness figures compared"}


def test_cards_from_a_summary_put_regressions_first_and_count_status_changes():
    summary = {"baseline": "torch=2.14.1", "candidate": "torch=2.15.0rc1", "scope": "chip", "verdict": "2 regressions",
               "groups": [_group("M2", "float32", 0, faster=4), _group("M3", "bfloat16", 2, faster=38, slower=3,
                                                                        unchanged=120)],
               "families": [{"scope": "M3", "dtype": "bfloat16", **GROUP, "workload": w, "metric": "op_time",
                             "n_cases": n, "summary": f"M3 · {w} op_time bfloat16 eager: geomean 1.50× faster "
                                                      f"(95 % CI 1.40–1.60×) over {n} cases, baseline torch=2.14.1"}
                            for w, n in (("linear", 100), ("softmax", 50), ("sdpa", 10), ("pad", 1))]}
    changes = pd.DataFrame([{"scope": "M3", "dtype": "bfloat16", **GROUP, "kind": k, "direction": d}
                            for k, d in (("newly supported", "better"), ("OOM fixed", "better"),
                                         ("new error", "worse"))])
    cards = cards_from(summary, changes)
    first, second = cards.cards
    assert first["title"] == "M3 · bfloat16 · eager" and first["verdict"] == "2 regressions"
    assert first["counts"] == "38 faster / 3 slower / 120 unchanged (timing cases)"
    assert first["families"] == ["linear op_time: geomean 1.50× faster (95 % CI 1.40–1.60×) over 100 cases",
                                 "softmax op_time: geomean 1.50× faster (95 % CI 1.40–1.60×) over 50 cases",
                                 "sdpa op_time: geomean 1.50× faster (95 % CI 1.40–1.60×) over 10 cases"]
    assert first["status"] == "1 newly supported, 1 fixed (1 OOM), 1 new failures"
    assert second["title"] == "M2 · float32 · eager" and second["families"] == []
    assert second["status"] == "0 newly supported, 0 fixed (0 OOM), 0 new failures"



def test_the_seeded_stores_cards_per_chip(seeded):
    from db.review.comparison import CompareQuery
    from db.review.review import Review
    from db.views.verdict_cards import verdict_cards

    query = CompareQuery.from_params({"baseline": BASELINE, "candidate": CANDIDATE, "scope": "chip"})
    cards = {c["title"]: c for c in verdict_cards(seeded, Review(query)).cards}
    for chip in ("Apple M3 Ultra (80-core GPU)", "Apple M2 (10-core GPU)"):
        card = cards[f"{chip} · bfloat16 · eager"]  # linear: q 0.8× the time, k_v 1.1× (the regression), o same
        assert (card["verdict"], card["regressed"]) == ("1 regression", 1)
        assert card["counts"] == "1 faster / 1 slower / 1 unchanged (timing cases)"
        assert card["status"] == "0 newly supported, 0 fixed (0 OOM), 1 new failures"  # grouped_mm falls back
        assert cards[f"{chip} · float8_e4m3fn · eager"]["newly_supported"] == 1  # fp8: unsupported → ok
    assert list(cards)[:2] == sorted(list(cards)[:2]) and all(c["regressed"] for c in list(cards.values())[:2])


def test_overview_carries_the_default_comparisons_cards(seeded):
    from db.views.overview import overview

    verdict = overview(seeded).verdict  # latest stable 2.15.0 against the newest nightly, chip scope
    assert (verdict["baseline"], verdict["candidate"], verdict["scope"]) == \
        ("torch=2.15.0", "torch=2.16.0.dev20261202", "chip")
    card = verdict["cards"][0]
    assert card["title"] == "Apple M3 Ultra (80-core GPU) · float32 · eager"
    assert card["counts"] == "1 faster / 0 slower / 0 unchanged (timing cases)"  # softmax 45.6 → 36.5 µs
