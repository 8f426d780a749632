#!/bin/bash
# one-off device call (not committed): throughput on both GPUs, then two lanes
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit 1
export LITELLM_LOCAL_MODEL_COST_MAP=True WANDB_MODE=disabled PYTHONUNBUFFERED=1 CUDAFORGE_PCH_DIR=/tmp/pch
G=/tmp/gc; mkdir -p $G/a $G/b
T="tar czf $OUT/gc.tgz --exclude=*.so --exclude=*.gch --exclude=*.o -C $G ."
(while sleep 30; do eval "$T" 2>/dev/null; done) & L=$!
PY=python3
CUDA_VISIBLE_DEVICES=0,1 timeout 230 $PY benchmarks/eval_bench.py --out $G/eb --parts throughput > $G/eb_throughput.log 2>&1
echo "throughput done at $SECONDS s" >> $G/times.txt
( export CUDA_VISIBLE_DEVICES=0
  timeout $((465 - SECONDS)) $PY benchmarks/eval_bench.py --out $G/eb --parts precision,overhead > $G/a/eb_precision_overhead.log 2>&1
  echo "a: eb done at $SECONDS s" >> $G/times.txt
  timeout $((465 - SECONDS)) $PY scripts/record_ncu_fixtures.py --out $G/a/ncu_main --gpu 0 --only triton_softmax_main > $G/a/ncu_main.log 2>&1
  echo "a: ncu done at $SECONDS s" >> $G/times.txt
  timeout $((465 - SECONDS)) $PY -m cudaforge.cli tasks audit suite=main 'suite.levels=[2]' 'suite.problem_ids=[3,4,5,6,7,8,9,10]' audit.min_reference_ms=0.5 > $G/a/audit_level2.log 2>&1
  echo "a: audit done at $SECONDS s" >> $G/times.txt ) &
A=$!
( export CUDA_VISIBLE_DEVICES=1
  timeout $((465 - SECONDS)) $PY -m cudaforge.cli run -m experiment=demo_strategies hydra.sweep.dir=$G/b/multirun > $G/b/multirun.log 2>&1
  echo "b: multirun done at $SECONDS s" >> $G/times.txt
  timeout $((465 - SECONDS)) $PY -m cudaforge.cli tasks audit suite=main 'suite.levels=[3]' audit.min_reference_ms=0.5 > $G/b/audit_level3.log 2>&1
  echo "b: audit done at $SECONDS s" >> $G/times.txt ) &
B=$!
wait $A $B
kill $L; eval "$T"; cat $G/times.txt; tail -3 $G/eb_throughput.log $G/a/*.log $G/b/*.log | cut -c1-300
