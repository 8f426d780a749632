"""Stand-in optimization builder."""
from pathlib import Path

from prompts.generate_custom_cuda import _load_gpu_spec


def build_optimization_prompt(arch_path: Path, gpu_name=None, *, history_block: str = "", optimization_suggestion=None) -> str:
    assert gpu_name in _load_gpu_spec()
    return f"STANDIN-OPTIMIZE gpu={gpu_name} suggestion={optimization_suggestion!r}\nCODE:{Path(arch_path).read_text()}"
