"""The whole typed configuration of a run (`Settings`), its checks, and the reading of an older dataset's recorded one.

The stage sections and their help text live in synth.config.sections; this module adds the run-wide knobs, the
eval, batch and dry-run sections, the key checks (a key no model declares — `[qa] windows_days = 30` — is one line
naming the file, the section and the key) and `upgrade`, which maps the keys an older dataset.json recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from synth.config.sections import (
    ArcsSettings,
    ChatsSettings,
    DistractorsSettings,
    EventsSettings,
    FilterSettings,
    Language,
    LifelogSettings,
    McqSettings,
    PersonaSettings,
    PhasesSettings,
    PromptsSettings,
    QASettings,
    Section,
    TracesSettings,
    TranslateSettings,
    VariantsSettings,
    knob,
)
from synth.core.errors import InputError

__all__ = ["ArcsSettings", "ChatsSettings", "DistractorsSettings", "EventsSettings", "FilterSettings",
           "LifelogSettings", "McqSettings", "PersonaSettings", "PhasesSettings", "PromptsSettings", "QASettings",
           "Section", "Settings", "TracesSettings", "TranslateSettings", "VariantsSettings"]

# Per-task tables (task_max_tokens, routes, dry_run.output_tokens) are keyed by model task, the first argument of a
# stage's `ask` and the names in its STAGE.tasks.
PER_TASK = ("task_max_tokens", "routes", "dry_run.output_tokens")


class BatchSettings(Section):
    """`synth run --batch`: how requests are grouped for the provider's batch API."""

    window_s: float = knob("a batch is sent when no new request arrives for this long ...", ge=0)
    max_requests: int = knob("... or when it holds this many", ge=1)
    poll_s: float = knob("how often an in-flight batch is polled", gt=0)


class DryRunSettings(Section):
    """`synth run --dry-run`: the cost estimate without calling a model."""

    output_tokens: dict[str, int] = knob("per task: typical output tokens of one answer, from a capable model's "
                                         "answers (docs/performance.md); `traces` is the plan's (a trace's text is "
                                         "priced at its configured length)")
    people_per_month: float = knob("newcomers a month of life brings into the registry in the dry run's answers (a "
                                   "capable model added 3 people and 1 place in 75 days)", ge=0)
    places_per_month: float = knob("... and new places a month", ge=0)


class EvalSettings(Section):
    """`synth eval`: the answerer and judge settings, the retrievers and memory systems, and the statistics."""

    context_tokens: int = knob("cap on the retrieved context handed to the answerer", ge=1)
    full_context_tokens: int = knob("the `full` system's context budget", ge=1)
    answer_temperature: float = knob("the answerer's temperature", ge=0)
    answer_max_tokens: int = knob("the answerer's answer room", ge=1)
    judge_temperature: float = knob("the judges score, they do not sample: 0 is the only value", ge=0, le=0)
    judge_max_tokens: int = knob("the judges' answer room", ge=1)
    bootstrap_resamples: int = knob("bootstrap resamples of the confidence intervals", ge=1)
    bootstrap_seed: int = knob("the bootstrap's random seed")
    concurrency: int = knob("concurrent requests of an evaluation", ge=1)
    retriever: Literal["bm25", "dense", "hybrid"] = knob("flat's and memory's default --retriever")
    embedder: Literal["e5", "use"] = knob("dense: the offline embedder, e5 (multilingual-e5-small) or use (USE "
                                          "multilingual v3, about 20 times faster)")
    embed_max_chars: int = knob("dense: each text is cut to this many characters before embedding", ge=1)
    use_max_tokens: int = knob("--embedder use: then to this many tokens", ge=2)
    rrf_k: int = knob("hybrid: reciprocal rank fusion constant, score = sum 1 / (rrf_k + rank)", ge=1)
    rrf_depth: int = knob("hybrid: how deep each of the two rankings is read before fusing", ge=1)
    memory_max_per_trace: int = knob("memory: at most this many memories extracted from one trace", ge=1)
    memory_trace_chars: int = knob("memory: the trace text shown to the extractor is cut to this length", ge=1)
    mem0_top_k: int = knob("mem0: memories searched per question (then mapped to at most k traces)", ge=1)
    tree_consolidate_every: int = knob("tree: a consolidation pass after this many new leaves (never within a "
                                       "question)", ge=1)
    tree_prior_log_odds: float = knob("tree: the baseline log-odds L_base (0 is confidence 0.5)")
    tree_decay_per_day: float = knob("tree: λ, how fast a node's log-odds fall back to the prior without new "
                                     "evidence", ge=0)
    tree_evidence_weight: float = knob("tree: ω, log-odds added by a strong support (half for weak; negative for "
                                       "conflicts)", ge=0)
    tree_link_similarity: float = knob("tree: a mid is a candidate for a new leaf only above this cosine similarity",
                                       ge=-1, le=1)
    tree_link_threshold: float = knob("tree: match score 0.5·similarity + 0.5·validator weight needed to attach")
    tree_validate_candidates: int = knob("tree: validator calls per new leaf at most", ge=1)
    tree_cluster_similarity: float = knob("tree: orphan leaves (and mids) closer than this cluster together",
                                          ge=-1, le=1)
    tree_min_support: int = knob("tree: leaves a new mid needs (and mids a root's members need each)", ge=1)
    tree_root_confidence: float = knob("tree: a mid's confidence needed for promotion into a root", ge=0, le=1)
    tree_root_min_mids: int = knob("tree: mids a root needs", ge=1)
    tree_prune_confidence: float = knob("tree: mids below this confidence are pruned (their leaves become orphans)",
                                        ge=0, le=1)
    tree_confidence_weight: float = knob("tree: β in the path score, similarity + β·confidence", ge=0)
    tree_budget_tokens: int = knob("tree: the rendered support paths' token budget per question", ge=1)


