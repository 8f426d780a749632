"""What one evaluation measured before its candidate, reused by the next evaluation of the same task
(``cudaforge.eval.known``): only well-formed, recent figures, never an evaluation's own reuse passed on."""

from __future__ import annotations

import math
import time

from cudaforge.eval.known import BEFORE_MAX_AGE_S, kept_before, known_before


def test_a_measured_evaluation_is_kept_and_reused_with_its_source_and_age():
    fingerprint = {"reference_solo_ms": 1.07, "timing_crosscheck_exchange_ms": 0.21, "other": 3}
    kept = kept_before(fingerprint, "abc123")
    assert kept is not None and kept["values"] == {"reference_solo_ms": 1.07, "timing_crosscheck_exchange_ms": 0.21}
    reused = known_before(kept, now=kept["measured_at"] + 12.0)
    assert reused == {"values": kept["values"], "age_s": 12.0, "from": "abc123"}
    # without the exchange's figure (not measured when the GPU's memory could not hold it): reused without it
    kept = kept_before({"reference_solo_ms": 2.0}, "def")
    assert kept is not None and known_before(kept)["values"] == {"reference_solo_ms": 2.0}


def test_reused_or_missing_figures_are_not_passed_on():
    assert kept_before({"reference_solo_ms": 1.0, "measured_before_reused": {"from": "x"}}, "y") is None
    assert kept_before({"timing_crosscheck_exchange_ms": 0.1}, "y") is None  # the GPU was busy: nothing measured
    assert kept_before({"reference_solo_ms": -1.0}, "y") is None


def test_stale_or_malformed_figures_are_measured_again():
    now = time.time()
    good = {"values": {"reference_solo_ms": 1.0}, "measured_at": now, "from": "abc"}
    assert known_before(good, now=now) is not None
    assert known_before(good, now=now + BEFORE_MAX_AGE_S + 1) is None  # too old
    assert known_before(good, now=now - 5) is None  # from the future
    for bad in (
        None,
        "x",
        {"values": "x", "measured_at": now},
        {"values": {"reference_solo_ms": 1.0}},  # no time
        {"values": {"reference_solo_ms": 0.0}, "measured_at": now},
        {"values": {"reference_solo_ms": math.inf}, "measured_at": now},
        {"values": {"reference_solo_ms": True}, "measured_at": now},
        {"values": {"reference_solo_ms": 1.0, "timing_crosscheck_exchange_ms": -0.5}, "measured_at": now},
        {"values": {"reference_solo_ms": 1.0, "surprise": 1.0}, "measured_at": now},  # only the known figures
        {"values": {"timing_crosscheck_exchange_ms": 0.5}, "measured_at": now},
    ):
        assert known_before(bad, now=now) is None, bad
    odd = known_before({**good, "from": "not a hash!"}, now=now)
    assert odd is not None and odd["from"] is None


def test_the_evaluator_keeps_only_what_an_evaluation_measured_alone_on_its_gpu(tmp_path):
    from cudaforge.eval.evaluator import Evaluator

    evaluator = Evaluator({"device": "cpu", "build_cache_dir": str(tmp_path)})
    a = evaluator._enter_gpu("0")
    assert evaluator._leave_gpu("0", a)  # alone
    a = evaluator._enter_gpu("0")
    b = evaluator._enter_gpu("0")  # overlaps a
    c = evaluator._enter_gpu("1")  # another GPU: alone
    assert not evaluator._leave_gpu("0", a)
    d = evaluator._enter_gpu("0")  # starts while b still runs
    assert not evaluator._leave_gpu("0", b)
    assert not evaluator._leave_gpu("0", d)
    assert evaluator._leave_gpu("1", c)
    e = evaluator._enter_gpu("0")  # after all of them ended: alone again
    assert evaluator._leave_gpu("0", e)
