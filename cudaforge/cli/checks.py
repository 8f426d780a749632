"""What the ``cudaforge`` command checks before and after Hydra composes the config.

* ``check_overrides``: composes the config with the user's overrides through Hydra's compose API and turns a
  failure into one or two lines with the nearest names ("did you mean suite=tiny?"), never Hydra's dump.
* ``check_values``: the values Hydra's types cannot check (``strategy.max_rounds >= 1``, ...), each naming its key.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from cudaforge import languages


def _config_options(config_dirs: list[Path]) -> dict[str, list[str]]:
    """Group -> option names found in the config directories (ours first, the user's added)."""
    options: dict[str, set[str]] = {}
    for root in config_dirs:
        if not root.is_dir():
            continue
        for group in root.iterdir():
            if group.is_dir() and not group.name.startswith(("_", ".")) and group.name != "hydra":
                options.setdefault(group.name, set()).update(p.stem for p in group.glob("*.yaml"))
    return {g: sorted(o) for g, o in options.items()}


def _keys(node: Any, prefix: str = "") -> list[str]:
    """Every dotted key of a composed config."""
    from omegaconf import DictConfig

    keys: list[str] = []
    for key in node.keys() if isinstance(node, DictConfig) else []:
        dotted = prefix + format(key)  # format(): what an f-string writes
        keys.append(dotted)
        try:
            child = node._get_node(key)
        except Exception:  # noqa: BLE001 - a key we cannot descend into is still a key
            continue
        if isinstance(child, DictConfig):
            keys += _keys(child, dotted + ".")
    return keys


def _near(word: str, choices: list[str], n: int = 3) -> list[str]:
    return difflib.get_close_matches(word, choices, n=n, cutoff=0.6)


def _mean(choices: list[str]) -> str:
    return f"; did you mean {' or '.join(choices)}?" if choices else ""


def check_overrides(overrides: list[str], config_dir: Path, user_dirs: list[Path]) -> str | None:
    """Compose the config with ``overrides`` (Hydra's compose API, our search path plus ``user_dirs``); None when it
    composes, else a one- or two-line message naming the bad override and the nearest valid names."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException, MissingConfigException
    from omegaconf.errors import OmegaConfBaseException

    plain = [
        o for o in overrides if not o.lstrip("+~").startswith("hydra.") and not o.lstrip("+~").startswith("hydra/")
    ]
    extra = [f"hydra.searchpath=[{','.join('file://' + str(d.resolve()) for d in user_dirs)}]"] if user_dirs else []
    options = _config_options([config_dir, *user_dirs])
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base="1.3", job_name="check"):
            try:
                compose("cudaforge", overrides=extra + plain)
                return None
            except MissingConfigException as exc:
                return _missing_option(str(exc), plain, options)
            except (HydraException, OmegaConfBaseException, ValueError) as exc:
                sweep = re.search(r"(?:Ambiguous value for argument|Sweep parameters) '([^']+)'", str(exc))
                if sweep:
                    return f"{sweep.group(1)}: several values are a sweep: add -m (cudaforge run -m {sweep.group(1)})"
                base = compose("cudaforge", overrides=extra)
                text = "\n".join(str(e) for e in (exc, exc.__cause__) if e is not None)
                return _bad_override(text, plain, _keys(base), options)
    except Exception:  # noqa: BLE001 - when the check itself cannot run, Hydra still says what is wrong
        return None
    finally:
        GlobalHydra.instance().clear()


def _missing_option(text: str, overrides: list[str], options: dict[str, list[str]]) -> str:
    found = re.search(r"Could not (?:find|load) '([^']+)/([^']+)'", text)
    if not found:
        return text.splitlines()[0]
    group, option = found.group(1), found.group(2)
    known = [o for o in options.get(group, []) if o != "schema"]
    near = [f"{group}={o}" for o in _near(option, known)]
    return f"no option {option!r} in config group {group}{_mean(near)} (options: {', '.join(known)})"


def _bad_override(text: str, overrides: list[str], keys: list[str], options: dict[str, list[str]]) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    bad = (
        re.search(r"override '([^']+)'", text)
        or re.search(r"override ([^\s=']+)=", text)
        or re.search(r"full_key: (\S+)", text)
        or re.search(r"Key '([^']+)'", text)
    )
    name = bad.group(1) if bad else ""
    override = next((o for o in overrides if o.lstrip("+~").split("=", 1)[0] in (name, name.split(".")[-1])), "")
    key = override.lstrip("+~").split("=", 1)[0] if override else name
    value_problem = next((line for line in lines if "could not be converted" in line or "Invalid value" in line), "")
    if value_problem and key:
        value_problem = re.sub(r"\s*full_key:.*", "", value_problem)
        return f"{override or key}: {value_problem}"
    renamed = re.fullmatch(r"eval\.guard_([a-z_]+)", key or "")
    if renamed and f"eval.guards.{renamed.group(1)}" in keys:  # the policies were nested under their guard
        value = override.split("=", 1)[1] if "=" in override else "report"
        return f"{key} is now eval.guards.{renamed.group(1)} (eval.guards.{renamed.group(1)}={value})"
    if key and key not in keys:
        groups = [g for g in options if g != "hydra"]
        near = _near(key, keys) if "." in key else _near(key, sorted(set(groups + [k for k in keys if "." not in k])))
        near = [f"{n}=OPTION ({', '.join(options[n][:4])}, ...)" if n in options else n for n in near]
        return f"no config key {key!r}{_mean(near)} (docs/configuration.md lists every key)"
    return f"{override or key}: {lines[-1] if lines else text}" if (override or key) else (lines[0] if lines else text)


_CHOICES = (("profile.units", ("base", "auto")), ("profile.clock_control", ("none", "base")))
"""String settings passed to ncu as they are, and the values it takes."""


def check_values(cfg: Any) -> list[str]:
    """Values that compose but cannot work, each as ``key=value: why``."""
    from omegaconf import OmegaConf

    from cudaforge.config import field_limits

    problems = []
    for key, limits in field_limits():  # declared beside each field, in its layer's settings.py
        value = OmegaConf.select(cfg, key)
        if value is None:
            continue
        if limits.get("positive_or_null") and value <= 0:
            problems.append(f"{key}={value}: must be positive, or null for no budget")
        elif "max" in limits and not limits["min"] <= value <= limits["max"]:
            problems.append(f"{key}={value}: must be between {limits['min']} and {limits['max']}")
        elif "min" in limits and value < limits["min"]:
            problems.append(f"{key}={value}: must be at least {limits['min']}")
        elif "choices" in limits:
            unknown = [str(v) for v in value if v not in limits["choices"]]
            if unknown:
                problems.append(f"{key}: unknown {', '.join(unknown)}; must be among {', '.join(limits['choices'])}")
    for role in ("coder", "judge"):
        if OmegaConf.select(cfg, f"{role}.openai_compatible"):
            for key, what in (
                ("model", "=NAME (the name the server serves: GET /v1/models lists it)"),
                ("api_base", "=http://HOST:PORT/v1 (the server's address)"),
            ):
                if not OmegaConf.select(cfg, f"{role}.{key}"):
                    source = "coder" if role == "judge" else role  # the Judge's defaults follow the Coder's
                    problems.append(
                        f"{role}.{key}: not set; {role}=openai_compatible needs {source}.{key}{what} "
                        "(docs/own-model.md)"
                    )
    paired, runs = OmegaConf.select(cfg, "report.paired_with"), OmegaConf.select(cfg, "report.runs")
    if paired is not None and runs and not 0 <= paired < len(runs):
        problems.append(f"report.paired_with={paired}: there are {len(runs)} run(s), numbered from 0")
    for key, allowed in _CHOICES:
        value = OmegaConf.select(cfg, key)
        if value is not None and str(value) not in allowed:
            problems.append(f"{key}={value}: must be one of {', '.join(allowed)}")
    backend = str(
        getattr(OmegaConf.select(cfg, "strategy.backend"), "value", OmegaConf.select(cfg, "strategy.backend"))
    )
    if backend in languages.names() and languages.missing_message(backend):
        problems.append(f"strategy.backend={backend}: {languages.missing_message(backend)}")
    problems += strategy_problems(OmegaConf.select(cfg, "strategy"))
    return problems


def strategy_problems(node: Any) -> list[str]:
    """A strategy that cannot be told apart from another: a packaged name with flags other than its file's (results
    would carry the name of a strategy that did not run), or an unknown name that leaves its flags unset."""
    from cudaforge.graph.strategies import FLAGS, Strategy, get_strategy, strategy_names

    if node is None:
        return []
    name = str(getattr(node, "name", ""))
    try:
        mine = Strategy.from_config(node)
    except ValueError as exc:
        return [f"strategy.name={name}: {exc}; a strategy of your own sets {', '.join(FLAGS)} in its YAML file"]
    if name in strategy_names() and mine != get_strategy(name):
        changed = [
            k
            for k in (*FLAGS, "metric_set", "max_rounds", "graph")
            if getattr(mine, k) != getattr(get_strategy(name), k)
        ]
        return [
            f"strategy.name={name}: {', '.join('round_cap' if k == 'max_rounds' else k for k in changed)} differ from "
            f"the packaged {name} strategy; choose it with strategy={name}, or give the changed strategy a name of "
            "its own (strategy.name=...)"
        ]
    return []
