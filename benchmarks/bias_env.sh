#!/bin/sh
# Host facts for the bias probe (issue 16): CPU topology, NUMA, THP, oneDNN choice per process.
echo "== lscpu"; lscpu 2>/dev/null | grep -E -i "model name|^cpu\(s\)|thread|core|socket|numa|cache|flags" | cut -c1-200
echo "== nodes"; ls /sys/devices/system/node 2>/dev/null | grep node
echo "== thp"; cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null
echo "== affinity"; ${PY:-python3} -c "import os; print(sorted(os.sched_getaffinity(0)))"
echo "== smt siblings"; cat /sys/devices/system/cpu/cpu*/topology/thread_siblings_list 2>/dev/null | sort -u | tr '\n' ' '; echo
echo "== onednn conv choice per fresh process"
for i in 1 2 3 4; do
  ONEDNN_VERBOSE=1 ${PY:-python3} -c "
import torch
c=torch.nn.Conv2d(64,64,3,padding=1,bias=False); x=torch.randn(4,64,56,56)
with torch.no_grad():
    for _ in range(3): c(x)
" 2>&1 | awk -F, '$4=="exec"{print $6, $7, $10}' | sort | uniq -c | head -4
done
