"""Case generation of every kernel family: counts, unique keys, scalar params, dtype/compile selection."""

import pytest

from collector.kernels import WORKLOADS
from collector.kernels.fp8 import Fp8
from collector.kernels.grouped_mm import GroupedMm
from collector.kernels.linear import Linear
from collector.kernels.softmax import Softmax

BY_NAME = {w.name: w for w in WORKLOADS}


def _ids(cases):
    return [(c.workload, c.key, c.dtype, c.compile) for c in cases]


def test_six_families():
    assert sorted(BY_NAME) == ["constant_pad", "fp8", "grouped_mm", "linear", "sdpa", "softmax"]
    assert all(w.suite == "kernels" for w in WORKLOADS)


@pytest.mark.parametrize("profile", ["quick", "full"])
@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.name)
def test_case_keys_unique_and_params_scalar(workload, profile):
    cases = workload.cases(profile)
    assert cases, f"{workload.name} {profile} has no cases"
    assert len(set(_ids(cases))) == len(cases)
    for case in cases:
        assert all(isinstance(v, (str, int, float, bool)) for v in case.params.values()), case.label()
        assert case.compile == "eager"


def test_quick_is_small():
    counts = {w.name: len(w.cases("quick")) for w in WORKLOADS}
    assert sum(counts.values()) <= 40, counts
    assert all(1 <= n <= 8 for n in counts.values()), counts


def test_linear_full_has_at_least_96_mkn_and_both_bias_variants():
    cases = Linear().cases("full")
    mkn = {(c.params["M"], c.params["K"], c.params["N"]) for c in cases}
    assert len(mkn) >= 96
    assert {c.params["M"] for c in cases} == {1, 4, 8}
    assert len(cases) == 2 * len(mkn)  # each (M, K, N) with and without bias
    assert {c.dtype for c in cases} == {"bfloat16"}
    lm_head = [c for c in cases if c.params["N"] == 201088]
    assert lm_head and all(c.params["model"] == "gpt-oss-20b" and c.params["K"] == 2880 for c in lm_head)


def test_softmax_full_set():
    cases = Softmax().cases("full")
    shapes = {(c.params["rows"], c.params["vocab"]) for c in cases}
    expected = {(r, v) for r in (1, 4, 8) for v in (128256, 129280, 151936, 154880, 201088)} | {(5, 51866)}
    assert shapes == expected
    assert {c.dtype for c in cases} == {"float32", "bfloat16", "float16"}
    assert len(cases) == 16 * 3


def test_fp8_full_set():
    cases = Fp8().cases("full")
    matmuls = {(c.params["M"], c.params["K"], c.params["N"]) for c in cases if c.params["variant"] != "storage"}
    assert matmuls == {(s, s, s) for s in (256, 512, 1024, 2048, 4096, 8192)} | {(1, 4096, 4096)}
    for variant, dtype in (
        ("scaled_mm_tensorwise", "float8_e4m3fn"),
        ("scaled_mm_rowwise", "float8_e4m3fn"),
        ("bf16_matmul", "bfloat16"),
    ):
        chosen = [c for c in cases if c.params["variant"] == variant]
        assert len(chosen) == 7 and {c.dtype for c in chosen} == {dtype}
    storage = [c for c in cases if c.params["variant"] == "storage"]
    assert {(c.params["tensor"], c.dtype) for c in storage} == {
        ("float8_e4m3fn", "float8_e4m3fn"),
        ("bfloat16_source", "bfloat16"),
    }
    assert len(storage) == 2 * 6  # one fp8 and one bf16 record per distinct weight shape


def test_fp8_respects_requested_dtypes():
    only_bf16 = Fp8().cases("full", dtypes=("bfloat16",))
    assert only_bf16 and {c.dtype for c in only_bf16} == {"bfloat16"}
    assert Fp8().cases("quick", dtypes=("float16",)) == []


def test_grouped_mm_full_set():
    cases = GroupedMm().cases("full")
    assert {c.params["tokens"] for c in cases} == {1, 8, 64, 512}
    assert {c.params["variant"] for c in cases} == {"grouped_mm", "loop_cpu_offsets"}
    qwen3 = {
        (c.params["experts"], c.params["top_k"], c.params["K"], c.params["N"])
        for c in cases
        if c.params["model"] == "Qwen3-30B-A3B"
    }
    assert qwen3 == {(128, 8, 2048, 1536), (128, 8, 768, 2048)}
    qwen2 = {
        (c.params["experts"], c.params["top_k"], c.params["K"], c.params["N"])
        for c in cases
        if c.params["model"] == "Qwen2-MoE"
    }
    assert qwen2 == {(60, 4, 2048, 2816), (60, 4, 1408, 2048)}
    assert len(cases) == 2 * 2 * 4 * 2


def test_sdpa_full_set():
    cases = BY_NAME["sdpa"].cases("full")
    decode = [c for c in cases if c.params["mode"] == "decode"]
    prefill = [c for c in cases if c.params["mode"] == "prefill"]
    assert {c.params["kv_len"] for c in decode} == {512, 2048, 8192} and all(c.params["q_len"] == 1 for c in decode)
    assert {c.params["q_len"] for c in prefill} == {512, 2048} and all(c.params["causal"] for c in prefill)
    assert not any(c.params["causal"] for c in decode)
    assert {c.params["head_dim"] for c in cases} == {64, 128}


def test_constant_pad_full_includes_inner_extent_limit():
    cases = BY_NAME["constant_pad"].cases("full")
    assert {c.params["C"] for c in cases} == {96, 192, 384}
    assert any(c.params["H"] * c.params["W"] >= 65536 for c in cases)
    assert all(c.params["pad"] == "1,1,1,1,2,0" for c in cases)
    quick = BY_NAME["constant_pad"].cases("quick")
    assert any(c.params["inner_elements"] >= 65536 for c in quick)


def test_requested_dtypes_filter_and_compile_modes():
    cases = Softmax().cases("quick", dtypes=("float16", "int8"))
    assert {c.dtype for c in cases} == {"float16"}  # int8 is no softmax dtype: not listed
    assert Softmax().cases("quick", compile_modes=("inductor",)) == []  # eager only
    assert Softmax().cases("quick", compile_modes=("eager", "inductor"))


def test_unknown_profile_is_refused():
    with pytest.raises(ValueError, match="profile 'huge'"):
        Softmax().cases("huge")
