"""Scoring memory systems on synth, CloneMem, LongMemEval or LoCoMo data: loader, systems, metrics, and the `synth eval` runner."""

from synth.eval.data import EvalPersona, EvalQuestion, EvalSet, EvalTrace, load_eval_set
from synth.eval.metrics import METRICS, parse_choice, recall_scores
from synth.eval.systems import MemorySystem

__all__ = ["EvalPersona", "EvalQuestion", "EvalSet", "EvalTrace", "load_eval_set", "METRICS", "parse_choice",
           "recall_scores", "MemorySystem"]
