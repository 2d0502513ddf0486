"""Scoring one question: the answerer's and the judge's calls, the per-question result row, and results.jsonl."""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, create_model

from synth.config import conf
from synth.config.prompts import render
from synth.core.tokens import estimate_tokens
from synth.eval.data import EvalPersona, EvalQuestion, EvalTrace
from synth.eval.metrics import parse_choice, recall_scores
from synth.eval.protocol import Retrieval
from synth.life.relations import RelationVerdict, judge_variables
from synth.llm.base import GenerationFailed, GenerationSettings, LLMRequest
from synth.llm.client import LLM, CallStats

TASKS = ("eval_answer_free", "eval_answer_choice", "eval_judge_memory", "eval_judge_consistency",
         "eval_judge_relation")
WATERFALL = ("oracle", "perfect", "default")  # SubtleMemory's evidence settings, from the most given to the least


# ---- output schemas -------------------------------------------------------------------------------------------


class FreeAnswer(BaseModel):
    answer: str


@functools.lru_cache(maxsize=8)
def choice_model(letters: tuple[str, ...]) -> type[BaseModel]:
    """{"choice": one of the question's letters, "answer": a short reason}."""
    return create_model("ChoiceAnswer", choice=(Literal[letters], ...), answer=(str, ...))


@functools.lru_cache(maxsize=64)
def memory_judge_model(items: int) -> type[BaseModel]:
    """The memory judge's verdict; covered item numbers are bounded by the number of ground-truth items."""
    fields: dict = {"reason": (str, ...)}
    if items:
        fields["covered_items"] = (list[Annotated[int, Field(ge=1, le=items)]], ...)
    fields["helpfulness"] = (int, Field(ge=0, le=2))
    return create_model(f"MemoryJudgement{items}", **fields)


class ConsistencyJudgement(BaseModel):
    reason: str
    truthfulness: Literal[0, 1]
    consistency: int = Field(ge=0, le=3)


# ---- answering and judging -----------------------------------------------------------------------------------


@dataclass
class Scorer:
    llm: LLM
    answerer: conf.Route
    judge: conf.Route
    settings: dict
    persona: EvalPersona
    by_id: dict[str, EvalTrace]

    def _context(self, ids: list[str]) -> list[dict]:
        """Retrieved traces within the context budget (best first), shown in time order."""
        chosen, spent = [], 0
        for tid in ids:
            trace = self.by_id.get(tid)
            if trace is None:
                continue
            tokens = estimate_tokens(trace.content)
            if chosen and spent + tokens > int(self.settings["context_tokens"]):
                break
            chosen.append(trace)
            spent += tokens
        chosen.sort(key=lambda t: (t.time is not None, t.time or dt.datetime.min))
        return [{"time": t.event_date or (t.time.isoformat(sep=" ") if t.time else ""), "medium": t.medium,
                 "content": t.content} for t in chosen]

    async def _ask(self, route, task: str, template: str, variables: dict, model: type[BaseModel],
                   stats: CallStats, judge: bool) -> BaseModel:
        prefix = "judge" if judge else "answer"
        request = LLMRequest(
            task=task,
            messages=render(template, language=self.persona.language, name=self.persona.name, **variables),
            json_schema=model.model_json_schema(),
            settings=GenerationSettings(temperature=float(self.settings[f"{prefix}_temperature"]),
                              max_tokens=int(self.settings[f"{prefix}_max_tokens"])),
        )
        return await self.llm.generate(route, request, model, stats, language=self.persona.language)

    async def score(self, r: Retrieval) -> dict:
        q = r.question
        stats = CallStats()
        traces = self._context(r.retrieved)
        base = {"question": q.question, "question_time": q.time_text, "traces": traces, "notes": r.notes}
        started = time.perf_counter()

        async def free() -> str:
            if r.system_answer is not None:
                return r.system_answer
            out = await self._ask(self.answerer, "eval_answer_free", "eval_answer_free.j2", base, FreeAnswer,
                                  stats, judge=False)
            return out.answer

        async def choose() -> tuple[str | None, str | None]:
            if not q.choices:
                return None, None
            if r.system_answer is not None:
                return parse_choice(r.system_answer), r.system_answer
            letters = tuple(sorted({c for c, _ in q.choices}))
            out = await self._ask(self.answerer, "eval_answer_choice", "eval_answer_choice.j2",
                                  {**base, "choices": [{"id": c, "text": t} for c, t in q.choices]},
                                  choice_model(letters), stats, judge=False)
            return out.choice or parse_choice(out.answer), out.answer

        async def judge_memory() -> dict:
            n = len(q.statements)
            out = await self._ask(self.judge, "eval_judge_memory", "eval_judge_memory.j2",
                                  {**base, "answer": q.answer, "statements": list(q.statements)},
                                  memory_judge_model(n), stats, judge=True)
            covered = sorted(set(getattr(out, "covered_items", [])))
            return {"memory_recall": len(covered) / n if n else None, "covered_items": covered,
                    "memory_helpfulness": out.helpfulness, "memory_reason": out.reason}

        (prediction, (letter, choice_text), memory) = await asyncio.gather(free(), choose(), judge_memory())
        answered = time.perf_counter()
        verdict = await self._ask(self.judge, "eval_judge_consistency", "eval_judge_consistency.j2",
                                  {"question": q.question, "statements": list(q.statements), "answer": q.answer,
                                   "prediction": prediction, "unanswerable": q.question_type == "unanswerable"},
                                  ConsistencyJudgement, stats, judge=True)
        # The rubric ties them: a hallucinated answer (truthfulness 0) scores 0 on consistency.
        consistency = 0 if verdict.truthfulness == 0 else verdict.consistency
        relation = await self.relation_waterfall(r, prediction, stats) if q.correct_answers else None
        return {
            "key": q.key, "question_id": q.id, "persona": q.persona, "language": self.persona.language,
            "question_type": q.question_type, "dimension": q.dimension, "question_time": q.time_text,
            "formats": list(q.formats),
            "visible_traces": r.visible, "retrieved": r.retrieved, "retrieved_at_k": r.at_k, "notes": r.notes,
            "dropped_ids": r.dropped, "gold_trace_ids": q.gold_ids,
            "recall": recall_scores(r.at_k, q.evidence_sets),
            "prediction": prediction, "choice_response": choice_text, "chosen": letter,
            "correct_choice_id": q.correct_choice_id,
            "correct": None if not q.choices or not q.correct_choice_id else letter == q.correct_choice_id,
            "judge": {**memory, "truthfulness": verdict.truthfulness, "consistency": consistency,
                      "consistency_reason": verdict.reason},
            "latency_s": {"retrieve": round(r.latency_s, 4), "answer_and_memory_judge": round(answered - started, 3),
                          "total": round(r.latency_s + time.perf_counter() - started, 3)},
            "tokens": {"input": stats.usage.input_tokens, "output": stats.usage.output_tokens,
                       "requests": stats.requests, "cache_hits": stats.cache_hits,
                       "provider_calls": stats.provider_calls},
            "relation": relation,
            "error": None,
        }

    async def relation_waterfall(self, r: Retrieval, prediction: str, stats: CallStats) -> dict:
        """A relation item's free-text answer under SubtleMemory's three evidence settings, each judged CORRECT or
        WRONG against the accepted and known-wrong answers: oracle (the gold sessions, in time order), perfect
        retrieval (the gold sessions plus what the system stored from them, read back by provenance) and default
        (the system's own retrieval: the answer already given)."""
        q = r.question
        gold = self._context(q.gold_ids)
        base = {"question": q.question, "question_time": q.time_text, "traces": gold}

        async def answer(notes: list[str]) -> str:
            out = await self._ask(self.answerer, "eval_answer_free", "eval_answer_free.j2", {**base, "notes": notes},
                                  FreeAnswer, stats, judge=False)
            return out.answer

        oracle, perfect = await asyncio.gather(answer([]), answer(list(r.readback or [])))
        answers = {"oracle": oracle, "perfect": perfect, "default": prediction}
        verdicts = await asyncio.gather(*(
            self._ask(self.judge, "eval_judge_relation", "variants_judge.j2",
                      judge_variables(q.question, q.question_type, answers[s], q.correct_answers, q.wrong_answers),
                      RelationVerdict, stats, judge=True) for s in WATERFALL))
        return {"type": q.question_type,
                **{s: {"answer": answers[s], "label": v.label, "reason": v.reason}
                   for s, v in zip(WATERFALL, verdicts, strict=True)}}


