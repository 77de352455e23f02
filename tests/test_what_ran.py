"""What changed in what ran (db.review.what_ran.kernels): known breakdowns on two sides, the path change named in words
(graph → kernel, a CPU fallback, copies, another set of aten ops or kernels) and the entries that moved most, in µs
per op call."""

import pytest

from db.review.what_ran.kernels import what_ran

MPS = "MPSProfiler (PYTORCH_MPS_LOG_PROFILE_INFO=8)"


def _e(name, kind, time, calls=1.0, **kw):
    return {"name": name, "kind": kind, "calls_per_call": calls, "device_time_us": time, "share": 0.0, **kw}


def _b(*entries, profiler="torch.profiler", status="ok", metric="op_time"):
    return {"status": status, "metric": metric, "profiler": profiler, "entries": list(entries)}


GRAPH = _b(_e("softmax_mps_out:f32[1,128256]", "graph", 57.4), profiler=MPS)
KERNEL = _b(_e("softmax_float:MPS:Float[1, 128256]", "kernel", 7.1), profiler=MPS)


def test_graph_to_kernel_is_a_path_change_in_the_first_line():
    found = what_ran([GRAPH, GRAPH], [KERNEL], "softmax")
    assert found.compared and found.path_changed
    assert found.headline() == "path changed: softmax ran as a Metal kernel instead of an MPSGraph graph"
    assert found.line() == found.headline()
    assert (found.baseline_us, found.candidate_us) == (57.4, 7.1)
    # the graph is gone (−57.4 µs), the kernel is new (+7.1 µs): largest change first
    assert [m.words() for m in found.moved] == [
        "softmax_mps_out:f32[1,128256]: gone (was 57.4 µs per op call)",
        "softmax_float:MPS:Float[1, 128256]: new, 7.1 µs per op call",
    ]
    assert found.moved[0].change_us == pytest.approx(-57.4)


def test_a_new_cpu_fallback_and_the_copies_it_brings():
    base = _b(_e("add_out_mps", "graph", 30.0), _e("CPU to MPS", "copy", 0.1, calls=1 / 23), profiler=MPS)
    cand = _b(
        _e("add_out_mps", "graph", 30.0),
        _e("aten::_linalg_eigh", "cpu_fallback", 408.0, bytes_per_call=32768.0),
        _e("MPS to CPU", "copy", 5.0),
        _e("CPU to MPS", "copy", 6.0, calls=24 / 23),
        profiler=MPS,
    )
    found = what_ran([base], [cand], "eigh")
    assert found.changes == (
        "a new CPU fallback: aten::_linalg_eigh",
        "copies added: CPU to MPS 0.0435 → 1.04 per op call",
        "copies added: MPS to CPU 0 → 1 per op call",
    )
    assert found.moved[0].name == "aten::_linalg_eigh" and found.moved[0].change_us == 408.0
    back = what_ran([cand], [base], "eigh")
    assert back.changes[0] == "no CPU fallback any more: aten::_linalg_eigh"
    assert "copies removed: MPS to CPU 1 → 0 per op call" in back.changes


def test_softmax_rerouted_through_other_aten_ops_is_named():
    base = _b(_e("aten::_softmax", "aten_op", 180.0), _e("aten::softmax", "aten_op", 2.0))
    cand = _b(
        _e("aten::_log_softmax", "aten_op", 190.0),
        _e("aten::exp", "aten_op", 90.0),
        _e("aten::log_softmax", "aten_op", 2.0),
    )
    found = what_ran([base], [cand], "softmax")
    assert found.headline() == (
        "path changed: softmax ran aten::_log_softmax, aten::exp, aten::log_softmax instead of aten::_softmax, "
        "aten::softmax"
    )
    assert (found.baseline_us, found.candidate_us) == (182.0, 282.0)
    assert [m.name for m in found.moved] == ["aten::_log_softmax", "aten::_softmax", "aten::exp"]


def test_same_path_names_what_moved_most():
    base = [_b(_e("aten::_softmax", "aten_op", t), _e("aten::softmax", "aten_op", 2.0)) for t in (100.0, 104.0, 98.0)]
    cand = [_b(_e("aten::_softmax", "aten_op", 150.0), _e("aten::softmax", "aten_op", 2.0))]
    found = what_ran(base, cand, "softmax")
    assert not found.path_changed and found.headline() is None
    # the baseline's median over its three runs: 100 µs
    assert found.line() == "same path; moved most: aten::_softmax: 100 → 150 µs per op call (+50 µs, 1.50×)"
    assert found.to_json()["moved"][0] == {
        "kind": "aten_op",
        "name": "aten::_softmax",
        "baseline_us": 100.0,
        "candidate_us": 150.0,
        "change_us": 50.0,
        "unit": "µs",
    }


def test_an_entry_seen_in_one_run_of_three_or_in_the_odd_call_is_not_a_path():
    plain = _b(_e("aten::_softmax", "aten_op", 100.0))
    odd = _b(_e("aten::_softmax", "aten_op", 100.0), _e("aten::empty", "aten_op", 1.0))
    rare = _b(_e("aten::_softmax", "aten_op", 100.0), _e("aten::copy_", "aten_op", 0.1, calls=0.05))
    assert not what_ran([plain], [plain, odd, plain], "softmax").path_changed  # median calls of aten::empty: 0
    assert not what_ran([plain], [rare], "softmax").path_changed  # 0.05 per op call


def test_cuda_kernels_renamed_and_moves_counted_once():
    base = _b(_e("aten::_softmax", "aten_op", 60.0), _e("softmax_warp_forward<float>", "device_kernel", 60.0))
    cand = _b(_e("aten::_softmax", "aten_op", 40.0), _e("cunn_SoftMaxForward<float>", "device_kernel", 40.0))
    found = what_ran([base], [cand], "softmax")
    assert found.changes == ("softmax ran kernels cunn_SoftMaxForward<float> instead of softmax_warp_forward<float>",)
    # the aten op groups the same device time: moves are the device kernels' only
    assert {m.kind.value for m in found.moved} == {"device_kernel"} and (found.baseline_us, found.candidate_us) == (
        60.0,
        40.0,
    )


def test_not_compared_without_a_breakdown_on_a_side_or_with_different_profilers():
    failed = {"status": "error", "metric": "op_time", "profiler": MPS, "message": "crashed", "entries": []}
    found = what_ran([GRAPH], [failed], "softmax")
    assert not found.compared and found.headline() is None
    assert found.line() == (
        "what ran: not compared: the candidate has no kernels breakdown of this case (its runs were made without "
        "--kernels, or the kernel pass failed there)"
    )
    other = what_ran([GRAPH], [_b(_e("aten::_softmax", "aten_op", 100.0))], "softmax")
    assert not other.compared and "profiled differently" in other.reason