class ExportSettings(Section):
    """`synth export --format hf`: the dataset card's metadata."""

    license: str = knob("the dataset card's `license`, a Hub license id (e.g. cc-by-4.0)", min_length=1)


class Settings(Section):
    """The whole resolved configuration of one persona's run (after preset, scale and --config)."""

    preset: str = knob("the preset the run started from (tiny, small, clonemem)")
    personas: int = knob("0 = every selected persona; N = the first N", ge=0)
    timeline_days: int = knob("0 = the persona file's timeline; N = override its length in days", ge=0)
    concurrency: int = knob("concurrent requests across personas and units (rate limits still apply)", ge=1)
    max_repairs: int = knob("structured-output re-asks after the first answer", ge=0)
    max_attempts: int = knob("transport attempts per request (429, 5xx, dropped connections, timeouts)", ge=1)
    timeout_s: float = knob("seconds one attempt may take (not for the in-process local model)", gt=0)
    temperature: float = knob("the writing tasks' temperature", ge=0)
    judge_temperature: float = knob("the judging tasks' temperature (a stage's `judges`): validators and filters "
                                    "decide, they don't sample", ge=0)
    max_tokens: int = knob("a request's answer room, unless its task needs more", ge=1)
    task_max_tokens: dict[str, int] = knob("per task: the least answer room, whatever max_tokens says")
    holiday_countries: dict[Language, str] = knob("per language: whose public holidays the dated prompts show (the "
                                                  "`holidays` package's country codes), unless the persona file "
                                                  "sets its own `country`")
    sources: list[Literal["written", "group_chat", "lifelog"]] = knob(
        "where a persona's traces come from: written (the traces stage), group_chat (synth chats), lifelog "
        "(synth lifelog)", min_length=1)
    persona: PersonaSettings
    arcs: ArcsSettings
    phases: PhasesSettings
    events: EventsSettings
    chats: ChatsSettings
    lifelog: LifelogSettings
    traces: TracesSettings
    variants: VariantsSettings
    prompts: PromptsSettings
    qa: QASettings
    mcq: McqSettings
    distractors: DistractorsSettings
    filter: FilterSettings
    translate: TranslateSettings
    batch: BatchSettings
    dry_run: DryRunSettings
    routes: dict[str, str] = knob("per task: a provider/model that answers it instead of the run's, e.g. "
                                  "distractors_validate = \"openai/gpt-4o-mini\"")
    eval: EvalSettings
    export: ExportSettings


def _section_model(model: type[BaseModel], key: str) -> type[BaseModel] | None:
    field = model.model_fields.get(key)
    annotation = getattr(field, "annotation", None)
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def check_keys(data: dict, source: Path | str, *, allow_scale: bool) -> None:
    """Refuse a key no settings model declares, naming the file, the section and the key."""

    def walk(node: dict, model: type[BaseModel], where: str) -> None:
        for key, value in node.items():
            if where == "" and key == "scale" and allow_scale:
                if not isinstance(value, dict):
                    raise InputError(f"{source}: [scale]: must be a table of persona scales")
                for scale, over in value.items():
                    if not isinstance(over, dict):
                        raise InputError(f'{source}: [scale."{scale}"]: must be a table')
                    walk(over, Settings, f'scale."{scale}".')
                continue
            if key not in model.model_fields or (where == "" and key == "preset"):
                section = f"[{where.rstrip('.')}] " if where else ""
                known = ", ".join(k for k in model.model_fields if k != "preset")
                raise InputError(f"{source}: {section}{key}: unknown setting (known here: {known})")
            sub = _section_model(model, key)
            if sub is not None:
                if not isinstance(value, dict):
                    raise InputError(f"{source}: {key}: must be a table ([{where}{key}])")
                walk(value, sub, f"{where}{key}.")

    walk(data, Settings, "")


