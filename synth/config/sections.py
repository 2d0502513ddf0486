"""The typed sections of a run's configuration, one pydantic model each, every knob's meaning in its description.

The models declare names, types, bounds and help text, and no defaults: every value comes from `presets.toml`'s
`[defaults]`, a preset, a scale override or a user's `--config` file, so a default cannot drift between the file and
the code. A knob several stages read lives in one shared section (`[prompts]`, `[mcq]`), never in each of them.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from synth.config import question_types

Language = Literal["en", "zh"]


def knob(description: str, **bounds) -> object:
    """A required setting with its help text (what `synth config show --explain` and docs/configuration.md print)."""
    return Field(description=description, **bounds)


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
    """The persona stage: the seed file enriched into a full persona."""

    min_relations: int = knob("people the enriched persona names at least", ge=1)


class ArcsSettings(Section):
    """The arcs stage: life arcs per Big Five dimension, their anchor states and the major events."""

    arcs_per_dimension: int = knob("life arcs per Big Five dimension", ge=1)
    everyday_min_days: int = knob("a gap between major events at least this long is filled with everyday life", ge=1)
    anchor_states: int = knob("anchor states per arc (its start, turning points and end)", ge=2)
    added_seeds: int = knob("event seeds the model may add to the predefined ones", ge=0)
    max_kept_seeds: int = knob("predefined event seeds the model may keep for one persona", ge=1)
    major_events_per_year: float = knob("major events per year of timeline", ge=0)
    min_major_events: int = knob("major events at least, whatever the timeline's length", ge=1)


class PhasesSettings(Section):
    """The phases stage: each major event (and everyday stretch) cut into phases with a rolling snapshot."""

    phases_per_event: int = knob("phases per major event", ge=1)
    min_phase_days: int = knob("a major event has no more phases than its days over this (at least one)", ge=1)
    registry_days: int = knob("the registry a prompt shows: whom the moment names, then those seen in the last this "
                              "many days, most recent first (synth.life.registry_view)", ge=0)
    registry_tokens: int = knob("... while their lines fit in this many tokens", ge=0)
    everyday_phase_days: int = knob("everyday stretches are cut into phases of at most this many days", ge=1)
    new_people: int = knob("people (and as many places) a phase may add to the registry at most", ge=0)


class EventsSettings(Section):
    """The events stage: dated events with their evidence statements, inside each phase."""

    ordered = (("min_events", "max_events"),)
    events_per_week: float = knob("a phase's events: its length in weeks times this, within [min_events, max_events]",
                                  gt=0)
    min_events: int = knob("events per phase at least", ge=1)
    max_events: int = knob("events per phase at most", ge=1)
    min_evidence: int = knob("evidence statements per event at least", ge=1)
    max_evidence: int = knob("evidence statements per event at most", ge=1)
    everyday_share: float = knob("target share of everyday (low-salience) events, hence traces; reported by "
                                 "`synth stats`", ge=0, lt=1)
    max_gap_days: int = knob("an everyday phase gets at least one event per this many days; `synth validate` "
                             "(trace_gaps) reports a longer gap without a trace", ge=1)
    recent_phases: int = knob("the phases before a phase shown to its events prompt (continuity)", ge=0)
    new_people: int = knob("people taking part in an event (and as many places) it may add to the registry", ge=0)
    gap_room_days: int = knob("events are re-dated inside their phases so that no stretch longer than max_gap_days "
                              "minus this is without one (a trace may come max_delay_hours after its event)", ge=0)
    fill_gaps: bool = knob("a stretch still too long after re-dating gets small everyday events (one call each)")
    travel_seeds: list[str] = knob("seed names of major events during which the person travels (gaps allowed)")
    date_words: list[str] = knob("an event whose title or description names one of these (or a calendar date, or a "
                                 "public holiday of the persona's country) keeps its day when events are re-dated")
    registry_days: int = knob("the registry a prompt shows: whom the moment names, then those seen in the last this "
                              "many days, most recent first (synth.life.registry_view)", ge=0)
    registry_tokens: int = knob("... while their lines fit in this many tokens", ge=0)


class TracesSettings(Section):
    """The traces stage: the digital traces (diary, posts, messages…) written from the events' evidence."""

    ordered = (("min_words", "max_words"),)
    traces_per_event: int = knob("traces planned per event", ge=1)
    min_words: int = knob("a trace's length in words at least", ge=1)
    max_words: int = knob("a trace's length in words at most", ge=1)
    max_delay_hours: int = knob("a trace is written at most this long after its event", ge=0)
    zh_chars_per_word: float = knob("Chinese length limits are characters: the word limits times this", gt=0)
    voice_examples: int = knob("the person's latest traces of the same medium shown to the writer as a voice "
                               "reference", ge=0)
    voice_chars: int = knob("each voice example cut to this many characters", ge=1)
    voice_wave_days: int = knob("the voice reference comes from an earlier stretch of this many days (counted from "
                                "the timeline's start): traces of one stretch do not read each other, so they are "
                                "written side by side; a trace waits only for the traces it reads", ge=1)
    registry_days: int = knob("the registry a prompt shows: whom the moment names, then those seen in the last this "
                              "many days, most recent first (synth.life.registry_view)", ge=0)
    registry_tokens: int = knob("... while their lines fit in this many tokens", ge=0)
    medium_words: dict[str, tuple[int, int]] = knob(
        "a medium's own length band [low, high] in words (Chinese: characters, times zh_chars_per_word): a Moments "
        "post is not a diary; a medium not listed gets min_words..max_words. The writer sees this band as its one "
        "length rule")
    media: dict[Language, dict[str, float]] = knob(
        "per language: relative weights of the media mix, a target over the persona's traces (the planner chooses "
        "each trace's medium from the evidence's privacy and the person's habits)")
    public_media: list[str] = knob("media anyone may read: they never carry or repeat evidence marked private")
    work_media: list[str] = knob("media of a workplace (DingTalk/WeCom): never hinted for a rest day or public "
                                 "holiday without a colleague, and out of the mix of a persona without a workplace")
    no_workplace_words: list[str] = knob("words of an occupation without a workplace chat (a student, a retiree): "
                                         "such a persona's media mix has no work medium")
    terse_media: list[str] = knob("media of bare lines (a to-do, a calendar slot, a search): never hinted for "
                                  "evidence that quotes words said or written")
    typed_media: list[str] = knob("media of typed conversation (a message thread, WeChat): never hinted for "
                                  "evidence of words said aloud (`said_words`) unless it says they were typed "
                                  "(`typed_words`): a thread may only retell them")
    said_words: list[str] = knob("words by which an evidence says it holds words said aloud (\"said to\", "
                                 "\"over dinner\", \"当面\")")
    typed_words: list[str] = knob("words by which an evidence says its words were typed or written (\"texted\", "
                                  "\"发消息\"): such words may stand in a thread")
    addressed_media: list[str] = knob("media written to someone (an email, a chat): never hinted for private "
                                      "evidence that names no one close to tell it to, or says it was kept from "
                                      "others")
    close_words: list[str] = knob("words of a relation one writes private things to, besides family ([chats] "
                                  "family_words): a friend, a partner. Private evidence naming only others (a "
                                  "colleague, a doctor, a landlord) names no one close")
    concealed_words: list[str] = knob("words by which private evidence says it was kept from others (\"told no "
                                      "one\", \"瞒着\"): never hinted to a medium written to someone")
    posted: dict[str, list[str]] = knob("medium -> words by which an evidence says where it was itself written "
                                        "(\"发了一条朋友圈\", \"wrote in his build log\"): its trace is hinted to "
                                        "that medium, not to one it was never written in")
    leak_overlap: float = knob("share of a private statement's distinctive terms in a public trace that reveals it",
                               gt=0, le=1)
    leak_min_matches: int = knob("... and at least this many of them (English words, Chinese character bigrams)",
                                 ge=1)
    leak_common_share: float = knob("a term in more than this share of the persona's statements is not distinctive",
                                    gt=0, le=1)
    privacy_repairs: int = knob("re-plans, then rewrites, of a trace that reveals a private statement", ge=0)
    privacy_lookback_days: int = knob("a private statement of an earlier phase still counts this long (its own "
                                      "phase's: always)", ge=0)
    privacy_judge: bool = knob("a judge also reads each public trace against the private statements it could give "
                               "away; a paraphrase the word check misses is rewritten too")
    privacy_judge_statements: int = knob("the judge reads at most this many private statements (its phase's first, "
                                         "then the newest)", ge=1)
    write_together: bool = knob("an event with several traces has them written in one call (the moment sent once, "
                                "not once a trace); a trace that leaks a private statement is still re-written alone. "
                                "false: one call per trace")

    @model_validator(mode="after")
    def _some_medium(self) -> "TracesSettings":
        for language, weights in self.media.items():
            if not any(w > 0 for w in weights.values()):
                raise ValueError(f"media.{language}: at least one medium needs a positive weight")
        return self


