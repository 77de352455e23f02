"""The reviews benchmarks/false_alarms/ makes of the runs it collected, and what each says: every review runs
through `mpsbench compare --baseline runs:A --candidate runs:B --format json` (its function, in this process).

- A/A reviews (runs of one build): any regression is a false alarm; those with a disturbed run on a side are
  counted apart.
- Planted reviews: plain runs against a planted build's runs; each slowed softmax case is found (a regression),
  contended (unconfirmed: too few clean worker processes), otherwise doubtful (unconfirmed, suspected) or missed.
- Reordered reviews: plain runs against a build summing half-precision linears in rounded chunks; a correctness
  regression by PSNR or max abs error is a false alarm of the dtype's jitter (one by max rel error is not: the
  rounded partial sums cancel near zero outputs, a relative error that grows 100–2000× there).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import random
import uuid
from collections import Counter

from benchmarks.false_alarms.disturbance import REORDERED, SLOWED

MAX_REVIEWS = 30  # A/A reviews per plan (and per planted factor: half of it per planted group)


def first_processes(doc: dict, k: int) -> dict:
    """The bundle with each result cut to its first k processes (a new run id)."""
    doc = json.loads(json.dumps(doc))
    doc["run_id"] = uuid.uuid4().hex
    for r in doc["results"]:
        sizes = r.get("processes") or []
        if len(sizes) > k:
            r["samples"], r["processes"] = r["samples"][: sum(sizes[:k])], sizes[:k]
            if r.get("contention"):
                r["contention"] = r["contention"][:k]
            r.pop("summary", None)
    return doc


def review(base: str, cand: str, env: dict) -> dict:
    """`mpsbench compare --baseline runs:A --candidate runs:B --format json`, run in this process (db.compare_command.main,
    what the command runs; a process start per review would double the benchmark's time)."""
    from db.compare_command import main as compare_main

    os.environ["MPSBENCH_DB"] = env["MPSBENCH_DB"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = compare_main(["--baseline", f"runs:{base}", "--candidate", f"runs:{cand}", "--format", "json"])
    if code != 0:
        raise SystemExit(f"ERROR: mpsbench compare exited {code}")
    return json.loads(out.getvalue())


def store(bundles: list[dict], env: dict) -> None:
    from db.ingest.core import ingest_bundle
    from db.store.engine import open_store

    engine = open_store(env["MPSBENCH_DB"])
    try:
        for doc in bundles:
            ingest_bundle(engine, json.dumps(doc).encode(), "benchmark")
    finally:
        engine.dispose()


def groups_of(runs: list[dict], r: int, limit: int, seed: int) -> list[tuple[dict, ...]]:
    """Up to `limit` groups of r runs (seeded choice among all)."""
    groups = list(itertools.combinations(runs, r))
    if len(groups) > limit:
        groups = [groups[i] for i in sorted(random.Random(seed).sample(range(len(groups)), limit))]
    return groups


def ids(group: tuple[dict, ...]) -> str:
    return ",".join(d["run_id"] for d in group)


def _disjoint_pairs(groups: list[tuple[dict, ...]], keep, seed: int) -> list[tuple[tuple, tuple]]:
    pairs = [
        (a, b)
        for i, a in enumerate(groups)
        for b in groups[i + 1 :]
        if not {*ids(a).split(",")} & {*ids(b).split(",")} and keep(a + b)
    ]
    if len(pairs) > MAX_REVIEWS:  # a seeded sample of the disjoint pairs of groups
        pairs = [pairs[i] for i in sorted(random.Random(seed).sample(range(len(pairs)), MAX_REVIEWS))]
    return pairs


def aa_reviews(pairs: list[tuple[tuple, tuple]], env: dict) -> dict:
    alarms = regressions = unconfirmed = contended = 0
    for a, b in pairs:
        answer = review(ids(a), ids(b), env)
        alarms += bool(answer["regressions"])
        regressions += len(answer["regressions"])
        unconfirmed += len(answer.get("unconfirmed", []))
        contended += answer["summary"].get("contended", 0)
    return {
        "reviews": len(pairs),
        "with_regression": alarms,
        "false_alarm_rate": alarms / len(pairs) if pairs else None,
        "regressions": regressions,
        "unconfirmed": unconfirmed,
        "contended": contended,
    }


def _key(x: dict) -> tuple[str, str]:
    return x["case_key"], x["dtype"]


def planted_outcomes(answer: dict, planted_doc: dict) -> Counter:
    """Each slowed case of a planted review: found, contended, doubtful or missed."""
    cases = {
        _key(x)
        for x in planted_doc["results"]
        if x["workload"] == SLOWED and x["metric"] == "op_time" and x["status"] == "ok"
    }
    mine = lambda rows: {_key(x) for x in rows if x["workload"] == SLOWED and x["metric"] == "op_time"}  # noqa: E731
    found = mine(answer["regressions"])
    busy = mine(x for x in answer.get("unconfirmed", []) if str(x.get("doubt", "")).startswith("contended"))
    doubtful = mine(answer.get("unconfirmed", []) + answer.get("suspected", []))
    out = Counter()
    for case in cases:
        out[
            "found" if case in found else "contended" if case in busy else "doubtful" if case in doubtful else "missed"
        ] += 1
    out["slowed"] = len(cases)
    return out


def planted_reviews(plain: list[dict], docs: list[dict], r: int, env: dict) -> dict:
    outcomes, reviews, all_found, others = Counter(), 0, 0, 0
    for b in groups_of(docs, r, 10, 2):
        for a in groups_of(plain, r, max(1, MAX_REVIEWS // 2), 3):
            answer = review(ids(a), ids(b), env)
            mine = planted_outcomes(answer, b[0])
            outcomes += mine
            others += sum(1 for x in answer["regressions"] if x["workload"] != SLOWED)
            reviews, all_found = reviews + 1, all_found + (mine["found"] == mine["slowed"])
    slowed = outcomes["slowed"]
    return {
        "reviews": reviews,
        "slowed_cases": slowed,
        "found": outcomes["found"],
        "contended": outcomes["contended"],
        "doubtful": outcomes["doubtful"],
        "missed": outcomes["missed"],
        "detection_rate": outcomes["found"] / slowed if slowed else None,
        "reviews_all_found": all_found,
        "other_regressions": others,
    }


def reordered_reviews(plain: list[dict], docs: list[dict], env: dict) -> dict:
    """Each reordered run against each plain run: correctness regressions (false alarms), and how far the
    reordered linears' figures moved (PSNR dB, max abs error ×), read from the bundles."""
    reviews = alarms = 0
    moves_db, ratios, by_figure = [], [], Counter()
    for b in docs:
        for a in plain[:5]:
            answer = review(a["run_id"], b["run_id"], env)
            reviews += 1
            rows = [x for x in answer["regressions"] if x["metric"] == "correctness"]
            alarms += len(rows)
            by_figure.update(
                m for x in rows for m in ("psnr_vs_cpu", "max_abs_error", "max_rel_error") if f"{m} " in x["why"]
            )
            figures = {
                (x["case_key"], x["dtype"], x["metric"]): x["samples"][0]
                for x in a["results"]
                if x["workload"] == REORDERED
                and x["status"] == "ok"
                and x["metric"] in ("psnr_vs_cpu", "max_abs_error")
            }
            for x in b["results"]:
                before = figures.get((x["case_key"], x["dtype"], x["metric"]))
                if before is None or x["status"] != "ok" or x["dtype"] not in ("bfloat16", "float16"):
                    continue
                if x["metric"] == "psnr_vs_cpu":
                    moves_db.append(x["samples"][0] - before)
                elif before > 0:
                    ratios.append(x["samples"][0] / before)
    return {
        "reviews": reviews,
        "correctness_regressions": alarms,
        "by_figure": dict(by_figure),
        "psnr_move_db": [min(moves_db), max(moves_db)] if moves_db else None,
        "max_abs_ratio": [min(ratios), max(ratios)] if ratios else None,
    }


def evaluate(runs: dict, k: int, r: int, env: dict) -> dict:
    """Every review of runs cut to k processes, r runs a side. `runs`: plain, planted {factor: docs}, disturbed
    {plain, planted}, reordered (the last two may be empty). The quiet reviews read a store of the quiet runs alone
    (as a machine's history was before any busy hour); the disturbed and reordered ones a store of every run, so
    their A/A model holds the busy runs too (`env["MPSBENCH_DB"]` names the first; the second is beside it)."""
    cut = lambda docs: [first_processes(d, k) for d in docs]  # noqa: E731
    plain = cut(runs["plain"])
    planted = {f: cut(docs) for f, docs in runs["planted"].items()}
    busy_plain = cut(runs["disturbed"]["plain"])
    busy_planted = {f: cut(docs) for f, docs in runs["disturbed"]["planted"].items()}
    reordered = cut(runs["reordered"])
    quiet = plain + [d for docs in planted.values() for d in docs]
    store(quiet, env)
    clean = aa_reviews(_disjoint_pairs(groups_of(plain, r, 200, 1), lambda g: True, 4), env)
    out = {
        "processes": k,
        "runs_a_side": r,
        "aa_reviews": clean["reviews"],
        "aa_reviews_with_regression": clean["with_regression"],
        "false_alarm_rate": clean["false_alarm_rate"],
        "aa_regressions": clean["regressions"],
        "aa_unconfirmed": clean["unconfirmed"],
        "planted": {f"{f:g}x": planted_reviews(plain, docs, r, env) for f, docs in planted.items()},
    }
    if not (busy_plain or busy_planted or reordered):
        return out
    env = {**env, "MPSBENCH_DB": env["MPSBENCH_DB"].removesuffix(".duckdb") + "-all.duckdb"}
    store(quiet + busy_plain + [d for docs in busy_planted.values() for d in docs] + reordered, env)
    if busy_plain:
        disturbed = {d["run_id"] for d in busy_plain}
        out["aa_disturbed"] = aa_reviews(
            _disjoint_pairs(
                groups_of(plain + busy_plain, r, 400, 5), lambda g: any(d["run_id"] in disturbed for d in g), 6
            ),
            env,
        )
    if busy_planted:
        out["planted_disturbed"] = {f"{f:g}x": planted_reviews(plain, docs, r, env) for f, docs in busy_planted.items()}
    if reordered and r == 1:
        out["reordered"] = reordered_reviews(plain, reordered, env)
    return out
