"""The timed phase's end: the speedup, the roofline and the guards that read the times."""

from __future__ import annotations

import time

import torch

from cudaforge.eval.guards import runtime as guards
from cudaforge.eval.guards.policy import share_findings
from cudaforge.eval.verifier.state import TimingState


class Verdict(TimingState):
    """The verdict's part of ``Timing``."""

    def finish(self, times, crosscheck, share, spent, calls) -> None:
        from cudaforge.eval.precision import policy_name as precision_policy_name
        from cudaforge.eval.precision import speedups as precision_speedups
        from cudaforge.eval.timing import speedup, summarize
        from cudaforge.hardware.roofline import make_roofline
        from cudaforge.hardware.specs import peak_rates
        from cudaforge.tasks.cost import task_cost

        cfg, result, guard, p = self.cfg, self.result, self.guard, self.guard.policies
        clock = time.perf_counter()
        result.reference_timing = summarize(times["ref"])
        result.candidate_timing = summarize(times["cand"])
        result.speedup = speedup(
            times["ref"],
            times["cand"],
            cfg.baseline.value,
            paired=bool(cfg.interleave),
            statistic=cfg.speedup_statistic.value,
        )
        result.speedup.precision = precision_policy_name(cfg.tf32.value)
        if self.probe is not None:
            main, solo, allowed = self.probe
            try:
                result.precision["speedups"] = precision_speedups(result.speedup.median, main, solo, allowed)
            except ValueError as exc:
                result.precision["speedups_note"] = str(exc)[:200]
        peaks = peak_rates(torch.cuda.get_device_name(self.device))
        cost = task_cost(self.ref_module, seed=cfg.seed)
        result.fingerprint["roofline"] = make_roofline(
            cost, peaks, result.candidate_timing.median, "evaluator"
        ).to_dict()
        median = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
        result.fingerprint["host_ms_median"] = {
            "reference": median(times["ref_host"]),
            "candidate": median(times["cand_host"]),
            "candidate_verifier_wall": median(times["cand_wall"]),
        }
        found = []
        if crosscheck is not None:
            result.fingerprint["timing_crosscheck"] = {k: v for k, v in crosscheck.items() if k != "evidence"}
            if crosscheck.get("evidence"):
                found.append(p.found("timing_crosscheck", crosscheck["evidence"]))
        solo_ms = result.fingerprint.get("reference_solo_ms")
        if solo_ms:
            during = result.reference_timing.median
            excess = during - solo_ms
            if excess > p.threshold("reference_slowdown_tolerance") * solo_ms and excess > 0.005:
                found.append(
                    p.found(
                        "reference_slowdown",
                        (
                            f"the reference took {during:.4f} ms (median) while the candidate's process existed, against "
                            f"{solo_ms:.4f} ms measured before any candidate code was loaded: something of the candidate's kept the "
                            "GPU busy while the reference ran (work left queued, or other processes). Leave no work running "
                            "after forward returns."
                        ),
                    )
                )
        evidence = guards.hidden_work(  # the worker's own report, as the cross-check weighs it: not the raised times
            times["ref"],
            times["ref_host"],
            times.get("cand_reported") or times["cand"],
            times["cand_host"],
            p.threshold("hidden_work_ms"),
        )
        if evidence:
            found.append(p.found("hidden_work", evidence))
        l2 = int(getattr(torch.cuda.get_device_properties(self.device), "L2_cache_size", 0) or 0)
        evidence, numbers = guards.speed_of_light(
            cost, peaks, result.candidate_timing.median, p.threshold("speed_of_light_margin"), l2
        )
        result.fingerprint["speed_of_light"] = numbers
        if evidence:
            found.append(p.found("speed_of_light", evidence))
        if share is not None:
            result.fingerprint["kernel_share"] = share
            found += share_findings(share, p)
        spent["cost_and_guards"] = time.perf_counter() - clock
        spent.update(inputs=calls.seconds["inputs"], checks=calls.seconds["checks"])
        spent.update({f"trial_{k}": v for k, v in calls.detail.items()})
        result.fingerprint["timing_breakdown_s"] = {k: round(v, 4) for k, v in spent.items()}
        guard.add(found)