class ChatsSettings(Section):
    """`synth chats`: group-chat days of the persona's family, work and friends groups."""

    ordered = (("min_utterances", "max_utterances"),)
    max_days_per_group: int = knob("active days generated per group (0 = every active day: a day with an event a "
                                   "member takes part in)", ge=0)
    max_groups: int = knob("groups with an active day that get chats, in family, work, friends order (0 = all)", ge=0)
    min_utterances: int = knob("utterances per chat day at least", ge=1)
    max_utterances: int = knob("utterances per chat day at most", ge=1)
    summary_days: int = knob("the rolling weekly state shows the group's last this-many day summaries", ge=0)
    monthly_summaries: int = knob("... and the summaries of this many months before", ge=0)
    judge: bool = knob("validation levels 2-4 (completion, logic against the summaries, persona and style fit): a "
                       "model call per day; level 1 always runs")
    max_repairs: int = knob("repair rounds a day may take; after them it is flagged (kept, counted)", ge=0, le=2)
    family_words: list[str] = knob("relation words (lower case) that put a relation into the family group")
    work_words: list[str] = knob("relation words (lower case) that put a relation into the work group; the rest "
                                 "are friends")


class LifelogSettings(Section):
    """`synth lifelog`: spoken dialogues around the events (LifeDialBench-style), after an optional day plan."""

    ordered = (("min_lines", "max_lines"),)
    minutes: int = knob("an event's dialogue runs from its start for this long", ge=1)
    max_events: int = knob("events (with evidence, oldest first) that get a dialogue (0 = every one)", ge=0)
    min_lines: int = knob("lines per dialogue at least", ge=1)
    max_lines: int = knob("lines per dialogue at most", ge=1)
    max_repairs: int = knob("re-asks when the model-free checks fail; after them the dialogue is flagged", ge=0, le=2)
    similar_events: int = knob("the repetition check compares with this many most similar earlier events", ge=0)
    repetition_threshold: float = knob("word-overlap similarity above which a dialogue repeats an earlier one",
                                       ge=0, le=1)
    bystander: dict[Language, str] = knob("per language: the speaker label of a stranger overheard")
    plan: bool = knob("the year → month → week → day plan the dialogues follow (lifelog_plan.jsonl)")
    plan_max_items: int = knob("items on a day's agenda at most", ge=1)
    plan_event_slack_minutes: int = knob("a day's agenda places each event within this many minutes of its time",
                                         ge=0)


