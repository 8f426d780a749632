"""The CudaForge authors' own prompts, read at run time from the user's checkout of their repository.

``agents=cudaforge_authors agents.authors_root=PATH`` (PATH: a clone of github.com/OptimAI-Lab/CudaForge) makes every
Coder and Judge prompt the string the authors' prompt builders return, called as their ``main.py`` calls them:

=====================  ==========================================================================================
step                   the authors' builder (module under ``prompts/`` of their checkout)
=====================  ==========================================================================================
Coder, system          ``generate_custom_cuda.default_system_prompt``
Coder, first attempt   ``generate_custom_cuda.build_seed_prompt(arch_path=<the task's file>, gpu_name=...)``
Coder, repair          ``error.build_error_prompt(old_code=, error_log=, problem=<the Judge's JSON>, gpu_name=)``
Coder, optimize        ``optimization.build_optimization_prompt(arch_path=<the kernel's file>, gpu_name=,
                       optimization_suggestion=<the Judge's JSON>)``
Judge, correction      ``judger_repair.build_correctness_prompts(error_log=, arch_path=, cuda_code=)``
Judge, optimization    ``judger_optimization.build_judger_optimization_prompts(arch_path=, gpu_name=,
                       ncu_metrics_block=<the metrics as JSON keyed by kernel>, cuda_code=)``
=====================  ==========================================================================================

Their few-shot example and GPU sheet (``prompts/few_shot/``, ``prompts/hardware/gpu_specs.py``) are read by those
builders from their own files. Nothing of theirs is copied into this repository: without a checkout the paraphrase
``agents=cudaforge_paper`` stays. Follow-ups after an unusable reply use the paraphrase's follow-up templates (the
authors' run has none: ``strategy.max_follow_ups=0`` matches it). The metrics block is ours, in the format of their
``run_ncu.metrics_to_prompt`` (JSON keyed by kernel name, 3 decimals), which needs pandas.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cudaforge.agents.records import Backend, JudgeMode
from cudaforge.agents.templates import PromptLibrary, PromptTemplateError, TemplateSet, to_json

BUILDERS = {
    "generate_custom_cuda": ("build_seed_prompt", "default_system_prompt"),
    "error": ("build_error_prompt",),
    "optimization": ("build_optimization_prompt",),
    "judger_repair": ("build_correctness_prompts",),
    "judger_optimization": ("build_judger_optimization_prompts",),
}
"""The modules under ``prompts/`` of the authors' checkout, and what each must define."""

FILES = ("prompts/hardware/gpu_specs.py", "prompts/few_shot/model_ex_add.py", "prompts/few_shot/model_new_ex_add.py")
"""Files the builders read from their checkout."""

PAPER_ERA_COMMIT = "fd5263487029718725013c485da625bc3ae4fbaa"
"""The authors' commit of 2025-10-31 ("Add files via upload": the paper's PDF), the last before arXiv v1 whose
prompts are the code's first: their seed prompt there shows the task alone. From 2025-12-01 (``ebc6c25``) it adds a
GPU sheet and a second task block, so a checkout at their head sends other prompts than the paper's run did."""
PAPER_ERA_DIGEST = "60d6240352934de8"
"""``content_digest`` of the prompt files at ``PAPER_ERA_COMMIT`` (for a checkout with no ``.git``)."""


def content_digest(root: Path) -> str:
    """A digest of the files the builders are and read (sha256, 16 hex digits): what a checkout without git is."""
    import hashlib

    total = hashlib.sha256()
    for name in [f"prompts/{m}.py" for m in BUILDERS] + list(FILES):
        data = (root / name).read_bytes() if (root / name).is_file() else b""
        total.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return total.hexdigest()[:16]


def authors_template_set(paper: TemplateSet) -> TemplateSet:
    """The ``cudaforge_authors`` template set: the paraphrase's JSON keys and backends (the authors' Judge prompts ask
    for the same keys), the authors' builders for every prompt."""
    return TemplateSet(
        "cudaforge_authors", paper.folder, paper.correction_keys, paper.optimization_keys, (Backend.cuda,)
    )


