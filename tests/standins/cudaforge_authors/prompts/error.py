"""Stand-in repair builder."""
from prompts.generate_custom_cuda import _load_gpu_spec


def build_error_prompt(*, old_code: str, error_log: str, problem=None, gpu_name=None) -> str:
    assert gpu_name in _load_gpu_spec()
    return f"STANDIN-REPAIR gpu={gpu_name} problem={problem!r}\nLOG:{error_log}\nOLD:{old_code}"