RelationKey = Literal["complementary_all", "complementary_any", "nuanced_temporal", "nuanced_contextual",
                      "contradictory"]


class VariantsSettings(Section):
    """`synth variants`: SubtleMemory's relation-controlled variant sets, each variant hidden in its own session."""

    ordered = (("min_words", "max_words"),)
    seeds_per_relation: dict[RelationKey, Annotated[int, Field(ge=0)]] = knob(
        "per relation type: seed facts from the persona's evidence that get a variant set (0 = none)")
    set_size: dict[RelationKey, Annotated[int, Field(ge=2, le=4)]] = knob(
        "per relation type: variants (hence sessions) per set")
    min_gap_days: int = knob("two sessions of one set are at least this many days apart", ge=1)
    max_ask_delay_days: int = knob("the query is asked 1..N days after the set's last session", ge=1)
    min_words: int = knob("a session's length in words at least (Chinese: characters, times "
                          "traces.zh_chars_per_word)", ge=1)
    max_words: int = knob("a session's length in words at most", ge=1)
    max_repairs: int = knob("rewrites of a session that is too hidden or too explicit; then the set is rejected",
                            ge=0, le=2)
    min_query_keywords: int = knob("the model-free \"all keywords in one session\" check applies to a query with at "
                                   "least this many keywords", ge=1)
    recency_words: dict[Language, list[str]] = knob("a query with one of these lets session order (the latest one) "
                                                    "decide the answer: rejected")
    visible_overlap: float = knob("visible-only, model-free: a no-context answer sharing this share of an accepted "
                                  "answer's content words is rejected", gt=0, le=1)


