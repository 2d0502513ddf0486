"""The question-type registry: one spec per type, which every stage, check, export and label iterates over.

A spec declares what is static about a type (its family, the arcs' dimensions it is asked on, how much evidence a
trajectory segment must hold for it, whether it is answerable, which filter rules apply, the templates its items
are written with, its native labels) and carries the behaviours the higher layers attach beside their own code:
`make` (the `qa` stage's item maker), `filter_rule` (a model-free filter) and `validate_check` (a `synth validate`
check). The records layer and `[qa] types` are checked against it, so the built-in specs live here, below both;
a new type registers its whole spec, behaviours included, in one module (docs/question-types.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

Family = Literal["clonemem", "extra", "relation"]
DIMENSIONS = ("experience", "emotion", "opinion")


@dataclass(frozen=True)
class QuestionTypeSpec:
    """One question type. `make` is None for a type planned over trajectory segments (qa_plan → qa_write);
    otherwise `await make(ctx, planner)` returns its items from the qa stage's context (synth.stages.qa.Planner).
    `filter_rule` is (filter name, check(item, traces) → reason, '' passes), run on this type's items only; the
    name joins the filter stage's verdicts. `validate_check(validator, file name, record)` flags a record of this
    type in `synth validate` (synth.quality.validate.Validator)."""

    name: str
    family: Family
    dimensions: tuple[str, ...] = DIMENSIONS  # the arcs' dimensions its items may be filed under
    min_evidence: int = 1  # a trajectory segment must hold this much evidence for the type to be plannable
    min_days: int = 1  # ... on this many different days
    answerable: bool = True  # False: the key is "cannot be determined" (option E)
    multi_point: bool = False  # its answer needs several traces: each alone is tested (filter single_point)
    spanning: bool = False  # its traces must span [filter] min_span_days (filter multi_point_span)
    made_by: str = "qa"  # the stage that makes its items (`[qa] types` lists only the qa stage's)
    templates: tuple[str, ...] = ()  # the templates its `make` writes with (beyond qa_plan and qa_write)
    labels: dict[str, str] = field(default_factory=dict)  # native names by language (built-ins: labels.toml)
    make: Callable[..., Any] | None = None
    filter_rule: tuple[str, Callable[..., str]] | None = None
    validate_check: Callable[..., None] | None = None


def _builtins() -> dict[str, QuestionTypeSpec]:
    clonemem = [
        QuestionTypeSpec("factual", "clonemem"),
        QuestionTypeSpec("comparison", "clonemem", min_evidence=2, min_days=2, multi_point=True, spanning=True),
        QuestionTypeSpec("trajectory", "clonemem", min_evidence=3, min_days=2, multi_point=True, spanning=True),
        QuestionTypeSpec("pattern", "clonemem", min_evidence=2, min_days=2, multi_point=True),
        QuestionTypeSpec("causal", "clonemem", min_evidence=2, multi_point=True),
        QuestionTypeSpec("counterfactual", "clonemem", multi_point=True),
        QuestionTypeSpec("inference", "clonemem", min_evidence=2, multi_point=True),
        QuestionTypeSpec("unanswerable", "clonemem", answerable=False),
    ]
    # EverMemBench's temporal duration and profile (style) questions, and questions that need a written and a
    # spoken trace together: made only when `[qa] types` lists them (their makers attach in synth.stages.qa)
    extra = [
        QuestionTypeSpec("temporal_duration", "extra", multi_point=True, templates=("qa_duration.j2",)),
        QuestionTypeSpec("profile_style", "extra", templates=("qa_profile.j2",)),
        QuestionTypeSpec("written_spoken", "extra", multi_point=True, templates=("qa_mixed.j2",)),
    ]
    # SubtleMemory's relation types, made by the variants stage; those needing every variant (complementary all)
    # or the conflict between them (contradictory) must not be answerable from one session alone
    relation = [
        QuestionTypeSpec("relation_complementary_all", "relation", multi_point=True, made_by="variants"),
        QuestionTypeSpec("relation_complementary_any", "relation", made_by="variants"),
        QuestionTypeSpec("relation_nuanced_temporal", "relation", made_by="variants"),
        QuestionTypeSpec("relation_nuanced_contextual", "relation", made_by="variants"),
        QuestionTypeSpec("relation_contradictory", "relation", multi_point=True, made_by="variants"),
    ]
    return {spec.name: spec for spec in [*clonemem, *extra, *relation]}


_REGISTRY: dict[str, QuestionTypeSpec] = _builtins()


def register(spec: QuestionTypeSpec) -> QuestionTypeSpec:
    """Add a type (after the built-ins, in registration order); a name registered already is refused."""
    if spec.name in _REGISTRY:
        raise ValueError(f"question type {spec.name!r} is registered already")
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


@contextmanager
def registered(spec: QuestionTypeSpec) -> Iterator[QuestionTypeSpec]:
    """The type registered for the duration of a `with` block (tests)."""
    register(spec)
    try:
        yield spec
    finally:
        unregister(spec.name)


def attach(name: str, **behaviours: Any) -> QuestionTypeSpec:
    """A layer above hands a built-in type its behaviour (`make`, `filter_rule`, `validate_check`) beside its own
    code; the spec keeps its place in the order."""
    _REGISTRY[name] = dataclasses.replace(_REGISTRY[name], **behaviours)
    return _REGISTRY[name]


def get(name: str) -> QuestionTypeSpec | None:
    return _REGISTRY.get(name)


def specs(family: Family | None = None, made_by: str | None = None) -> list[QuestionTypeSpec]:
    """The registered specs in order (built-ins first), optionally of one family or one making stage."""
    return [s for s in _REGISTRY.values()
            if (family is None or s.family == family) and (made_by is None or s.made_by == made_by)]


def names(family: Family | None = None, made_by: str | None = None) -> tuple[str, ...]:
    return tuple(s.name for s in specs(family, made_by))


def answerable(name: str) -> bool:
    """Whether an item of this type has a right answer in the records (an unknown name: yes)."""
    spec = _REGISTRY.get(name)
    return spec.answerable if spec is not None else True


def spanning(name: str) -> bool:
    """Whether an item of this type compares points in time, so its traces must span [filter] min_span_days."""
    spec = _REGISTRY.get(name)
    return spec is not None and spec.spanning


def check_known(name: str) -> str:
    """A record's question type must be registered (pydantic validator of QA.question_type)."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown question type {name!r} (registered: {', '.join(_REGISTRY)})")
    return name


def check_qa_types(types: Iterable[str]) -> list[str]:
    """`[qa] types`: every name must be a type the qa stage makes; the first that is not is named."""
    known = names(made_by="qa")
    for name in types:
        if name not in known:
            other = _REGISTRY.get(name)
            why = (f"made by the {other.made_by} stage, not qa" if other is not None
                   else "unknown question type")
            raise ValueError(f"{name!r}: {why} (the qa stage makes: {', '.join(known)})")
    return list(types)