class AuthorsPrompts:
    """A prompt library whose Coder and Judge prompts come from the authors' builders (``render`` by template name,
    as ``PromptLibrary.render``); follow-ups and anything else come from the ``cudaforge_paper`` library."""

    def __init__(self, root: str | Path | None, gpu_name: str | None) -> None:
        """``root``: the checkout; ``gpu_name``: a key of their ``GPU_SPEC_INFO``. Raises ``PromptTemplateError``
        naming what is missing: the folder, a builder, a file the builders read, or the GPU's key."""
        if not root:
            raise PromptTemplateError(
                "agents=cudaforge_authors reads the authors' prompts from your checkout of "
                "github.com/OptimAI-Lab/CudaForge: set agents.authors_root=PATH (or "
                "CUDAFORGE_AUTHORS_ROOT); without one, agents=cudaforge_paper is our paraphrase"
            )
        self.root = Path(str(root)).expanduser().resolve()
        missing = [f"prompts/{m}.py" for m in BUILDERS if not (self.root / "prompts" / f"{m}.py").is_file()]
        missing += [f for f in FILES if not (self.root / f).is_file()]
        if missing:
            raise PromptTemplateError(
                f"agents.authors_root={root}: not a checkout of the CudaForge authors' repository "
                f"(missing {', '.join(missing)})"
            )
        self.modules = self._import()
        specs = self.modules["generate_custom_cuda"]._load_gpu_spec()
        if not gpu_name or gpu_name not in specs:
            what = f"the GPU {gpu_name!r} is not" if gpu_name else "no GPU is named and none is"
            raise PromptTemplateError(
                f"{what} a key of the authors' GPU sheet ({self.root}/prompts/hardware/gpu_specs.py"
                f": {', '.join(map(str, specs))}); set agents.authors_gpu=KEY, the GPU their "
                "prompts should describe"
            )
        self.gpu_name = gpu_name
        self.paper = PromptLibrary(template_set="cudaforge_paper")
        self.template_set = authors_template_set(self.paper.template_set)
        self.scratch = Path(tempfile.mkdtemp(prefix="cudaforge_authors_"))
        self.commit = _commit(self.root)
        self.digest = content_digest(self.root)
        self.paper_era = self.commit == PAPER_ERA_COMMIT if self.commit else self.digest == PAPER_ERA_DIGEST
        self.warning = (
            ""
            if self.paper_era
            else f"the authors' checkout {self.root} is at "
            + (f"commit {self.commit[:12]}" if self.commit else f"content {self.digest} (no .git)")
            + f", not at their paper-era commit {PAPER_ERA_COMMIT[:7]} (2025-10-31): its prompts differ from the "
            "paper's run (their seed prompt adds a GPU sheet and a second task block from 2025-12-01); "
            f"`git -C {self.root} checkout {PAPER_ERA_COMMIT[:7]}` for the paper's (docs/reproducing.md)"
        )

    def _import(self) -> dict[str, Any]:
        """Their prompt modules, imported from their checkout as their ``main.py`` imports them (``prompts.<name>``)."""
        present = sys.modules.get("prompts")
        where = getattr(present, "__path__", None) or [getattr(present, "__file__", "")]
        if present is not None and str(self.root / "prompts") not in map(str, where):
            raise PromptTemplateError(
                f"another module called 'prompts' is loaded ({list(where)}): the authors' "
                "builders import theirs under that name"
            )
        sys.path.insert(0, str(self.root))
        try:
            modules = {name: importlib.import_module(f"prompts.{name}") for name in BUILDERS}
        except Exception as exc:  # their code, as it is: say what failed
            raise PromptTemplateError(
                f"importing the authors' prompt builders from {self.root} failed: {type(exc).__name__}: {exc}"
            ) from exc
        finally:
            sys.path.remove(str(self.root))
        for name, attributes in BUILDERS.items():
            lacking = [a for a in attributes if not hasattr(modules[name], a)]
            if lacking:
                raise PromptTemplateError(f"{self.root}/prompts/{name}.py defines no {', '.join(lacking)}")
        return modules

    def _file(self, name: str, text: str) -> Path:
        path = self.scratch / name
        path.write_text(text)
        return path

    # -- the PromptLibrary surface the agents use ------------------------------------------------------------------

    def example(self, name: str) -> dict[str, str]:
        """The authors' seed prompt holds its own few-shot pair: no example of ours is shown."""
        return {}

    def render(self, name: str, /, **context: Any) -> str:
        """The prompt ``name`` (``coder/system``, ``coder/first_attempt`` ...) from the authors' builders."""
        m = self.modules
        task = context.get("task") or {}
        if name == "coder/system":
            return m["generate_custom_cuda"].default_system_prompt
        if name == "coder/first_attempt":
            return m["generate_custom_cuda"].build_seed_prompt(
                arch_path=self._file("task.py", task["source"]), gpu_name=self.gpu_name
            )
        if name == "coder/repair":
            return m["error"].build_error_prompt(
                old_code=_their_code(context["kernel"]),
                error_log=_their_log(context),
                problem=_as_replied(context, "feedback"),
                gpu_name=self.gpu_name,
            )
        if name == "coder/optimize":
            return m["optimization"].build_optimization_prompt(
                arch_path=self._file("kernel.py", _their_code(context["kernel"])),
                gpu_name=self.gpu_name,
                optimization_suggestion=_as_replied(context, "suggestion"),
            )
        if name in ("judge/system", "judge/correction", "judge/optimization"):
            system, instruction = self._judge(context)
            return system if name == "judge/system" else instruction
        return self.paper.render(name, **context)

    def _judge(self, context: Mapping[str, Any]) -> tuple[str, str]:
        m, task = self.modules, context.get("task") or {}
        arch = self._file("task.py", task["source"])
        if context.get("mode") == JudgeMode.correction.value:
            return m["judger_repair"].build_correctness_prompts(
                error_log=_their_log(context), arch_path=arch, cuda_code=_their_code(context["kernel"])
            )
        return m["judger_optimization"].build_judger_optimization_prompts(
            arch_path=arch,
            gpu_name=self.gpu_name,
            ncu_metrics_block=to_json(context.get("kernel_metrics") or {}, 2),
            cuda_code=_their_code(context["kernel"]),
        )

    def describe(self) -> dict[str, Any]:
        """What a run records about these prompts: the checkout, its commit (or, without git, the digest of its
        prompt files), whether it is the paper-era one, the GPU key, and the warning when it is not."""
        return {
            "template_set": "cudaforge_authors",
            "authors_root": str(self.root),
            "commit": self.commit,
            "digest": self.digest,
            "paper_era": self.paper_era,
            "gpu_name": self.gpu_name,
            **({"warning": self.warning} if self.warning else {}),
        }

    def __getattr__(self, name: str) -> Any:  # names(), variables() ...: the paraphrase's
        if name in ("paper", "modules"):
            raise AttributeError(name)
        return getattr(self.paper, name)


def _their_code(kernel: str) -> str:
    """A kernel as their ``main.py`` holds it: the reply's code block stripped, with one newline at the end
    (``utils/kernel_io.extract_code_block``)."""
    return kernel.strip() + "\n"


def _their_log(context: Mapping[str, Any]) -> str:
    """The error log their builders get: ours without our integrity findings, which their harness has not."""
    return str(context.get("error_log_authors", context.get("error_log", "")))


def _as_replied(context: Mapping[str, Any], name: str) -> Any:
    """The Judge's JSON as their ``main.py`` hands it to their builders: the object the reply held, with its own key
    spellings (``"optimisation method"``, which their optimisation builder reads), else our fields."""
    raw = context.get(f"{name}_raw")
    return raw if raw else context.get(name)


def _commit(root: Path) -> str | None:
    """The checkout's commit (None outside git)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
