"""Device call 4b (2026-12-01): which part of /proc CUDA writes to (call 4: CUDA starts once /proc is writable)."""
import os
import subprocess
import sys
import tempfile

from cudaforge.sandbox import Sandbox, SandboxMode

CODE = ("import torch, os; torch.ones(1, device='cuda'); print('CUDA OK');"
        "print(sorted(os.listdir('/proc/driver/nvidia')) if os.path.isdir('/proc/driver/nvidia') else 'no driver dir')")
for name, write in {"proc_self": ["/proc/self"], "proc_driver": ["/proc/driver"], "proc_sys": ["/proc/sys"],
                    "proc_self_and_driver": ["/proc/self", "/proc/driver"]}.items():
    scratch = tempfile.mkdtemp(prefix="cudaforge-probe-")
    sb = Sandbox(mode=SandboxMode.auto, scratch=scratch, write=write)
    p = sb.start([sys.executable, "-c", CODE], env={"PATH": os.environ["PATH"], "HOME": scratch},
                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    text = p.proc.communicate(timeout=120)[0].decode()
    p.kill()
    print(name, "CUDA OK" in text, text.strip().splitlines()[-1][-200:], flush=True)