def parse(config: dict, blame: dict[str, Path | str] | None = None, default_source: str = "presets.toml") -> Settings:
    """Validate a resolved config; a wrong type or range is one line naming the file that set the value."""
    data = {k: v for k, v in config.items() if not k.startswith("_")}
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = [str(part) for part in error["loc"] if part != "[key]"]
        dotted = ".".join(loc)
        source = next((src for key, src in (blame or {}).items()
                       if key == dotted or key.startswith(dotted + ".") or dotted.startswith(key + ".")), default_source)
        section = f"[{'.'.join(loc[:-1])}] " if len(loc) > 1 else ""
        what = {"missing": "missing setting", "extra_forbidden": "unknown setting"}.get(
            error["type"], f"{error['msg']} (got {error.get('input')!r})")
        if loc[-2:] == ["qa", "types"] and error["type"] == "value_error":
            what = str(error["ctx"]["error"])  # names the wrong type and the known ones; the list itself is noise
        raise InputError(f"{source}: {section}{loc[-1]}: {what}") from None


def dotted_keys(data: Any, prefix: str = "") -> list[str]:
    """Every leaf key of a nested table as `section.key` (for naming the file that set a value)."""
    if not isinstance(data, dict):
        return [prefix.rstrip(".")]
    out: list[str] = []
    for key, value in data.items():
        out.extend(dotted_keys(value, f"{prefix}{key}.") if isinstance(value, dict) else [f"{prefix}{key}"])
    return out


# Where the keys an older dataset.json recorded live now: a knob once repeated in several stage sections (the first
# of qa, distractors, filter that holds it wins), and task_max_tokens' old template keys (several templates of one
# task: the largest floor).
MOVED = {"prompts": ("trace_chars", "max_prompt_traces"), "mcq": ("length_ratio", "centrality_margin", "related_traces")}
OLD_HOMES = ("qa", "distractors", "filter")
TEMPLATE_TASKS = {"phases_generate": "phases", "phases_update": "phases", "events_generate": "events",
                  "traces_plan": "traces", "traces_write": "traces"}


def upgrade(config: dict, tasks_of: dict[str, tuple[str, ...]]) -> dict:
    """A recorded config (or scale override) with its old keys mapped to today's: shared knobs into their one
    section, task_max_tokens from template to task, routes from stage to each of the stage's tasks (a task's own
    route still wins). `tasks_of` is the stage registry's tasks per stage name. Today's keys pass unchanged."""
    out = {key: dict(value) if isinstance(value, dict) else value for key, value in config.items()}
    for shared, keys in MOVED.items():
        for home in OLD_HOMES:
            old = out.get(home)
            for key in keys if isinstance(old, dict) else ():
                if key in old:
                    value = old.pop(key)
                    out.setdefault(shared, {}).setdefault(key, value)
    floors = out.get("task_max_tokens")
    if isinstance(floors, dict):
        mapped: dict[str, int] = {}
        for key, value in floors.items():
            task = TEMPLATE_TASKS.get(key, key)
            mapped[task] = max(value, mapped.get(task, value))
        out["task_max_tokens"] = mapped
    routes = out.get("routes")
    if isinstance(routes, dict):
        own = {key: spec for key, spec in routes.items() if key not in tasks_of or key in tasks_of[key]}
        for stage, spec in routes.items():
            for task in tasks_of.get(stage, ()):
                own.setdefault(task, spec)
        out["routes"] = own
    return out


def check_tasks(config: dict, tasks: set[str], source: Path | str) -> None:
    """Refuse a per-task table's key that names no task of the pipeline (one line naming the file, table and key)."""
    for table in PER_TASK:
        node: Any = config
        for part in table.split("."):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        for key in node:
            if key not in tasks:
                hint = f" (the task of that template is {TEMPLATE_TASKS[key]})" if key in TEMPLATE_TASKS else ""
                raise InputError(f"{source}: [{table}] {key}: not a model task{hint}; tasks: {', '.join(sorted(tasks))}")
