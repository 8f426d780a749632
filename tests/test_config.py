"""Every option of every config group composes, and bad values fail at composition."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from cudaforge.config import CudaforgeConfig, register_configs
from cudaforge.paths import CONFIG_DIR

GROUPS = ["suite", "coder", "judge", "strategy", "agents", "eval", "profile", "tracker", "experiment"]


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONFIG_DIR / group).glob("*.yaml"))


def compose_with(overrides: list[str], hydra_config: bool = False):
    register_configs()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose(config_name="cudaforge", overrides=overrides, return_hydra_config=hydra_config)


def test_every_group_has_options():
    for group in GROUPS:
        assert options(group), f"configs/{group}/ is empty"


NEEDS = {"openai_compatible": ["coder.model=served-name", "coder.api_base=http://127.0.0.1:8000/v1"]}
"""Options with mandatory values (``???``): what composing them needs."""


@pytest.mark.parametrize("group, option", [(g, o) for g in GROUPS for o in options(g)])
def test_every_option_composes_to_a_typed_config(group, option):
    obj = OmegaConf.to_object(compose_with([f"{group}={option}", *NEEDS.get(option, [])]))
    assert isinstance(obj, CudaforgeConfig)
    if group != "experiment":
        chosen = compose_with([f"{group}={option}", *NEEDS.get(option, [])], hydra_config=True)
        assert chosen.hydra.runtime.choices[group] == option


@pytest.mark.parametrize("launcher", sorted(p.stem for p in (CONFIG_DIR / "hydra" / "launcher").glob("*.yaml")))
def test_every_launcher_composes(launcher):
    cfg = compose_with([f"hydra/launcher={launcher}"], hydra_config=True)
    assert cfg.hydra.launcher._target_.startswith("hydra_plugins.")


def test_defaults_are_the_offline_demo():
    cfg = compose_with([])
    assert cfg.suite.name == "tiny" and cfg.coder.model == "scripted/demo"
    assert cfg.strategy.max_rounds == 10 and cfg.eval.correctness_trials == 5
    assert cfg.profile.metric_set.value == "cudaforge24" and cfg.profile.clock_control == "none"


def test_the_agents_group_picks_the_prompts():
    from cudaforge.config import JudgeMetrics, TemplateSetName

    default = OmegaConf.to_object(compose_with([])).agents
    assert (default.template_set, default.judge_metrics, default.gpu_spec) == (
        TemplateSetName.default,
        JudgeMetrics.all,
        "local",
    )
    paper = OmegaConf.to_object(compose_with(["agents=cudaforge_paper", "agents.gpu_spec=quadro-rtx-6000"])).agents
    assert (paper.template_set, paper.judge_metrics, paper.gpu_spec) == (
        TemplateSetName.cudaforge_paper,
        JudgeMetrics.cudaforge24,
        "quadro-rtx-6000",
    )
    for bad in ["agents.judge_metrics=top10", "agents.template_set=paper"]:
        with pytest.raises(ConfigCompositionException):
            compose_with([bad])


def test_experiment_overlay_sets_groups():
    cfg = compose_with(["experiment=cudaforge_dstar"])
    assert cfg.suite.subset == "cudaforge_dstar" and cfg.coder.model == "openai/o3"
    assert "dstar" in cfg.tags


@pytest.mark.parametrize(
    "override", ["eval.baseline=fast", "strategy.max_rounds=ten", "suite.kind=zip", "eval.nonsense=1", "suite=nope"]
)
def test_bad_values_fail_at_composition(override):
    with pytest.raises(ConfigCompositionException):
        compose_with([override])


def test_configs_do_not_depend_on_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = compose_with(["suite=main"])
    assert cfg.suite.name == "main"
    assert Path(CONFIG_DIR).is_absolute()


def test_every_schema_field_has_a_docstring():
    import ast
    import inspect

    import cudaforge.config as config

    tree = ast.parse(inspect.getsource(config))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.endswith("Config"):
            body = node.body
            for i, item in enumerate(body):
                if isinstance(item, ast.AnnAssign):
                    nxt = body[i + 1] if i + 1 < len(body) else None
                    assert isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant), (
                        f"{node.name}.{item.target.id} has no docstring"
                    )


def test_the_eval_defaults_are_defined_once():
    """The protocol's defaults live in ``EvalConfig`` (the eval layer's settings): Hydra's default ``eval`` group, the
    dataclass and the evaluator built with no config agree field by field, and the YAML sets no value of its own."""
    import dataclasses

    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.eval.settings import EvalConfig

    composed = OmegaConf.to_object(compose_with([])).eval
    assert composed == EvalConfig()
    assert Evaluator().cfg == EvalConfig() == EvalConfig.from_dict(EvalConfig().to_dict())
    plain = {f.name: getattr(EvalConfig(), f.name) for f in dataclasses.fields(EvalConfig)}
    policies = plain.pop("guards")  # nested: each guard's policy under its name
    assert EvalConfig().to_dict() == {
        **{k: (v.value if hasattr(v, "value") else v) for k, v in plain.items()},
        "guards": {f.name: getattr(policies, f.name).value for f in dataclasses.fields(policies)},
    }


def test_guard_policies_sit_under_their_guard_and_an_old_config_still_reads():
    """``eval.guards.<guard>`` is each guard's policy (checked when set); a config written before the nesting
    (``guard_<guard>``) reads as the same settings, and both forms disagreeing is refused; an unknown guard
    or policy is refused with its name; on the command line the old key is answered with the new one."""
    from cudaforge.eval.guards.policy import GUARDS, Policies
    from cudaforge.eval.settings import EvalConfig, GuardPolicies

    nested = EvalConfig.from_dict({"guards": {"hidden_work": "report", "io": "report"}})
    old = EvalConfig.from_dict({"guard_hidden_work": "report", "guard_io": "report"})
    assert nested == old and nested.guards.hidden_work.value == "report" and nested.guards.reference.value == "reject"
    with pytest.raises(ValueError, match="eval.guard_io=report and eval.guards.io=reject disagree"):
        EvalConfig.from_dict({"guard_io": "report", "guards": {"io": "reject"}})
    with pytest.raises(ValueError, match="disagree"):  # an old key merged over whole new settings is not lost
        EvalConfig.from_dict({**EvalConfig().to_dict(), "guard_precision": "reject"})
    same = EvalConfig.from_dict({"guard_io": "report", "guards": {"io": "report", "fallback": "report"}})
    assert same.guards.io.value == same.guards.fallback.value == "report"
    assert EvalConfig.from_dict(nested.to_dict()) == nested  # what crosses a process boundary
    assert Policies({"guard_io": "report"}).verdict("io") == Policies({"guards": {"io": "report"}}).verdict("io")
    assert Policies({"guards": {"io": "report"}, "guards_enforce": True}).verdict("io") == "report"
    assert Policies({}).verdict("precision") == "report" and Policies({}).verdict("io") == "reject"
    for bad, said in (({"guards": {"nope": "report"}}, "nope"), ({"guards": {"io": "maybe"}}, "eval.guards.io")):
        with pytest.raises(ValueError, match=said):
            EvalConfig.from_dict(bad)
    with pytest.raises(ValueError, match="eval.guards.io"):
        EvalConfig().guards.io = "maybe"
    fields = {f.name for f in dataclasses.fields(GuardPolicies)}
    assert {g.field for g in GUARDS.values() if g.field and g.field != "torch_ops"} == fields
    composed = OmegaConf.to_object(compose_with(["eval.guards.hidden_work=report"])).eval
    assert composed.guards.hidden_work.value == "report" and composed.guards.io.value == "reject"


def test_the_layers_that_only_need_a_path_or_their_settings_do_not_load_hydra():
    import subprocess
    import sys

    code = (
        "import sys, cudaforge.config, cudaforge.eval.evaluator, cudaforge.agents.prompts, cudaforge.report.published; "
        "print('hydra' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stdout + done.stderr[-2000:]


def test_no_enum_is_defined_twice():
    """An enum of settings lives in its layer; ``config.py`` imports it. Two classes with the same members are a
    copy that will drift."""
    import ast
    from collections import defaultdict

    package = CONFIG_DIR.parents[1]
    seen = defaultdict(list)
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any("Enum" in ast.unparse(b) for b in node.bases):
                values = frozenset(
                    ast.unparse(s.value)
                    for s in node.body
                    if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant)
                )
                if values:
                    seen[values].append(f"{path.relative_to(package)}:{node.name}")
    assert not {tuple(sorted(v)): places for v, places in seen.items() if len(places) > 1}


def test_the_profile_defaults_are_defined_once():
    """Hydra's default ``profile`` group is ``ProfileConfig``'s defaults, and the profiler's settings are built on the
    same class (with the run's seed: the evaluator's)."""
    import dataclasses

    from cudaforge.eval.settings import EvalConfig
    from cudaforge.profile.settings import ProfileConfig, ProfileSettings

    assert OmegaConf.to_object(compose_with([])).profile == ProfileConfig()
    settings, config = ProfileSettings(), ProfileConfig()
    for f in dataclasses.fields(ProfileConfig):
        mine, theirs = getattr(settings, f.name), getattr(config, f.name)
        assert mine == (theirs.value if hasattr(theirs, "value") else theirs), f.name
    assert settings.seed == EvalConfig().seed


def test_the_paper_overlays_profile_as_the_authors_ncu_does_and_bad_ncu_values_are_refused():
    from cudaforge.cli.checks import check_values

    for name in ("cudaforge_table1", "cudaforge_metric_sets", "cudaforge_dstar"):
        cfg = compose_with([f"experiment={name}"])
        assert (cfg.profile.units, cfg.profile.clock_control) == ("auto", "base"), name
    assert compose_with(["experiment=cudaforge_metric_sets"]).agents.judge_metrics.value == "profile_set"
    plain = compose_with([])
    assert (plain.profile.units, plain.profile.clock_control) == ("base", "none")  # ours
    assert check_values(compose_with(["profile.units=kb"])) == ["profile.units=kb: must be one of base, auto"]
    assert check_values(compose_with(["profile.clock_control=max"])) == [
        "profile.clock_control=max: must be one of none, base"
    ]


def test_the_table1_overlay_with_the_authors_prompts_composes_their_protocol_whole():
    cfg = compose_with(["experiment=cudaforge_table1", "agents=cudaforge_authors", "agents.authors_root=/their/repo"])
    e = cfg.eval
    # their timing and tolerances (eval=cudaforge_paper), and only their checks deciding the verdict
    assert (e.weights.value, e.poison_memory, e.stricter_checks_decide, e.guards_enforce) == (
        "authors",
        False,
        False,
        False,
    )
    assert e.timing_lead_us == 0 and e.correctness_trials == 1 and not e.check_variants
    assert cfg.agents.template_set.value == "cudaforge_authors" and cfg.agents.judge_metrics.value == "cudaforge24"
    assert (cfg.strategy.max_follow_ups, cfg.strategy.profiled_kernel.value, cfg.strategy.max_rounds) == (0, "best", 10)
    assert (cfg.profile.units, cfg.profile.clock_control) == ("auto", "base")
    assert cfg.suite.expected_problem_set == "b7d841ce26e051dd" and not cfg.suite.allow_other_problem_set


@pytest.mark.parametrize("name", options("strategy"))
def test_a_strategy_is_its_yaml_file_alone(name):
    """Each packaged strategy's flags come from its own file, composed or read by name alike."""
    from cudaforge.cli.checks import strategy_problems
    from cudaforge.graph.strategies import FLAGS, Strategy, get_strategy

    cfg = compose_with([f"strategy={name}"])
    assert all(isinstance(cfg.strategy[key], bool) for key in FLAGS), name  # set in the file, not by the schema
    assert Strategy.from_config(cfg.strategy) == get_strategy(name)
    assert strategy_problems(cfg.strategy) == []


