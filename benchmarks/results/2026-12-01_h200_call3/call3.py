"""Device call 3 (2026-12-01): which device node CUDA needs beyond /dev/nvidia* (call 2: CUDA starts in the sandbox
only when every node of /dev may be opened), and what nvcc needs in the compiler's sandbox."""
import os
import subprocess
import sys
import tempfile

import torch

from cudaforge.sandbox import Sandbox, SandboxMode, default_device_paths, default_read_paths

print(subprocess.run("ls -la /dev /dev/char 2>&1 | head -80", shell=True, capture_output=True, text=True).stdout)
CODE = "import torch; torch.ones(1, device='cuda'); print('CUDA OK')"
base = default_device_paths()
nodes = sorted({os.path.join('/dev', n) for n in os.listdir('/dev') if not os.path.isdir(os.path.join('/dev', n))} - set(base))
print("default devices:", base)


def attempt(argv, **kw):
    scratch = tempfile.mkdtemp(prefix="cudaforge-probe-")
    sb = Sandbox(mode=SandboxMode.auto, scratch=scratch, **kw)
    p = sb.start(argv, env={"PATH": os.environ["PATH"], "HOME": scratch, "TMPDIR": scratch}, stdout=subprocess.PIPE,
                 stderr=subprocess.STDOUT)
    text = p.proc.communicate(timeout=120)[0].decode()
    p.kill()
    return text


for node in nodes:
    text = attempt([sys.executable, "-c", CODE], devices=base + [node])
    print("with", node, "->", "CUDA OK" in text, flush=True)
# nvcc
work = tempfile.mkdtemp(prefix="cudaforge-nvcc-")
open(os.path.join(work, "k.cu"), "w").write("__global__ void k(float* x) { x[0] = 1; }\n")
nvcc = subprocess.run("which nvcc", shell=True, capture_output=True, text=True).stdout.strip()
print("nvcc at", nvcc, os.path.realpath(nvcc))
cmd = [nvcc, "-v", "-c", os.path.join(work, "k.cu"), "-o", os.path.join(work, "k.o")]
for name, kw in {"build_default": {}, "read_all": {"read": ["/"]}, "tmp_write": {"write": ["/tmp"]},
                 "all_devices": {"devices": base + nodes}}.items():
    kw.setdefault("read", default_read_paths())
    text = attempt(cmd, uid=None, devices=kw.pop("devices", ["/dev/null", "/dev/zero", "/dev/urandom"]), **kw)
    print(name, "->", "fatal" not in text, "\n", text[-1500:] if name == "build_default" else text[-200:], flush=True)
