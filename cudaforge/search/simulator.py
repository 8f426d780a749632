"""The offline simulator: a Coder (and a Judge) stand-in for search research, played through the real LLM client.

``install_simulator(pool, seed)`` installs the scripted models ``scripted/simulator`` (``coder=simulator``) and
``scripted/simulator_judge`` (``judge=simulator``). The Coder samples a kernel of the task's pool
(``cudaforge.search.pool``) with odds that depend on the prompt it gets (``Odds``): a first attempt, a repair of a
failed kernel (likelier to be correct with a reviewer's diagnosis in the prompt), or an optimisation of a correct
one (likelier to be a faster honest kernel with a reviewer's analysis). The Judge answers with generic advice in our
templates' JSON. Calls go through litellm like a real model's, so the ledger counts tokens (words) and, with the
configs' prices, dollars. The draw is seeded: the same seed, prompt and repeat of that prompt give the same kernel.
What it can and cannot say about real models: docs/simulator.md.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cudaforge.llm.cache import TASK_IN_PROMPT
from cudaforge.llm.scripted import install_script
from cudaforge.paths import PROJECT_ROOT
from cudaforge.run.demo import kernel_shown, role_and_mode
from cudaforge.run.preflight import Problem
from cudaforge.search.pool import POOLS, TINY_POOL, PoolKernel, load_pool, task_key

SIMULATOR_MODEL = "scripted/simulator"
"""The simulated Coder's model name."""
SIMULATOR_JUDGE_MODEL = "scripted/simulator_judge"
"""The simulated Judge's model name."""
BANNER = "SIMULATOR: the Coder samples hand-written kernels from a pool (docs/simulator.md); no model is called."
NO_CODE_REPLY = "I could not produce a kernel this time."


@dataclass(frozen=True)
class Odds:
    """The simulated Coder's probabilities (each a probability in [0, 1])."""

    no_code: float = 0.05
    """Any reply: no code at all."""
    first_correct: float = 0.4
    """A first attempt: an honest kernel (the slower ones likelier)."""
    hack: float = 0.1
    """A first attempt or a repair that is not correct: a hack rather than a wrong kernel."""
    repair_correct: float = 0.45
    """A repair: an honest kernel."""
    faster: float = 0.3
    """An optimisation: a faster honest kernel (when one exists; the next faster likeliest)."""
    breaks: float = 0.2
    """An optimisation: a wrong kernel or a hack."""
    advice_bonus: float = 0.25
    """Added to ``repair_correct`` and ``faster`` when a reviewer's advice is in the prompt (the Judge spoke)."""
    advice_markers: tuple[str, ...] = ("reviewer's diagnosis", "reviewer's analysis")
    """Text that shows a reviewer's advice in the Coder's prompt (our default templates' headings)."""


def _weighted_slow(honest: list[PoolKernel], rng: random.Random) -> PoolKernel:
    """An honest kernel, the slower ones likelier (weights 1, 1/2, 1/3 ... from the slowest)."""
    return rng.choices(honest, weights=[1 / (i + 1) for i in range(len(honest))])[0]


class SimulatedCoder:
    """Chooses a pool kernel for a prompt; reproducible by seed, prompt and how often that prompt came before."""

    def __init__(self, pool: dict[str, list[PoolKernel]], seed: int = 0, odds: Odds = Odds()):
        self.pool, self.seed, self.odds = pool, int(seed), odds
        self.seen: Counter[str] = Counter()
        self.lock = threading.Lock()

    def _rng(self, task: str, user: str) -> random.Random:
        digest = hashlib.sha256(user.encode()).hexdigest()
        with self.lock:
            repeat = self.seen[digest]
            self.seen[digest] += 1
        return random.Random(f"{self.seed}\0{task}\0{digest}\0{repeat}")

    def choose(self, task: str, mode: str, user: str) -> PoolKernel | None:
        """The kernel answering a Coder prompt of ``mode`` on ``task`` (None: a reply without code)."""
        kernels = self.pool.get(task_key(task))
        if not kernels:
            raise LookupError(f"the simulator's pool has no kernels for {task!r} (it has {sorted(self.pool)})")
        rng, odds = self._rng(task, user), self.odds
        if rng.random() < odds.no_code:
            return None
        honest = sorted((k for k in kernels if k.kind == "honest"), key=lambda k: float(k.speedup or 0))
        wrong = [k for k in kernels if k.kind == "wrong"] or honest
        hacks = [k for k in kernels if k.kind == "hack"] or wrong
        advised = any(marker in user for marker in odds.advice_markers)
        bonus = odds.advice_bonus if advised else 0.0
        by_name = {k.name: k.source for k in kernels}
        shown = kernel_shown(user, list(by_name), by_name) if mode != "first_attempt" else None
        current = next((k for k in honest if k.name == shown), None)
        draw = rng.random()
        if mode == "optimize" and current is not None:
            faster = honest[honest.index(current) + 1 :]
            if faster and draw < odds.faster + bonus:
                return rng.choices(faster, weights=[2**-i for i in range(len(faster))])[0]
            if draw > 1 - odds.breaks:
                return rng.choice(hacks) if rng.random() < odds.hack else rng.choice(wrong)
            return rng.choice(honest[: honest.index(current) + 1])
        correct = odds.first_correct if mode == "first_attempt" else odds.repair_correct + bonus
        if draw < correct:
            return _weighted_slow(honest, rng)
        return rng.choice(hacks) if rng.random() < odds.hack else rng.choice(wrong)

    def reply(self, messages: list[dict[str, Any]]) -> str:
        """The reply to one Coder prompt (a fenced kernel, or a reply without code)."""
        user = next((str(m["content"]) for m in messages if m["role"] == "user"), "")
        found = TASK_IN_PROMPT.search(user)
        if not found:
            raise LookupError("the simulator's prompt names no task")
        _, mode = role_and_mode(messages)
        kernel = self.choose(found.group(1), mode, "\n".join(str(m.get("content") or "") for m in messages))
        return NO_CODE_REPLY if kernel is None else f"Here is the kernel.\n```python\n{kernel.source}```"