class PromptsSettings(Section):
    """Trace excerpts in the prompts of the qa, distractors and filter stages (one value for all three)."""

    trace_chars: int = knob("a trace excerpt's length in characters", ge=1)
    max_prompt_traces: int = knob("full-length excerpts in one prompt; when more traces are needed all are shown, "
                                  "each shortened to share max_prompt_traces × trace_chars", ge=0)


class QASettings(Section):
    """The qa stage: questions planned over sliding windows of each arc, then written."""

    window_days: int = knob("a question's window of the timeline in days", ge=1)
    stride_days: int = knob("windows start this many days apart", ge=1)
    types: Annotated[list[str], AfterValidator(question_types.check_qa_types)] = knob(
        "the question types the qa stage makes (registered types: synth.config.question_types; an unknown one is an "
        "error)")
    target_per_type: int = knob("questions kept per type", ge=0)
    plans_per_type: int = knob("planning calls per type (spread over the active segments)", ge=0)
    max_segment_evidence: int = knob("at most this many evidence of a segment go into the plan prompt, chosen over "
                                     "the arc's whole span", ge=1)
    planned_tokens: int = knob("the plans of earlier types on the arc a plan prompt shows (those sharing its "
                               "evidence, the most shared first) fit in this many tokens", ge=0)
    question_grace_days: int = knob("a question may be asked this many days after the timeline ends", ge=0)
    max_question_delay_days: int = knob("the plan's ask_after_days maximum (days after the newest needed trace)",
                                        ge=0)
    max_answer_chars: dict[Language, int] = knob("per language: the longest answer in characters (four distractors "
                                                 "of its length must fit one answer)")
    duration_min_days: int = knob("temporal_duration: the two moments are at least this many days apart", ge=1)
    duration_unit: dict[Language, str] = knob("temporal_duration: per language, the unit of its answer "
                                              "\"<days> <unit>\"")
    profile_min_days: int = knob("profile_style: a member is asked about when they spoke on at least this many chat "
                                 "days", ge=1)
    profile_dimensions: int = knob("profile_style: an item tests the member's this-many most marked style "
                                   "dimensions", ge=1, le=8)
    profile_lines: int = knob("profile_style: the member's newest lines the writer sees (the style's evidence)", ge=1)
    profile_rewrites: int = knob("profile_style: re-asks showing what the model-free fact × style check found", ge=0)
    standalone_rewrites: int = knob("an answerable question a no-context reader answers (a judge finds its answer "
                                    "matches the reference) is written again, showing what it gave away, at most this "
                                    "many times", ge=0)


class McqSettings(Section):
    """The multiple-choice items' shape, shared by distractors (which write toward it) and filter (which rejects
    off it), and what their judges read for an unanswerable item."""

    length_ratio: float = knob("the correct option may be at most this much longer than the longest distractor",
                               gt=0)
    centrality_margin: float = knob("the key may not be the most central option (mean word overlap with the other "
                                    "A-D) by this margin or more: distractors rewrite, filter rejects", ge=0, le=1)
    related_traces: int = knob("unanswerable items: the traces most related to the question (BM25, up to its time) "
                               "that the judges read", ge=0)
    entity_margin: int = knob("the key may not share this many more people/places with the other options than the "
                              "next option does (the entity centroid readers spot): distractors re-render, filter "
                              "rejects (0: no check)", ge=0)


