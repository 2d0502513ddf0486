"""Typed settings: one pydantic model per config section, unknown keys refused, defaults only in presets.toml.

The models declare names and types and nothing else (no defaults): every value comes from `presets.toml`'s
`[defaults]`, a preset, a scale override or a user's `--config` file, so a default cannot drift between the file
and the code. A key that no model declares — `[qa] windows_days = 30` — is one line naming the file, the section
and the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from synth.config import question_types
from synth.core.errors import InputError


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    ordered: ClassVar[tuple[tuple[str, str], ...]] = ()  # (low, high) fields: low may not be above high

    @model_validator(mode="after")
    def _ordered(self) -> "Section":
        for low, high in self.ordered:
            if getattr(self, low) > getattr(self, high):
                raise ValueError(f"{low} {getattr(self, low)} is above {high} {getattr(self, high)}")
        return self


class PersonaSettings(Section):
    min_relations: int = Field(ge=1)


class ArcsSettings(Section):
    arcs_per_dimension: int = Field(ge=1)
    everyday_min_days: int = Field(ge=1)  # a gap between major events this long or longer becomes everyday life
    anchor_states: int = Field(ge=2)
    added_seeds: int = Field(ge=0)
    max_kept_seeds: int = Field(ge=1)
    major_events_per_year: float = Field(ge=0)
    min_major_events: int = Field(ge=1)


class PhasesSettings(Section):
    # the registry a prompt shows (synth.life.registry_view): whom the moment names, then who was seen in the last
    # registry_days days while their lines fit in registry_tokens
    registry_days: int = Field(ge=0)
    registry_tokens: int = Field(ge=0)
    phases_per_event: int = Field(ge=1)
    everyday_phase_days: int = Field(ge=1)  # an everyday stretch is split into phases of at most this many days
    new_people: int = Field(ge=0)  # people (and as many places) a phase may add to the registry at most


class EventsSettings(Section):
    ordered = (("min_events", "max_events"),)
    # the registry a prompt shows (synth.life.registry_view): whom the moment names, then who was seen in the last
    # registry_days days while their lines fit in registry_tokens
    registry_days: int = Field(ge=0)
    registry_tokens: int = Field(ge=0)
    events_per_week: float = Field(gt=0)  # a phase's events: its length in weeks times this, within the bounds
    min_events: int = Field(ge=1)
    max_events: int = Field(ge=1)
    min_evidence: int = Field(ge=1)
    max_evidence: int = Field(ge=1)
    everyday_share: float = Field(ge=0, lt=1)  # target share of everyday events (and so traces) in the persona's
    max_gap_days: int = Field(ge=1)  # an everyday phase gets at least one event per this many days
    recent_phases: int = Field(ge=0)  # the phases before a phase, shown to its events prompt (continuity)
    new_people: int = Field(ge=0)  # an event may add at most this many people (and as many places) to the registry
    gap_room_days: int = Field(ge=0)  # events are re-dated to leave at most max_gap_days minus this without one
    fill_gaps: bool  # a stretch no event can be moved into gets everyday events of its own (one call per stretch)
    travel_seeds: list[str]  # seed names of major events during which the person travels (gaps allowed)
    date_words: list[str]  # an event whose text names one of these (or a date, or a public holiday) keeps its day


class TracesSettings(Section):
    ordered = (("min_words", "max_words"),)
    # the registry a prompt shows (synth.life.registry_view): whom the moment names, then who was seen in the last
    # registry_days days while their lines fit in registry_tokens
    registry_days: int = Field(ge=0)
    registry_tokens: int = Field(ge=0)
    traces_per_event: int = Field(ge=1)
    min_words: int = Field(ge=1)
    max_words: int = Field(ge=1)
    max_delay_hours: int = Field(ge=0)
    zh_chars_per_word: float = Field(gt=0)  # Chinese limits are characters: the word limits times this
    voice_examples: int = Field(ge=0)  # the person's latest traces of the same medium shown to the writer
    voice_chars: int = Field(ge=1)  # each voice example cut to this many characters
    voice_wave_days: int = Field(ge=1)  # traces are written in waves of this many days; a wave reads earlier ones
    # a medium's own length band [low, high] in words (Chinese: characters, times zh_chars_per_word): a Moments post
    # is not a diary; a medium not listed gets min_words..max_words. The writer sees this band as its one length rule
    medium_words: dict[str, tuple[int, int]] = Field(default_factory=dict)
    # per language: relative weights of the media mix (a target over the persona's traces, not forced per event)
    media: dict[Literal["en", "zh"], dict[str, float]]
    public_media: list[str]  # media anyone may read: they never carry or repeat evidence marked private
    leak_overlap: float = Field(gt=0, le=1)  # share of a private statement's distinctive terms that reveals it
    leak_min_matches: int = Field(ge=1)  # ... and at least this many of them
    leak_common_share: float = Field(gt=0, le=1)  # terms in more of the persona's statements are not distinctive
    privacy_repairs: int = Field(ge=0)  # re-plans, then rewrites, of a trace that reveals a private evidence
    privacy_lookback_days: int = Field(ge=0)  # private evidence of any phase this recent counts too (own phase: always)
    privacy_judge: bool  # a judge also reads each public trace against the private evidence it could give away
    privacy_judge_statements: int = Field(ge=1)  # ... at most this many (its phase's first, then the newest)

    @model_validator(mode="after")
    def _some_medium(self) -> "TracesSettings":
        for language, weights in self.media.items():
            if not any(w > 0 for w in weights.values()):
                raise ValueError(f"media.{language}: at least one medium needs a positive weight")
        return self


class ChatsSettings(Section):
    ordered = (("min_utterances", "max_utterances"),)
    max_days_per_group: int = Field(ge=0)  # active days generated per group (0 = every active day)
    max_groups: int = Field(ge=0)  # groups with an active day that get chats, in family, work, friends order (0 = all)
    min_utterances: int = Field(ge=1)
    max_utterances: int = Field(ge=1)
    summary_days: int = Field(ge=0)  # day summaries the rolling weekly state shows
    monthly_summaries: int = Field(ge=0)  # earlier months' summaries the rolling state shows
    judge: bool  # levels 2–4 of the daily validation (a model call per day); level 1 always runs
    max_repairs: int = Field(ge=0, le=2)  # repair rounds per day, then the day is flagged
    # relation words that put a relation into the family or work group (lower case; the rest are friends)
    family_words: list[str]
    work_words: list[str]


class LifelogSettings(Section):
    ordered = (("min_lines", "max_lines"),)
    minutes: int = Field(ge=1)  # how long an event's dialogue runs
    max_events: int = Field(ge=0)  # events (with evidence, oldest first) that get a dialogue (0 = every one)
    min_lines: int = Field(ge=1)
    max_lines: int = Field(ge=1)
    max_repairs: int = Field(ge=0, le=2)
    similar_events: int = Field(ge=0)  # the repetition check compares with this many most similar earlier events
    repetition_threshold: float = Field(ge=0, le=1)  # word-overlap similarity above which a dialogue repeats one
    bystander: dict[Literal["en", "zh"], str]  # the speaker label of a stranger overheard
    plan: bool  # LifeDialBench's year → month → week → day plan before the dialogues (lifelog_plan.jsonl)
    plan_max_items: int = Field(ge=1)  # a day's agenda has at most this many items
    plan_event_slack_minutes: int = Field(ge=0)  # an event's agenda item may be this far from the event's time


RelationKey = Literal["complementary_all", "complementary_any", "nuanced_temporal", "nuanced_contextual",
                      "contradictory"]


class VariantsSettings(Section):
    """SubtleMemory's relation-controlled variant sets (synth variants)."""

    ordered = (("min_words", "max_words"),)
    # seed facts (one variant set each) per relation type; 0 = none
    seeds_per_relation: dict[RelationKey, Annotated[int, Field(ge=0)]]
    set_size: dict[RelationKey, Annotated[int, Field(ge=2, le=4)]]  # variants (hence sessions) per set
    min_gap_days: int = Field(ge=1)  # two sessions of one set are at least this many days apart
    max_ask_delay_days: int = Field(ge=1)  # the query is asked 1..N days after the set's last session
    min_words: int = Field(ge=1)  # a session's length (Chinese: characters, times traces.zh_chars_per_word)
    max_words: int = Field(ge=1)
    max_repairs: int = Field(ge=0, le=2)  # rewrites of a session whose checks fail; then the set is rejected
    min_query_keywords: int = Field(ge=1)  # the one-session check applies to a query with this many keywords
    recency_words: dict[Literal["en", "zh"], list[str]]  # a query with one of these lets session order decide
    # visible-only, model-free: a no-context answer sharing this share of an accepted answer's content words
    visible_overlap: float = Field(gt=0, le=1)


