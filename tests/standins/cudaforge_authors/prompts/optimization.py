"""Stand-in optimization builder: it reads the Judge's object by the keys the authors' builder reads, spelled as
their Judge prompt asks for them (with spaces)."""
from pathlib import Path

from prompts.generate_custom_cuda import _load_gpu_spec


def build_optimization_prompt(arch_path: Path, gpu_name=None, *, history_block: str = "", optimization_suggestion=None) -> str:
    assert gpu_name in _load_gpu_spec()
    s = optimization_suggestion if isinstance(optimization_suggestion, dict) else {}
    read = "|".join(str(s.get(k, "")) for k in ("bottleneck", "optimisation method", "modification plan"))
    return f"STANDIN-OPTIMIZE gpu={gpu_name} read={read} suggestion={optimization_suggestion!r}\nCODE:{Path(arch_path).read_text()}"