def judge_reply(messages: list[dict[str, Any]]) -> str:
    """The simulated Judge's advice: our templates' JSON, generic, marked as simulated."""
    _, mode = role_and_mode(messages)
    if mode == "correction":
        fields = {
            "critical_issue": "(simulated Judge) the output differs from the reference or a guard rejected it",
            "why_it_matters": "a kernel that is not correct scores nothing",
            "minimal_fix_hint": "compute exactly what the reference computes, in a kernel of your own",
        }
    else:
        fields = {
            "bottleneck": "(simulated Judge) memory traffic per program",
            "optimisation_method": "larger blocks, more warps",
            "modification_plan": "process more elements per program",
            "expected_effect": "a few percent faster",
        }
    return "Here is my analysis.\n```json\n" + json.dumps(fields, indent=2) + "\n```"


def install_simulator(
    pool: Path | dict[str, list[PoolKernel]] = TINY_POOL, seed: int = 0, odds: Odds = Odds()
) -> SimulatedCoder:
    """Install ``scripted/simulator`` (the Coder) and ``scripted/simulator_judge`` (the Judge) on a pool (a pool
    file, or kernels by task); returns the Coder."""
    coder = SimulatedCoder(pool if isinstance(pool, dict) else load_pool(pool), seed=seed, odds=odds)
    answer: Callable[[list[dict[str, Any]]], str] = coder.reply
    install_script(SIMULATOR_MODEL.split("/", 1)[1], answer)
    install_script(SIMULATOR_JUDGE_MODEL.split("/", 1)[1], judge_reply)
    return coder


VERDICT_DIR = "~/.cache/cudaforge/simulator"
"""Where the pool's verdicts are kept across runs (``$CUDAFORGE_SIMULATOR_CACHE`` overrides)."""


def verdict_dir() -> Path:
    """The folder of the pool's cached verdicts."""
    import os

    return Path(os.environ.get("CUDAFORGE_SIMULATOR_CACHE") or VERDICT_DIR).expanduser()


def pool_path(given: str | Path | None) -> Path:
    """The pool file ``coder.pool`` names: null, the packaged ``tiny`` pool; else a path absolute, or relative to the
    working directory, else to the project root, else a pool packaged with cudaforge by file name
    (``sim20_pool.yaml``). A file found nowhere is a ``FileNotFoundError`` naming where it was looked for."""
    if given is None or str(given) == "":
        return TINY_POOL
    path = Path(given).expanduser()
    candidates = [path] if path.is_absolute() else [Path.cwd() / path, PROJECT_ROOT / path, POOLS / path]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    raise FileNotFoundError(
        f"coder.pool: no pool file {given} (looked in {', '.join(map(str, candidates))}; packaged pools: "
        f"{', '.join(sorted(p.name for p in POOLS.glob('*.yaml')))})"
    )


def pool_problem(given: str | Path | None, task_ids: list[str]) -> str | None:
    """Why the simulator cannot run ``task_ids`` on the pool ``coder.pool`` names (None: it can): no such file, a
    malformed one, or tasks it has no kernels for."""
    import yaml

    try:
        pool = load_pool(pool_path(given))
    except (OSError, ValueError, TypeError, yaml.YAMLError) as exc:
        return f"coder.pool: {exc}" if not str(exc).startswith("coder.pool") else str(exc)
    missing = [t for t in task_ids if not pool.get(task_key(t))]
    if missing:
        few = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        return f"the simulator's pool {pool_path(given).name} has no kernels for {len(missing)} of the selected tasks ({few})"
    return None


def pool_problems(config: Any, task_ids: Sequence[str]) -> list[Problem]:
    """``simulator_pool``, the pre-flight check beside ``cudaforge.run.preflight.check_config``: the simulator's pool
    (``coder.pool``) is missing, malformed, or lacks selected tasks (none when no agent is the simulator)."""
    if not uses_simulator(config):
        return []
    why = pool_problem(getattr(config.coder, "pool", None), list(task_ids))
    if why is None:
        return []
    fix = "set coder.pool to a pool file that covers the selected tasks (coder.pool=sim20_pool.yaml with suite=sim20)"
    return [Problem("simulator_pool", "coder", config.coder.model, why, fix)]


def simulate(config: Any, ctx: Any, pool: str | Path | None = None) -> bool:
    """When the run's Coder or Judge is the simulator, install it (seeded by ``seed``) on the pool ``coder.pool``
    names (``pool`` overrides it) and make the run's evaluator reuse the pool's cached verdicts (``PoolVerdicts``);
    returns whether it did."""
    from cudaforge.search.pool import PoolVerdicts

    if not uses_simulator(config):
        return False
    path = pool_path(pool if pool is not None else getattr(config.coder, "pool", None))
    install_simulator(path, seed=int(getattr(config, "seed", 0) or 0))
    ctx.evaluator = PoolVerdicts(ctx.evaluator, verdict_dir(), load_pool(path))
    return True


def uses_simulator(config: Any) -> bool:
    """Whether the run's Coder or Judge is the simulator's."""
    return SIMULATOR_MODEL == config.coder.model or config.judge.model in (SIMULATOR_MODEL, SIMULATOR_JUDGE_MODEL)
