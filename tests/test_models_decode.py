"""decode workload on the CPU: case identity, the greedy loop against transformers' generate, the records of
eager and compiled cases through the real runner, and a user's local model directory."""

import pytest
import torch

from collector.adapters.cpu import CpuAdapter
from collector.isolation.runner import RunContext, run_case
from collector.models import causal_lm
from collector.models.decode import MODEL_VARIABLE, Decode
from collector.models.decode_loop import DecodeLoop
from collector.timing.loop import TimingPolicy
from collector.workload import Case
from tests.torch_threads import one_thread  # noqa: F401  (autouse fixture)

FAST = TimingPolicy(region_budget_s=0.3, min_region_samples=3, max_region_samples=5)
MEMORY = ("memory_driver_peak", "memory_reserved_peak", "memory_allocated_peak", "memory_outside_allocator")


def _run(case: Case) -> dict:
    return {r.metric: r for r in run_case(Decode(), case, RunContext(CpuAdapter(), FAST))}


def _quick(model: str, dtype: str = "float32", compile_mode: str = "eager") -> Case:
    cases = Decode().cases("quick", (dtype,), ("eager", "inductor"))
    found = next(c for c in cases if c.params["model"] == model)
    return Case(found.workload, found.params, found.dtype, compile_mode)


def test_quick_cases_carry_model_identity():
    moe, dense = (c.params for c in Decode().cases("quick"))
    # Qwen3-MoE tiny by hand: embeddings + lm_head 2·1024·64; per layer q,o 64·64, k,v 64·32, q/k norms 16,
    # layer norms 2·64, router 64·8, experts 8·(2·32·64 + 64·32); final norm 64
    per_layer = 2 * 64 * 64 + 2 * 64 * 32 + 2 * 16 + 2 * 64 + 64 * 8 + 8 * (2 * 32 * 64 + 64 * 32)
    assert moe["parameters"] == 2 * 1024 * 64 + 2 * per_layer + 64 == 255360
    assert moe | {"parameters": 0} == {
        "model": "qwen3-moe-tiny",
        "source": "random",
        "architecture": "Qwen3MoeForCausalLM",
        "parameters": 0,
        "layers": 2,
        "hidden": 64,
        "experts": 8,
        "top_k": 2,
        "vocab": 1024,
        "experts_impl": "grouped_mm",
        "context": 32,
        "new_tokens": 8,
    }
    assert dense["architecture"] == "LlamaForCausalLM" and dense["experts"] is None and dense["top_k"] is None
    full = Decode().cases("full")
    assert {c.params["context"] for c in full} == {512, 2048} and {c.params["new_tokens"] for c in full} == {128}


def test_dtype_and_compile_selection():
    w = Decode()
    assert {c.dtype for c in w.cases("quick")} == {"bfloat16"}
    assert w.cases("quick", ("float8_e4m3fn",)) == []
    both = w.cases("quick", ("float32",), ("eager", "inductor"))
    assert sorted((c.params["model"], c.compile) for c in both) == [
        ("llama-tiny", "eager"),
        ("qwen3-moe-tiny", "eager"),
        ("qwen3-moe-tiny", "inductor"),
    ]
    assert {c.compile for c in w.cases("full", None, ("inductor",))} == {"inductor"}
    assert len(w.cases("full", None, ("eager", "inductor"))) == 2 * 2 * 2  # models × contexts × modes


class PastKeyValuesSignature:
    """A model as transformers 5.4-5.23 call it: the cache argument is named `past_key_values`."""

    def __init__(self, model):
        self.model, self.config = model, model.config

    def forward(self, input_ids, past_key_values=None, use_cache=None, logits_to_keep=0):
        return self.model(
            input_ids=input_ids, cache=past_key_values, use_cache=use_cache, logits_to_keep=logits_to_keep
        )

    __call__ = forward