class DistractorsSettings(Section):
    """The distractors stage: the wrong options of each question, refined until a judge finds exactly one right."""

    rounds: int = knob("refinement rounds at most", ge=1)
    verify: bool = knob("a judge with the evidence and traces confirms exactly one option is right")
    neutral_question: bool = knob("before options are rendered from seeds, one call rewrites the question, blind to "
                                  "the key, so that each of the four sets answers it equally well (a question written "
                                  "from the key fits only the key); the rewrite is asked in both formats")
    redraw: bool = knob("after a round whose no-context validator picked the key, the next round draws new "
                        "distractor seeds (those of the lost round left out) instead of re-rendering the same four: "
                        "what the reader found was the fit of the life's sets to the question, not their wording")
    balance: bool = knob("the three distractor seeds are chosen among the life's fitting sets (up to eight) so that "
                         "the key's set is not the most central of the four by shared words or shared people (each "
                         "set is chosen for what it shares with the key, so three taken in order meet at the key: a "
                         "reader without the records picks the centroid); counter-seeds are written two more than "
                         "needed and chosen the same way; off: the first three in the type's order, and as many "
                         "counter-seeds as needed")
    option_chars: dict[Language, int] = knob("per language: an option rendered from seeds is asked for 75-125% of "
                                             "the reference answer's length, that length taken at most this long "
                                             "(one point per option, not the records' list)")


class FilterSettings(Section):
    """The filter stage: model-free rules and judges that reject items a memory-less model could answer."""

    dedup_threshold: float = knob("normalised similarity above which two questions are near-duplicates", ge=0, le=1)
    cross_type_evidence_jaccard: float = knob("two items of different types whose evidence sets overlap at least "
                                              "this much (Jaccard of evidence ids) ...", ge=0, le=1)
    cross_type_answer_overlap: float = knob("... and whose answers overlap at least this much (Jaccard of words; "
                                            "Chinese: character bigrams) test one memory twice: the item of the "
                                            "rarer type is kept", ge=0, le=1)
    blind_samples: int = knob("the no-context judge answers this many times (options in a different order each); "
                              "with the refinement validator's last pick a majority for the key rejects", ge=1, le=8)
    blind_unanswerable: bool = knob("unanswerable items take the blind test too (E must not be the pick because A-D "
                                    "are oddly specific)")
    min_span_days: int = knob("comparison and trajectory items: their traces span at least this many days (the major-"
                              "event plan asks for two changes of one arc this far apart)", ge=0)
    single_trace_max: int = knob("multi-point items: a judge sees one needed trace at a time, at most this many "
                                 "(newest first)", ge=0)
    single_trace_confidence: float = knob("... and a pick of the key from one trace at this confidence rejects",
                                          ge=0, le=1)
    min_option_chars: dict[Language, int] = knob("per language: an A-D option shorter than this (trimmed) is a stub "
                                                 "that gives the item away")
    sufficiency_max_evidence: int = knob("the sufficiency judge reads at most this many evidence statements", ge=1)
    open_blind: bool = knob("the open question stands on its own: a no-context reader answers it in free text and a "
                            "judge's match with the reference rejects the open form")
    choices_only: bool = knob("a reader shown the options without the question picks one (Balepur et al., 2024): "
                              "reported, not used to reject")
    unique_traces: int = knob("the uniqueness judge reads this many other traces most related to an answerable "
                              "question and rejects it when one answers it differently (0: no check)", ge=0)


class TranslateSettings(Section):
    """Release languages: the structure is generated once, traces and items are translated under the same ids."""

    languages: list[Language] = knob("the languages every persona is released in, its own included ([] = each "
                                     "persona file's `languages`, else its own only); `--languages en,zh` sets it")