class QASettings(Section):
    window_days: int = Field(ge=1)
    stride_days: int = Field(ge=1)
    types: Annotated[list[str], AfterValidator(question_types.check_qa_types)]  # registered types the qa stage makes
    target_per_type: int = Field(ge=0)
    plans_per_type: int = Field(ge=0)
    max_segment_evidence: int = Field(ge=1)
    question_grace_days: int = Field(ge=0)
    max_question_delay_days: int = Field(ge=0)
    trace_chars: int = Field(ge=1)
    max_prompt_traces: int = Field(ge=0)
    max_answer_chars: dict[Literal["en", "zh"], int]
    duration_min_days: int = Field(ge=1)  # temporal_duration: the two moments are at least this many days apart
    duration_unit: dict[Literal["en", "zh"], str]  # its answer: "<days> <unit>"
    profile_min_days: int = Field(ge=1)  # profile_style: a member who spoke on at least this many chat days
    profile_dimensions: int = Field(ge=1, le=8)  # the member's most marked style dimensions an item tests
    profile_lines: int = Field(ge=1)  # the member's lines (newest first) the writer sees as the style's evidence
    profile_rewrites: int = Field(ge=0)  # re-asks showing the model-free 2×2 check's problems


class DistractorsSettings(Section):
    rounds: int = Field(ge=1)
    length_ratio: float = Field(gt=0)
    trace_chars: int = Field(ge=1)
    max_prompt_traces: int = Field(ge=0)
    verify: bool
    related_traces: int = Field(ge=0)
    centrality_margin: float = Field(ge=0, le=1)
    entity_margin: int = Field(ge=0)  # shared people/places the key may lead the others by (0: no check)