@pytest.mark.parametrize("transformers_api", ["crop+cache", "cumulative_length+past_key_values"])
def test_loop_matches_generate_and_repeats_exactly(transformers_api, monkeypatch):
    case = _quick("qwen3-moe-tiny")
    model = causal_lm.build(case, torch.float32, torch.device("cpu"))
    looped = model
    if transformers_api.startswith("cumulative_length"):  # 5.4-5.23: no StaticLayer.crop, other argument name
        from transformers.cache_utils import StaticLayer

        monkeypatch.delattr(StaticLayer, "crop")
        looped = PastKeyValuesSignature(model)
    prompt = torch.randint(0, 1024, (1, 32), generator=torch.Generator().manual_seed(3))
    with torch.inference_mode():
        loop = DecodeLoop(looped, prompt, 8)
        first = loop.prefill_and_rewind()
        assert torch.equal(loop.prefill(), first)  # the rewind left an empty cache behind
        tokens, again = loop.decode(), loop.decode()
        expected = model.generate(prompt, do_sample=False, max_new_tokens=9, min_new_tokens=9)[:, 32:]
    assert torch.equal(torch.cat([first, tokens], dim=1), expected)
    assert torch.equal(again, tokens)


@pytest.mark.parametrize("model", ["qwen3-moe-tiny", "llama-tiny"])
def test_eager_case_records(model):
    r = _run(_quick(model))
    measured = [x for m, x in r.items() if m not in MEMORY[1:]]
    assert all(x.status.value == "ok" for x in measured), [(x.metric, x.message) for x in measured]
    assert (r["time_to_first_token"].unit, r["prefill_throughput"].unit) == ("ms", "tokens/s")
    assert (r["decode_time"].unit, r["decode_throughput"].unit, r["first_call_time"].unit) == ("s", "tokens/s", "s")
    assert r["decode_throughput"].samples == pytest.approx([8 / s for s in r["decode_time"].samples])
    ttft_s = [ms / 1e3 for ms in r["time_to_first_token"].samples]
    assert r["prefill_throughput"].samples == pytest.approx([32 / s for s in ttft_s])
    assert min(r["decode_throughput"].samples) > 0 and "compile_time" not in r
    assert r["memory_driver_peak"].samples[0] > 0
    assert {r[m].status.value for m in MEMORY[1:]} == {"unavailable"}


def test_compiled_case_records_compile_time():
    # the real inductor compile takes ~30 s on this box; dynamo's aot_eager backend runs the same path
    # (compiled decode step, compile_time record) in a few seconds
    r = _run(_quick("qwen3-moe-tiny", compile_mode="aot_eager"))
    assert r["compile_time"].status.value == "ok" and r["compile_time"].unit == "s"
    assert r["compile_time"].samples[0] > 0 and "torch.compile" in r["compile_time"].message
    assert r["decode_throughput"].status.value == "ok"
    assert any("fallback loop" in w for w in r["decode_throughput"].warnings)  # float32 under compile


def test_missing_local_model_is_an_error_naming_what_was_looked_for(monkeypatch, tmp_path):
    monkeypatch.setenv(MODEL_VARIABLE, "nobody-org/not-a-model")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    (case,) = [c for c in Decode().cases("quick")]
    assert case.params == {"model": "nobody-org/not-a-model", "source": "local", "context": 32, "new_tokens": 8}
    records = _run(case)
    assert set(records) == set(Decode.metrics)
    for rec in records.values():
        assert rec.status.value == "error"
        assert rec.message.startswith("CollectorError: MPSBENCH_DECODE_MODEL='nobody-org/not-a-model'")
        assert str(tmp_path) in rec.message and "Nothing is downloaded" in rec.message


def test_local_model_directory(monkeypatch, tmp_path):
    saved = causal_lm.build(_quick("llama-tiny"), torch.float32, torch.device("cpu"))
    saved.save_pretrained(tmp_path / "my-llama")
    monkeypatch.setenv(MODEL_VARIABLE, str(tmp_path / "my-llama"))
    (case,) = Decode().cases("quick", ("float32",))
    assert case.params["model"] == "my-llama" and case.params["source"] == "local"
    assert case.params["architecture"] == "LlamaForCausalLM" and case.params["parameters"] == 205120
    loaded = causal_lm.build(case, torch.float32, torch.device("cpu"), tmp_path / "my-llama")
    assert all(torch.equal(a, b) for a, b in zip(saved.state_dict().values(), loaded.state_dict().values()))
    assert _run(case)["decode_throughput"].status.value == "ok"