def test_a_loop_shape_spelled_as_its_function_is_the_packaged_strategy():
    """``strategy.graph=cudaforge.graph.loop:alternating``, as configs written before the loop-shape registry say it,
    is the packaged loop by its name; another function is a changed strategy."""
    from cudaforge.cli.checks import strategy_problems
    from cudaforge.graph.strategies import Strategy, get_strategy

    spelled = compose_with(["strategy=cudaforge", "strategy.graph=cudaforge.graph.loop:alternating"])
    assert Strategy.from_config(spelled.strategy) == get_strategy("cudaforge") and not strategy_problems(
        spelled.strategy
    )
    assert Strategy.from_config(spelled.strategy).graph == "alternating"
    other = compose_with(["strategy=cudaforge", "strategy.graph=cudaforge.search.beam:shape"])
    assert "graph differ" in strategy_problems(other.strategy)[0]


def test_a_strategy_of_ones_own_is_one_file_in_ones_config_dir(tmp_path):
    """No Python: a YAML file in the user's config folder is a strategy the loop routes by."""
    import subprocess
    import sys

    from cudaforge.cli.checks import strategy_problems
    from cudaforge.graph.strategies import Strategy, get_strategy

    (tmp_path / "strategy").mkdir()
    (tmp_path / "strategy" / "judge_fixes_only_twice.yaml").write_text(
        "defaults:\n  - schema\nname: judge_fixes_only_twice\njudge_corrects: true\njudge_optimizes: false\n"
        "profile: false\nround_cap: 2\nmax_rounds: 10\n"
    )
    register_configs()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(
            config_name="cudaforge",
            overrides=[f"hydra.searchpath=[file://{tmp_path}]", "strategy=judge_fixes_only_twice"],
        )
    mine = Strategy.from_config(cfg.strategy)
    assert (mine.judge_corrects, mine.judge_optimizes, mine.profile, mine.round_cap(10)) == (True, False, False, 2)
    assert strategy_problems(cfg.strategy) == []
    # what the plan command prints for it: one Judge call fewer than Coder calls per task, two rounds
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "cudaforge.cli",
            "plan",
            "--config-dir",
            str(tmp_path),
            "strategy=judge_fixes_only_twice",
        ],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "WANDB_MODE": "disabled"},
    )
    assert out.returncode == 0, out.stderr
    assert "judge_fixes_only_twice" in out.stdout
    # a packaged name with other flags is refused; so is an unknown name that sets none
    relabelled = compose_with(["strategy.name=one_shot"]).strategy
    assert "choose it with strategy=one_shot" in strategy_problems(relabelled)[0]
    reshaped = compose_with(["strategy.graph=no_judge_loop:shape"]).strategy  # another loop under cudaforge's name
    assert strategy_problems(reshaped)[0].startswith("strategy.name=cudaforge: graph differ")
    unknown = OmegaConf.create({"name": "nowhere", "judge_corrects": None, "judge_optimizes": None, "profile": None})
    assert "unknown strategy 'nowhere'" in strategy_problems(unknown)[0]
    # a config written before strategies moved to YAML (no flags) routes as its name's packaged strategy
    old = {"name": "self_refine", "max_rounds": 10}
    assert Strategy.from_config(old) == get_strategy("self_refine")
    assert Strategy.from_config(CudaforgeConfig().strategy) == get_strategy("cudaforge")


