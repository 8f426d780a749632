"""Stand-in seed builder (same names and signature as the authors')."""
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HW_FILE = ROOT / "prompts/hardware/gpu_specs.py"
FEWSHOT_BASE = ROOT / "prompts/few_shot/model_ex_add.py"

default_system_prompt = "STANDIN-SYSTEM coder"


def _load_gpu_spec() -> dict:
    spec = importlib.util.spec_from_file_location("gpu_specs", HW_FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_specs"] = module
    spec.loader.exec_module(module)
    return module.GPU_SPEC_INFO


def build_seed_prompt(arch_path: Path, gpu_name: str | None = None) -> str:
    info = _load_gpu_spec()[gpu_name]
    return (f"STANDIN-SEED gpu={gpu_name} arch={info['GPU Architecture']} few={FEWSHOT_BASE.read_text().strip()}\n"
            f"{Path(arch_path).read_text().strip()}")
