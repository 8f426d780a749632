"""Device call 4 (2026-12-01): which Landlock restriction stops CUDA from starting (call 3: CUDA started only where
a rule on /dev/stdout, a pipe, made the whole ruleset fail, i.e. without Landlock)."""
import os
import subprocess
import sys
import tempfile

from cudaforge.sandbox import Sandbox, SandboxMode

CODE = "import torch; torch.ones(1, device='cuda'); print('CUDA OK')"
variants = {
    "default": {},
    "no_scopes": {"landlock_skip": ("scopes",)},
    "no_net": {"landlock_skip": ("net",)},
    "no_ioctl": {"landlock_skip": ("ioctl",)},
    "write_everywhere": {"write": ["/"]},
    "write_proc": {"write": ["/proc"]},
    "write_dev": {"write": ["/dev"]},
    "write_sys": {"write": ["/sys"]},
    "read_dev_dir": {"read_extra": ["/dev"]},
}
for name, kw in variants.items():
    scratch = tempfile.mkdtemp(prefix="cudaforge-probe-")
    extra = kw.pop("read_extra", [])
    sb = Sandbox(mode=SandboxMode.auto, scratch=scratch, **kw)
    sb.read = sb.read + extra
    p = sb.start([sys.executable, "-c", CODE], env={"PATH": os.environ["PATH"], "HOME": scratch},
                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    status = p.status()
    text = p.proc.communicate(timeout=120)[0].decode()
    p.kill()
    print(name, "CUDA OK" in text, status.get("landlock"), status.get("missing"), text.strip().splitlines()[-1][-160:],
          flush=True)