def test_eval_settings_are_checked_whenever_they_are_set():
    """``EvalConfig`` checks a value at construction, from a dict, and on every later assignment; the evaluator
    judges the sandbox by value, so an assigned name cannot make an unsandboxed verifier look trusted."""
    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.eval.settings import EvalConfig
    from cudaforge.proc.sandbox import SandboxMode

    cfg = EvalConfig()
    for key, bad in [("sandbox", "offf"), ("guards_enforce", "false"), ("timing_lead_us", -1), ("crosscheck_calls", 1)]:
        with pytest.raises(ValueError, match=f"eval.{key}="):
            setattr(cfg, key, bad)
    with pytest.raises(ValueError, match="unknown eval setting"):
        EvalConfig.from_dict({"guard_torch_compute": "report"})
    with pytest.raises(ValueError, match="fresh_inputs=false"):
        cfg.replace(interleave=False)
    assert cfg.replace(interleave=False, fresh_inputs=False).interleave is False
    evaluator = Evaluator({"device": "cpu"})
    evaluator.cfg.sandbox = "off"  # a name, made the enum on assignment
    assert evaluator.cfg.sandbox is SandboxMode.off and not evaluator._trusted_verifier()
    assert EvalConfig.from_dict({"timing_trials": 50.0}).timing_trials == 50


