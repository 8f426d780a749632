"""What one evaluation measured before its candidate, reused by the next evaluation of the same task
(``cudaforge.eval.known``): only well-formed, recent, complete figures measured through a GPU arena while the
evaluator ran nothing else, never an evaluation's own reuse passed on."""

from __future__ import annotations

import math
import time

from cudaforge.eval.known import BEFORE_MAX_AGE_S, kept_before, known_before


def measured(**changes):
    fingerprint = {
        "reference_solo_ms": 1.07,
        "timing_crosscheck_exchange_ms": 0.21,
        "timing_crosscheck_exchange_arena": "device",
        "measured_before_at": time.time() - 3.0,
        "other": 3,
    }
    fingerprint.update(changes)
    return {k: v for k, v in fingerprint.items() if v is not None}


def test_a_measured_evaluation_is_kept_and_reused_with_its_source_and_its_age_since_the_measurement():
    fingerprint = measured()
    kept = kept_before(fingerprint, "abc123")
    assert kept is not None and kept["values"] == {"reference_solo_ms": 1.07, "timing_crosscheck_exchange_ms": 0.21}
    assert kept["measured_at"] == fingerprint["measured_before_at"]  # when measured, not when the evaluation ended
    reused = known_before(kept, now=kept["measured_at"] + 12.0)
    assert reused == {"values": kept["values"], "age_s": 12.0, "from": "abc123"}


def test_reused_partial_or_host_memory_figures_are_not_passed_on():
    assert kept_before(measured(measured_before_reused={"from": "x"}), "y") is None
    assert kept_before(measured(reference_solo_ms=None), "y") is None  # the GPU was busy: nothing measured
    assert kept_before(measured(timing_crosscheck_exchange_ms=None), "y") is None  # the batch did not fit
    assert kept_before(measured(timing_crosscheck_exchange_arena="host"), "y") is None  # through host memory
    assert kept_before(measured(timing_crosscheck_exchange_arena=None), "y") is None
    assert kept_before(measured(measured_before_at=None), "y") is None
    assert kept_before(measured(reference_solo_ms=-1.0), "y") is None


def test_stale_or_malformed_figures_are_measured_again():
    now = time.time()
    values = {"reference_solo_ms": 1.0, "timing_crosscheck_exchange_ms": 0.1}
    good = {"values": values, "measured_at": now, "from": "abc"}
    assert known_before(good, now=now) is not None
    assert known_before(good, now=now + BEFORE_MAX_AGE_S + 1) is None  # too old
    assert known_before(good, now=now - 5) is None  # from the future
    for bad in (
        None,
        "x",
        {"values": "x", "measured_at": now},
        {"values": values},  # no time
        {"values": values, "measured_at": True},
        {"values": values, "measured_at": math.nan},
        {"values": {**values, "reference_solo_ms": 0.0}, "measured_at": now},
        {"values": {**values, "reference_solo_ms": math.inf}, "measured_at": now},
        {"values": {**values, "reference_solo_ms": math.nan}, "measured_at": now},
        {"values": {**values, "reference_solo_ms": True}, "measured_at": now},
        {"values": {**values, "reference_solo_ms": 10**400}, "measured_at": now},  # too large for a float
        {"values": {**values, "reference_solo_ms": 1e300}, "measured_at": now},  # no real figure is this large
        {"values": {**values, "timing_crosscheck_exchange_ms": -0.5}, "measured_at": now},
        {"values": {**values, "surprise": 1.0}, "measured_at": now},  # only the known figures
        {"values": {"reference_solo_ms": 1.0}, "measured_at": now},  # both or none
    ):
        assert known_before(bad, now=now) is None, bad
    odd = known_before({**good, "from": "not a hash!"}, now=now)
    assert odd is not None and odd["from"] is None


def test_the_evaluator_keeps_only_what_an_evaluation_measured_while_it_ran_nothing_else(tmp_path):
    from cudaforge.eval.evaluator import Evaluator

    evaluator = Evaluator({"device": "cpu", "build_cache_dir": str(tmp_path)})
    a = evaluator._begin_work()
    assert evaluator._end_work(a)  # alone
    a = evaluator._begin_work()
    b = evaluator._begin_work()  # overlaps a (another evaluation, on any GPU, or a build)
    assert not evaluator._end_work(a)
    c = evaluator._begin_work()  # starts while b still runs
    assert not evaluator._end_work(b)
    assert not evaluator._end_work(c)
    d = evaluator._begin_work()  # after all of them ended: alone again
    assert evaluator._end_work(d)
