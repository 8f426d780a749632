"""Stand-in optimization-judge builder."""
from pathlib import Path


def build_judger_optimization_prompts(*, arch_path: Path, gpu_name: str, ncu_metrics_block: str, cuda_code: str = ""):
    return ("STANDIN-JUDGE-SYSTEM optimization",
            f"STANDIN-JUDGE-OPT gpu={gpu_name}\nMETRICS:{ncu_metrics_block}\nREF:{Path(arch_path).read_text().strip()}\n"
            f"CUDA:{cuda_code}")
