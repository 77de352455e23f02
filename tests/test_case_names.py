"""Human case names: known answers for each family's params shape, from params or their canonical case_key."""

from __future__ import annotations

import pandas as pd

from bundle.case_names import case_name, case_names
from bundle.schema import case_key


def test_linear_case_reads_like_the_issue_example():
    params = {
        "M": 4,
        "K": 1024,
        "N": 2048,
        "bias": False,
        "model": "Qwen3-0.6B",
        "projection": "q",
        "used_by": "Qwen3-0.6B:q Qwen3-1.7B:q",
    }
    expected = "linear q · Qwen3-0.6B · M=4 K=1024 N=2048 · bf16"
    assert case_name("linear", params, "bfloat16", "eager") == expected
    assert case_name("linear", case_key(params), "bfloat16", "eager") == expected  # from the sorted JSON key


def test_flags_none_compile_and_named_sizes():
    params = {"M": 1, "K": 8, "N": 16, "bias": True, "model": "m", "projection": "o"}
    assert case_name("linear", params, "float32", "inductor") == "linear o · m · M=1 K=8 N=16 bias · fp32 · inductor"
    assert case_name("softmax", {"rows": 1, "vocab": 128256}, "float16") == "softmax · rows=1 vocab=128256 · fp16"
    moe = {"model": "x", "experts": 8, "top_k": None, "tokens": 4}
    assert case_name("decode", moe, "bfloat16") == "decode · x · experts=8 tokens=4 · bf16"  # None: not applicable


def test_pad_shape_in_written_order_and_derived_keys_left_out():
    params = {"B": 1, "C": 96, "T": 2, "H": 32, "W": 32, "pad": "1,1,1,1,2,0", "value": 0.0, "inner_elements": 1024}
    assert (
        case_name("constant_pad", params, "bfloat16")
        == "constant_pad · B=1 C=96 T=2 H=32 W=32 pad=1,1,1,1,2,0 value=0 · bf16"
    )


def test_a_key_that_is_not_a_params_object_is_shown_as_stored():
    assert case_name("w", "not json", "float32") == "w · not json · fp32"


def test_frame_names_each_row():
    frame = pd.DataFrame(
        {
            "workload": ["softmax", "softmax"],
            "case_key": [case_key({"rows": 1}), case_key({"rows": 2})],
            "dtype": ["float32", "float32"],
            "compile": ["eager", "eager"],
        },
        index=[5, 7],
    )
    names = case_names(frame)
    assert list(names.index) == [5, 7]
    assert names.tolist() == ["softmax · rows=1 · fp32", "softmax · rows=2 · fp32"]