class FilterSettings(Section):
    length_ratio: float = Field(gt=0)
    dedup_threshold: float = Field(ge=0, le=1)
    cross_type_evidence_jaccard: float = Field(ge=0, le=1)
    cross_type_answer_overlap: float = Field(ge=0, le=1)
    blind_samples: int = Field(ge=1, le=8)
    blind_unanswerable: bool
    centrality_margin: float = Field(ge=0, le=1)
    related_traces: int = Field(ge=0)
    min_span_days: int = Field(ge=0)
    single_trace_max: int = Field(ge=0)
    single_trace_confidence: float = Field(ge=0, le=1)
    min_option_chars: dict[Literal["en", "zh"], int]
    sufficiency_max_evidence: int = Field(ge=1)
    unique_traces: int = Field(ge=0)  # the uniqueness judge reads this many other related traces (0: no check)
    entity_margin: int = Field(ge=0)  # reject a key leading the shared people/places by this many (0: no check)
    open_blind: bool  # a no-context reader answers the open question; a judge's match rejects the open form
    choices_only: bool  # a reader sees only the options (no question); its pick is reported
    trace_chars: int = Field(ge=1)
    max_prompt_traces: int = Field(ge=0)


class TranslateSettings(Section):
    # the languages every persona is released in (its own included); [] = each persona file's `languages`, else
    # its own language only. `--languages en,zh` sets it.
    languages: list[Literal["en", "zh"]]


