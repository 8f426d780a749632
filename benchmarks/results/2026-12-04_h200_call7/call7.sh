#!/bin/bash
# device call 7 of 2026-12-04: Nsight Compute inside the new sandbox (the profiler's GPU tests, which ran out of time
# in call 5), and where a GPU worker's start-up spends its time before (5f6fefa, .dev/before) and after the wall.
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1
run() { local name=$1 limit=$2; shift 2; local s=$(date +%s); timeout $limit "$@" > $OUT/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s" >> $OUT/summary.txt; }
cat > /tmp/hello.py <<'PY'
import sys, time, tempfile
sys.path.insert(0, sys.argv[1])
from cudaforge.eval.remote import CandidateProcess
from cudaforge.sandbox import SandboxMode
rows = []
for i in range(3):
    t = time.perf_counter()
    p = CandidateProcess(device="cuda", mode=SandboxMode.auto, logs_dir=tempfile.mkdtemp())
    st = p.sandbox_status(60); t1 = time.perf_counter()
    hello = p.wait_hello(120); t2 = time.perf_counter()
    p.request({"op": "cuda"}, timeout_s=120); t3 = time.perf_counter()
    rows.append({"status_s": round(t1 - t, 3), "hello_s": round(t2 - t, 3), "cuda_s": round(t3 - t2, 3),
                 "prepare_s": hello.get("prepare_s")})
    p.close()
print(sys.argv[1], rows, st.get("uid"), st.get("rootfs"), st.get("memory_max"), st.get("cgroups"))
PY
for root in $PWD/.dev/before $PWD $PWD/.dev/before $PWD; do PYTHONPATH=$root run hello 60 python3 /tmp/hello.py $root; cat $OUT/hello.log >> $OUT/hello_all.log; done
PYTHONPATH=$PWD run profile 280 python3 -m pytest -q -rA -p no:cacheprovider -m gpu tests/test_profile.py
cat $OUT/summary.txt; cat $OUT/hello_all.log; grep -E "^(PASSED|FAILED|ERROR)|passed|failed" $OUT/profile.log | tail -n 12
