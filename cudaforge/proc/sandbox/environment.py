"""The environment a sandboxed program sees (:func:`sandbox_env`): an allow-list of names and prefixes, less
anything that looks like a credential (:data:`SECRET_NAMES`, which ``cudaforge.proc.isolation.scrubbed_env`` uses
too). Stdlib only, like the rest of ``cudaforge.proc.sandbox``."""

from __future__ import annotations

import re

ENV_NAMES = {
    "PATH",
    "HOME",
    "TMPDIR",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "LD_LIBRARY_PATH",
    "PYTHONPATH",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONSAFEPATH",
    "PYTHONHASHSEED",
    "PYTHONIOENCODING",
    "PYTHONWARNINGS",
    "CC",
    "CXX",
    "CUDAHOSTCXX",
    "MAX_JOBS",
    "CUDAFORGE_WORKER_DEVICE",
    "CUDAFORGE_GPU_VENDOR",
}
"""Environment variables a sandboxed program keeps by name (everything else is dropped: the evaluator's own settings,
``CUDAFORGE_STANDBY_EVAL`` with every guard's policy and threshold, among them)."""
ENV_PREFIXES = (
    "LC_",
    "CUDA_",
    "NVIDIA_",
    "TRITON_",
    "TORCH_",
    "TORCHINDUCTOR_",
    "PYTORCH_",
    "CUBLAS_",
    "CUDNN_",
    "XDG_",
    "TILELANG_",
    "CUTE_",
    "CUTLASS_",
    "CUPY_",
    "OMP_",
    "MKL_",
    "KMP_",
)
"""... and by prefix: the toolchains', the GPU's, the kernel languages' and torch's own settings."""
_SANDBOX_SECRET_NAMES = re.compile(
    r"PASS|PWD|AUTH|DSN|COOKIE|WEBHOOK|KEY|SECRET|TOKEN|CREDENTIAL|PRIVATE", re.IGNORECASE
)
"""Words that make a name a credential's in the sandbox's eyes, wherever they stand in it."""
_CREDENTIAL_VALUE = re.compile(r"://[^/\s@]*@|://[^/\s:]+:[^/\s@]+@")
"""A URL that carries a user or a password (``redis://:pw@host``, ``https://u:p@proxy``)."""


SECRET_NAMES = re.compile(
    r"(API_?KEY|_TOKEN$|^TOKEN$|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|SESSION_KEY|PRIVATE_KEY|_KEY$|^AWS_|^AZURE_|"
    r"^GOOGLE_|^WANDB_|^GH_|^GITHUB_|^SSH_AUTH_SOCK$|^NETRC$|^HF_TOKEN|^HUGGING_FACE_HUB_TOKEN|^OPENAI_|"
    r"^ANTHROPIC_|^GEMINI_|^MISTRAL_|^GROQ_|^TOGETHER_|^DEEPSEEK_|^OPENROUTER_|^LITELLM_)",
    re.IGNORECASE,
)
"""Names of environment variables that look like credentials (``cudaforge.proc.isolation.scrubbed_env`` drops them for
every child that runs candidate or task code; the sandbox drops them from what its allow-list keeps)."""


def sandbox_env(env: dict[str, str]) -> dict[str, str]:
    """What of ``env`` a sandboxed program may see: an allow-list of names and prefixes (:data:`ENV_NAMES`,
    :data:`ENV_PREFIXES`), minus anything that still looks like a credential (a name with a word of one in it, a
    URL with a user or password in its value). A database URL, a proxy with a password or a webhook under a name no
    deny-list knows never reaches the candidate."""
    return {
        k: v
        for k, v in env.items()
        if (k in ENV_NAMES or k.startswith(ENV_PREFIXES))
        and not SECRET_NAMES.search(k)
        and not _SANDBOX_SECRET_NAMES.search(k)
        and not _CREDENTIAL_VALUE.search(v)
    }