class BatchSettings(Section):
    window_s: float = Field(ge=0)
    max_requests: int = Field(ge=1)
    poll_s: float = Field(gt=0)


class DryRunSettings(Section):
    output_tokens: dict[str, int]
    # newcomers a month of life brings into the registry in the dry run's answers (synth.pipeline.dryrun_fake)
    people_per_month: float = Field(ge=0)
    places_per_month: float = Field(ge=0)


class EvalSettings(Section):
    context_tokens: int = Field(ge=1)
    full_context_tokens: int = Field(ge=1)
    answer_temperature: float = Field(ge=0)
    answer_max_tokens: int = Field(ge=1)
    judge_temperature: float = Field(ge=0, le=0)  # the judges score, they do not sample: 0 is the only value
    judge_max_tokens: int = Field(ge=1)
    bootstrap_resamples: int = Field(ge=1)
    bootstrap_seed: int
    concurrency: int = Field(ge=1)
    retriever: Literal["bm25", "dense", "hybrid"]
    embedder: Literal["e5", "use"]
    embed_max_chars: int = Field(ge=1)
    use_max_tokens: int = Field(ge=2)
    rrf_k: int = Field(ge=1)
    rrf_depth: int = Field(ge=1)
    memory_max_per_trace: int = Field(ge=1)
    memory_trace_chars: int = Field(ge=1)
    mem0_top_k: int = Field(ge=1)
    tree_consolidate_every: int = Field(ge=1)
    tree_prior_log_odds: float
    tree_decay_per_day: float = Field(ge=0)
    tree_evidence_weight: float = Field(ge=0)
    tree_link_similarity: float = Field(ge=-1, le=1)
    tree_link_threshold: float
    tree_validate_candidates: int = Field(ge=1)
    tree_cluster_similarity: float = Field(ge=-1, le=1)
    tree_min_support: int = Field(ge=1)
    tree_root_confidence: float = Field(ge=0, le=1)
    tree_root_min_mids: int = Field(ge=1)
    tree_prune_confidence: float = Field(ge=0, le=1)
    tree_confidence_weight: float = Field(ge=0)
    tree_budget_tokens: int = Field(ge=1)


class ExportSettings(Section):
    license: str = Field(min_length=1)  # the dataset card's `license` (a Hub license id, e.g. cc-by-4.0)


class Settings(Section):
    """The whole resolved configuration of one persona's run (after preset, scale and --config)."""

    preset: str
    personas: int = Field(ge=0)
    timeline_days: int = Field(ge=0)
    concurrency: int = Field(ge=1)
    max_repairs: int = Field(ge=0)
    max_attempts: int = Field(ge=1)
    timeout_s: float = Field(gt=0)
    temperature: float = Field(ge=0)
    judge_temperature: float = Field(ge=0)
    max_tokens: int = Field(ge=1)
    task_max_tokens: dict[str, int]  # per template (without .j2): the answer room that task needs at least
    holiday_countries: dict[Literal["en", "zh"], str]  # public holidays shown in dated prompts, per language
    sources: list[Literal["written", "group_chat", "lifelog"]] = Field(min_length=1)
    persona: PersonaSettings
    arcs: ArcsSettings
    phases: PhasesSettings
    events: EventsSettings
    chats: ChatsSettings
    lifelog: LifelogSettings
    traces: TracesSettings
    variants: VariantsSettings
    qa: QASettings
    distractors: DistractorsSettings
    filter: FilterSettings
    translate: TranslateSettings
    batch: BatchSettings
    dry_run: DryRunSettings
    routes: dict[str, str]
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