# ---- results file (resumable) --------------------------------------------------------------------------------


def read_results(path: Path) -> dict[str, dict]:
    """Finished rows by key; a half-written last line (a killed run) is dropped, failed rows are retried."""
    rows: dict[str, dict] = {}
    if not path.is_file():
        return rows
    good: list[str] = []
    broken = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            broken = True
            continue
        good.append(line)
        if row.get("error") is None:
            rows[row["key"]] = row
    if broken:
        path.write_text("".join(line + "\n" for line in good), encoding="utf-8")
    return rows


def _failed_row(q: EvalQuestion, cause: str, error: str) -> dict:
    """A question that could not be scored: kept in results.jsonl with its error, retried on the next run."""
    return {"key": q.key, "question_id": q.id, "persona": q.persona, "question_type": q.question_type,
            "dimension": q.dimension, "cause": cause, "error": error}


async def score_all(scorers: dict[str, Scorer], retrievals: list[Retrieval], results_path: Path,
                    concurrency: int, on_done: Callable[[dict], None]) -> dict:
    """Score concurrently; each finished question is appended (and flushed) at once, so a kill loses nothing."""
    gate = asyncio.Semaphore(concurrency * 2)
    calls = {"failed_questions": 0, "requests": 0, "cache_hits": 0, "provider_calls": 0, "input_tokens": 0,
             "output_tokens": 0}
    with results_path.open("a", encoding="utf-8") as handle:

        async def one(r: Retrieval) -> None:
            async with gate:
                if r.error is not None:
                    row = _failed_row(r.question, "system", r.error)
                else:
                    try:
                        row = await scorers[r.question.persona].score(r)
                        for name in ("requests", "cache_hits", "provider_calls"):
                            calls[name] += row["tokens"][name]
                        calls["input_tokens"] += row["tokens"]["input"]
                        calls["output_tokens"] += row["tokens"]["output"]
                    except GenerationFailed as exc:
                        row = _failed_row(r.question, "model", str(exc))
                if row["error"] is not None:
                    calls["failed_questions"] += 1
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            handle.flush()
            on_done(row)

        async with asyncio.TaskGroup() as group:
            for r in retrievals:
                group.create_task(one(r))
    return calls
