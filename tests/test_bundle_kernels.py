"""A bundle's kernels breakdowns (schema 5, bundle.kernels): the rules each one is validated by, with the field
named, and what a breakdown's device time is."""

import pytest
from pydantic import ValidationError

from bundle.kernels import CaseKernels, device_time_us
from bundle.schema import Bundle
from tests.bundles import make_bundle


def _entry(name="aten::_softmax", kind="aten_op", time=75.0, share=0.75, calls=1.0, **kw):
    return dict(name=name, kind=kind, calls_per_call=calls, device_time_us=time, share=share, **kw)


def _kernels(**kw):
    base = dict(
        workload="softmax",
        params={"rows": 1, "vocab": 128256},
        dtype="float32",
        metric="op_time",
        status="ok",
        profiler="torch.profiler",
        op_calls=20,
        entries=[_entry(), _entry("aten::softmax", time=25.0, share=0.25)],
    )
    return base | kw


def _refusal(exc: ValidationError) -> tuple[str, str]:
    [error] = exc.errors()
    return error.get("ctx", {}).get("field", ""), error["msg"]


def test_device_time_is_the_device_entries_else_the_aten_ops():
    cpu = CaseKernels(**_kernels())
    assert cpu.device_time_us == 100.0 and cpu.case_key == '{"rows":1,"vocab":128256}'
    # CUDA: a kernel of 60 µs and the aten op that launched it (60 µs again): the time is the kernel's, once
    cuda = CaseKernels(
        **_kernels(
            entries=[_entry("aten::_softmax", time=60.0, share=1.0), _entry("softmax_warp", "device_kernel", 60.0, 1.0)]
        )
    )
    assert cuda.device_time_us == 60.0
    assert device_time_us([]) == 0.0


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"entries": [_entry(share=0.5), _entry("aten::softmax", time=25.0, share=0.25)]}, "entries[0].share", "0.5"),
        ({"entries": [_entry(share=0.5), _entry(share=0.5, time=75.0)]}, "entries[1]", "listed twice"),
        ({"entries": []}, "entries", "needs entries"),
        ({"op_calls": None}, "entries", "needs entries and op_calls"),
        ({"status": "error"}, "status", "needs a message"),
        ({"status": "fallback"}, "status", "status is ok"),
        ({"metric": "achieved_bandwidth"}, "metric", "not a time per call"),
        ({"case_key": '{"rows":2}'}, "case_key", "does not match params"),
    ],
)
def test_a_broken_rule_is_refused_naming_the_field(change, field, words):
    with pytest.raises(ValidationError) as caught:
        CaseKernels(**_kernels(**change))
    named, message = _refusal(caught.value)
    assert named == field and words in message


def test_an_error_breakdown_has_a_message_and_no_entries():
    k = CaseKernels(**_kernels(status="error", message="crashed: SIGSEGV (signal 11)", entries=[], op_calls=None))
    assert k.device_time_us == 0.0


def test_schema_5_carries_kernels_once_per_case_and_4_still_reads():
    assert Bundle(**make_bundle(schema_version=4)).kernels == []
    b = Bundle(**make_bundle(schema_version=5, kernels=[_kernels()]))
    assert b.kernels[0].entries[0].name == "aten::_softmax"
    assert list(b.model_dump(mode="json"))[-2:] == ["kernels", "results"]  # results stays the last key
    with pytest.raises(ValidationError, match=r"kernels\[1\] repeats the case of kernels\[0\]"):
        Bundle(**make_bundle(schema_version=5, kernels=[_kernels(), _kernels()]))
    with pytest.raises(ValidationError, match="schema_version 6 is not supported"):
        Bundle(**make_bundle(schema_version=6))


def test_an_entry_time_past_the_sample_bound_is_refused_before_its_sum_overflows():
    """schemathesis found 10 entries of ~1e308 µs reaching a 500 (math.fsum overflows): an entry's time is bounded
    as a sample is (bundle.json_rules.SAMPLE_MAX), so the sum of any breakdown stays finite."""
    huge = [_entry(f"aten::op{i}", time=1e308, share=0.5) for i in range(2)]
    with pytest.raises(ValidationError) as refused:
        CaseKernels(**_kernels(entries=huge))
    assert any(e["loc"][-1] == "device_time_us" and e["type"] == "less_than_equal" for e in refused.value.errors())
    fine = [_entry("aten::a", time=1e150, share=0.5), _entry("aten::b", time=1e150, share=0.5)]
    assert CaseKernels(**_kernels(entries=fine)).device_time_us == 2e150
