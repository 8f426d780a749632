"""Device call 2 (2026-12-01): which protection stops CUDA inside the sandbox (call 1: cudaGetDeviceCount error 304
under the default sandbox), and whether nvcc runs in the compiler's sandbox. Each variant starts a sandboxed Python
that creates a CUDA context."""
import json
import os
import subprocess
import sys
import tempfile

from cudaforge.sandbox import Sandbox, SandboxMode, default_device_paths

CODE = "import os, torch; x = torch.ones(4, device='cuda'); print('CUDA OK', os.getuid(), float(x.sum()))"
everything = sorted(set(default_device_paths()) | {os.path.join('/dev', n) for n in os.listdir('/dev')
                                                  if not os.path.isdir(os.path.join('/dev', n))})
variants = {
    "default": {},
    "big_files": {"file_bytes": 1 << 50},
    "no_namespaces": {"namespaces": False},
    "root_uid": {"uid": None},
    "read_all": {"read": ["/"]},
    "all_devices": {"devices": everything},
    "dev_shm": {"write": ["/dev/shm", "/tmp"]},
    "no_rlimits": {"file_bytes": 1 << 50, "open_files": 1 << 20, "cpu_seconds": 1 << 30, "processes": 1 << 20},
    "everything_open": {"file_bytes": 1 << 50, "namespaces": False, "uid": None, "read": ["/"], "devices": everything,
                        "write": ["/dev/shm", "/tmp"]},
}
out = {}
for name, kw in variants.items():
    scratch = tempfile.mkdtemp(prefix="cudaforge-probe-")
    sb = Sandbox(mode=SandboxMode.auto, scratch=scratch, **kw)
    p = sb.start([sys.executable, "-c", CODE], env={"PATH": os.environ["PATH"], "HOME": scratch}, stdout=subprocess.PIPE,
                 stderr=subprocess.STDOUT)
    status = p.status()
    text = p.proc.communicate(timeout=120)[0].decode()
    p.kill()
    out[name] = {"ok": "CUDA OK" in text, "tail": text[-400:], "uid": status.get("uid"), "missing": status.get("missing")}
    print(name, out[name]["ok"], text.strip().splitlines()[-1][:300] if text.strip() else "", flush=True)
# nvcc under the compiler's sandbox
from cudaforge.eval.build import serve_build, BuildSettings
src = open("benchmarks/candidates/cuda_relu.py").read()
import re
cuda = re.search(r'cuda_source\w* = (r?"""[\s\S]*?""")', src)
print("build probe:")
from cudaforge.eval.evaluator import Evaluator
ev = Evaluator({"build_cache_dir": "/tmp/bcprobe"})
o = ev.precompile(src)
print(o.status, o.message[:300], o.log_trimmed[:1500])
json.dump(out, open(os.path.join(os.environ.get("OUT", "/tmp"), "call2.json"), "w"), indent=1)
