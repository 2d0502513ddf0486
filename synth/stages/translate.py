"""Stage translate: one life in two languages — every trace and final item in each other release language, under
the same ids, from the one structure (persona, arcs, phases, events, evidence) generated in the persona's language.

The model translates texts only; code keeps the structure: the options' letters and key, the evidence ids, the
trace ids, and option E (the fixed "cannot be determined" text of the target language). A translation that is not
in the target language, or that drops a name the source used (names are never translated), is asked again."""

from __future__ import annotations

import re
from functools import partial

from pydantic import BaseModel, Field, create_model

from synth.config.settings import TranslateSettings
from synth.engine.stage import Records, Stage, StageContext
from synth.quality.translation import structure_problem
from synth.records import CANNOT_DETERMINE, Choice, FinalItem, Persona, Trace, TranslatedEvidence, Translation, mint_id
from synth.stages.common import answer_tokens

_CJK = re.compile(r"[\u4e00-\u9fff]")


class TraceText(BaseModel):
    content: str = Field(min_length=1)


def item_model(options: int, evidence: int) -> type[BaseModel]:
    """The item answer: its texts in order, as many options and evidence statements as the source has."""
    return create_model(
        "ItemTranslation",
        question=(str, Field(min_length=1)), answer=(str, Field(min_length=1)),
        options=(list[str], Field(min_length=options, max_length=options)),
        evidence=(list[str], Field(min_length=evidence, max_length=evidence)),
    )


def target_languages(section: TranslateSettings, persona: Persona) -> list[str]:
    return [language for language in dict.fromkeys(section.languages) if language != persona.language]


def kept_names(persona: Persona) -> list[str]:
    """Names that stay as written in every language: the persona's and their people's."""
    return list(dict.fromkeys([persona.name, *(r.name for r in persona.relations)]))


def language_problem(texts: list[str], language: str, names: list[str]) -> str:
    """Model-free: the text (names removed) is in the target language — Chinese has Chinese characters, English has
    none."""
    body = " ".join(texts)
    for name in names:
        body = body.replace(name, " ")
    cjk = len(_CJK.findall(body))
    if language == "zh" and cjk == 0:
        return "the translation has no Chinese: write it in Simplified Chinese"
    if language == "en" and cjk:
        return f"the translation still has {cjk} Chinese character(s) outside the names: write it in English"
    return ""


def names_problem(source: list[str], translated: list[str], names: list[str]) -> str:
    """Model-free: every name the source uses appears unchanged in the translation."""
    before, after = " ".join(source), " ".join(translated)
    lost = [n for n in names if n and n in before and n not in after]
    return f"keep these names exactly as written: {', '.join(lost)}" if lost else ""


def _checker(source: list[str], language: str, names: list[str], texts_of):
    def check(answer: BaseModel) -> None:
        texts = texts_of(answer)
        problem = language_problem(texts, language, names) or names_problem(source, texts, names)
        if problem:
            raise ValueError(problem)
    return check


def translated_choices(item: FinalItem, options: list[str], language: str, source_language: str) -> list[Choice]:
    """The item's letters and order with the translated texts; option E is the target language's fixed text."""
    texts = iter(options)
    fixed = CANNOT_DETERMINE[source_language]
    return [Choice(id=c.id, text=CANNOT_DETERMINE[language] if c.text == fixed else next(texts))
            for c in item.choices]


class Translator:
    """The translation units of one persona: one per (trace or item, target language)."""

    def __init__(self, ctx: StageContext) -> None:
        self.ctx = ctx
        self.persona: Persona = ctx.persona
        self.names = kept_names(self.persona)

    def _used(self, *texts: str) -> tuple[str, ...]:
        """The kept names the source uses: the ones `names_problem` holds the translation to."""
        joined = " ".join(texts)
        return tuple(n for n in self.names if n and n in joined)

    def _base(self, language: str) -> dict:
        return {"language": language, "name": self.persona.name, "names": self.names,
                "source_language": self.persona.language}

    async def trace(self, trace: Trace, language: str) -> Records:
        check = _checker([trace.content], language, self.names, lambda a: [a.content])
        answer = await self.ctx.ask("translate_trace", "translate_trace.j2",
                                    {**self._base(language), "medium": trace.medium, "content": trace.content},
                                    TraceText, check=check, max_tokens=answer_tokens(self.ctx, 2 * len(trace.content)),
                                    keep=self._used(trace.content))
        record = Translation(id=mint_id(trace.id, "translation", language), persona_id=self.persona.id,
                             language=language, kind="trace", source_id=trace.id, content=answer.content)
        return {"translations.jsonl": [record]}

    async def item(self, item: FinalItem, language: str) -> Records:
        fixed = CANNOT_DETERMINE[self.persona.language]
        options = [c.text for c in item.choices if c.text != fixed]
        statements = [e.statement for e in item.evidence]
        source = [item.question, item.answer, *options, *statements]
        check = _checker(source, language, self.names,
                         lambda a: [a.question, a.answer, *a.options, *a.evidence])
        answer = await self.ctx.ask("translate_item", "translate_item.j2",
                                    {**self._base(language), "question": item.question, "answer": item.answer,
                                     "choices": options, "evidence": statements},
                                    item_model(len(options), len(statements)), check=check,
                                    keep=self._used(*source))
        record = Translation(
            id=mint_id(item.id, "translation", language), persona_id=self.persona.id, language=language, kind="item",
            source_id=item.id, question=answer.question, answer=answer.answer,
            choices=translated_choices(item, answer.options, language, self.persona.language),
            evidence=[TranslatedEvidence(evidence_id=e.evidence_id, statement=text)
                      for e, text in zip(item.evidence, answer.evidence, strict=True)],
        )
        problem = structure_problem(item, record)
        if problem:  # code builds the structure; a mismatch here is a bug, not a model error
            raise AssertionError(f"{item.id}: {problem}")
        return {"translations.jsonl": [record]}


async def run(ctx: StageContext) -> dict[str, list]:
    translator = Translator(ctx)
    languages = target_languages(ctx.section, translator.persona)
    traces: list[Trace] = ctx.traces
    items: list[FinalItem] = ctx.read("final.jsonl")
    units = [(f"trace/{language}/{t.id}", partial(translator.trace, t, language))
             for language in languages for t in traces]
    units += [(f"item/{language}/{i.id}", partial(translator.item, i, language))
              for language in languages for i in items]
    await ctx.units(units)
    return None  # the journaled records, in unit order


STAGE = Stage(
    name="translate",
    reads=("persona.jsonl", "traces.jsonl", "final.jsonl"),
    writes=("translations.jsonl",),
    templates=("translate_trace.j2", "translate_item.j2"),
    tasks=("translate_trace", "translate_item"),
    body=run,
    help="translations.jsonl: traces and final items in each other release language, under the same ids.",
)
