"""The records of the output layout (DESIGN.md), as pydantic models with extra fields forbidden: one module per
family (the life, the spoken sources, the question items, the manifest), all re-exported here."""

from __future__ import annotations

from synth.config.personas import BigFive  # noqa: F401  (one definition: the seed's, re-exported for the records)
from synth.records.items import (  # noqa: F401  (re-exported: every reader imports records from here)
    MCQ,
    PROFILE_CELLS,
    QA,
    Choice,
    EvidenceRef,
    FilterVerdict,
    FinalItem,
    OptionSeed,
    Profile,
    ProfileCell,
    ProfileOption,
    RefinementRound,
    Rejected,
    TranslatedEvidence,
    Translation,
)
from synth.records.manifest import (  # noqa: F401  (re-exported: every reader imports records from here)
    StageManifest,
)
from synth.records.record import (  # noqa: F401  (re-exported: every reader imports records from here)
    _NAMESPACE,
    CANNOT_DETERMINE,
    CHOICE_IDS,
    DIMENSIONS,
    EXTRA_TYPES,
    QUESTION_TYPES,
    RELATION_TYPES,
    Dimension,
    EvidenceKind,
    QuestionType,
    Record,
    RelationType,
    mint_id,
)
from synth.records.sources import (  # noqa: F401  (re-exported: every reader imports records from here)
    SPOKEN_MEDIA,
    STYLE_DIMENSIONS,
    AgendaItem,
    ChatDay,
    Group,
    GroupMember,
    LifelogDialogue,
    LifelogPlan,
    Repair,
    SessionCheck,
    SpokenCheck,
    Utterance,
    Variant,
    VariantSet,
)
from synth.records.timeline import (  # noqa: F401  (re-exported: every reader imports records from here)
    AnchorState,
    ArcState,
    Event,
    EventSeed,
    Evidence,
    LifeArc,
    MajorEvent,
    Person,
    Persona,
    Phase,
    Relation,
    Snapshot,
    Trace,
)

REVIEW_FILE = "review_verdicts.jsonl"  # written by `synth review --import`; human rejections survive a re-run
FILES: dict[str, type[Record]] = {
    "persona.jsonl": Persona,
    "seeds.jsonl": EventSeed,
    "arcs.jsonl": LifeArc,
    "major_events.jsonl": MajorEvent,
    "phases.jsonl": Phase,
    "phase_people.jsonl": Person,  # the registry as the phases left it (the events stage adds its own newcomers)
    "people.jsonl": Person,
    "events.jsonl": Event,
    "evidence.jsonl": Evidence,
    "groups.jsonl": Group,
    "chats.jsonl": ChatDay,
    "lifelog.jsonl": LifelogDialogue,
    "lifelog_plan.jsonl": LifelogPlan,
    "variants.jsonl": VariantSet,
    "traces.jsonl": Trace,
    "qa.jsonl": QA,
    "mcq.jsonl": MCQ,
    "final.jsonl": FinalItem,
    "rejected.jsonl": Rejected,
    "translations.jsonl": Translation,
}