def test_value_limits_are_declared_once_beside_their_fields():
    """The CLI's value check and ``EvalConfig``'s own read the same declaration (a field's ``metadata``)."""
    from cudaforge.cli.checks import check_values
    from cudaforge.config import field_limits
    from cudaforge.eval.settings import EvalConfig

    limits = dict(field_limits())
    assert limits["strategy.max_rounds"] == {"min": 1} and limits["eval.crosscheck_calls"] == {"min": 2}
    assert limits["strategy.max_dollars"] == {"positive_or_null": True}
    assert limits["eval.hidden_inputs"] == {"choices": ("x3", "x0.01", "negated", "offset", "wide")}
    with pytest.raises(ValueError, match="unknown 'x7'"):
        EvalConfig.from_dict({"hidden_inputs": ["x3", "x7"]})
    (problem,) = check_values(compose_with(["eval.hidden_inputs=[x3,x7]"]))
    assert problem == "eval.hidden_inputs: unknown x7; must be among x3, x0.01, negated, offset, wide"
    base = compose_with([])  # composed once: each key's value set on a copy, as an override would set it
    for key, low in [
        (k, v["min"]) for k, v in limits.items() if k.startswith("eval.") and "min" in v and "max" not in v
    ]:
        field = key.removeprefix("eval.")
        with pytest.raises(ValueError, match=f"at least {low}"):
            EvalConfig.from_dict({field: low - 1})
        cfg = copy.deepcopy(base)
        OmegaConf.update(cfg, key, low - 1)
        (problem,) = check_values(cfg)
        assert problem.startswith(f"{key}={low - 1}") and problem.endswith(f": must be at least {low}")
