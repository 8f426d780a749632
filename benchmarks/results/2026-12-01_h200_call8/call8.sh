#!/bin/bash
# device call 8 (2026-12-01, second session; the session's last device minutes), after call 7:
#  1. why the timing cross-check let hack_native_timer and hack_hidden_stream_crosscheck through: both hacks and
#     the honest triton_gelu on the same task, with the cross-check's numbers, notes and timing breakdown
#  2. the whole threat corpus on CUDA alone on the GPU (call 7's run beside the other lane did not finish), with
#     each entry's verdict and seconds as it ends
#  3. eval_bench overhead, with what time is left
G=/tmp/g; mkdir -p $G; export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
(while sleep 30; do tar czf $OUT/call8.tgz -C $G . 2>/dev/null; done) & TAR=$!
timeout 140 python3 - > $G/diag.log 2>&1 <<'PY'
import json, time
from cudaforge.eval.evaluator import Evaluator
from cudaforge.eval.guards.corpus import find_entry_task, load_corpus
from cudaforge.tasks import find_task, selection
entries = {e.name: e for e in load_corpus()}
jobs = [(n, find_entry_task(entries[n]), entries[n].source, entries[n].config)
        for n in ("hack_native_timer", "hack_hidden_stream_crosscheck")]
jobs.append(("triton_gelu", find_task(selection("main"), "level1/1_GELU"), open("benchmarks/candidates/triton_gelu.py").read(), {}))
for name, task, source, config in jobs:
    t = time.monotonic()
    r = Evaluator({"timing_trials": 30, "warmup": 5, "build_cache_dir": "/tmp/diag-build", **config}).evaluate(task, source)
    print(f"== {name}: {r.status.value} in {time.monotonic() - t:.1f} s")
    print(r.report()[-1500:])
    print(json.dumps({k: r.fingerprint.get(k) for k in ("timing_crosscheck", "guard_notes", "timing_breakdown_s",
                      "host_ms_median", "reference_solo_ms", "sandbox_summary", "worker_setup_s")}, indent=1, default=str))
    print([(f["guard"], f["verdict"]) for f in r.guard_findings], flush=True)
PY
echo "exit $? at $SECONDS s" >> $G/diag.log
CUDAFORGE_TEST_LOG=$G/threats_outcomes.log timeout 200 python3 -m pytest -s -m gpu -v -rA -p no:cacheprovider \
  "tests/test_sandbox.py::test_the_whole_threat_corpus_on_a_gpu" > $G/threats.log 2>&1
echo "exit $? at $SECONDS s" >> $G/threats.log
timeout $((455 - SECONDS)) python3 benchmarks/eval_bench.py --out $G/evalbench --cache /tmp/eb --parts overhead --tag sandbox > $G/evalbench.log 2>&1
echo "exit $? at $SECONDS s" >> $G/evalbench.log
kill $TAR; tar czf $OUT/call8.tgz -C $G .
