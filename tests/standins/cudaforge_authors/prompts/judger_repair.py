"""Stand-in correction-judge builder."""
from pathlib import Path


def build_correctness_prompts(*, error_log: str, arch_path: Path, cuda_code: str):
    return ("STANDIN-JUDGE-SYSTEM repair",
            f"STANDIN-JUDGE-REPAIR\nLOG:{error_log}\nREF:{Path(arch_path).read_text().strip()}\nCUDA:{cuda_code}\n"
            'Answer with JSON: {"critical_issue": ..., "why_it_matters": ..., "minimal_fix_hint": ...}')
