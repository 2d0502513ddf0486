"""`tree`: a hierarchical memory after PersonaTree (the PersonaTree paper): leaf events → mid-level patterns → root
traits, each node with a confidence kept in log-odds with decay toward a prior.

Writing is conservative: a new leaf (the LLM's event summary of one trace) attaches to a mid pattern only when the
embedding is close *and* a validator call judges that the leaf supports it; a conflict lowers the pattern's
confidence instead. Every `tree_consolidate_every` leaves a consolidation pass clusters orphan leaves into new mid
patterns (an LLM names the pattern), promotes confident, well-supported mids into root traits, and prunes weak
mids. A query is routed (an LLM picks leaf / mid / root), candidate support paths are scored by similarity and
confidence, and rendered root → mid → leaves at the deepest depth the token budget allows. The leaves on the
rendered paths are the retrieved traces; the root and mid texts are shown to the answerer as notes."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from synth.config.prompts import label
from synth.core.errors import InputError
from synth.core.tokens import estimate_tokens

RELATION_WEIGHT = {"strong_support": 1.0, "weak_support": 0.5, "unrelated": 0.0, "weak_conflict": -0.5,
                   "strong_conflict": -1.0}


class LeafOut(BaseModel):
    summary: str
    scene_tags: list[str] = Field(max_length=4)
    emotion: str


class ValidateOut(BaseModel):
    reason: str
    relation: Literal["strong_support", "weak_support", "unrelated", "weak_conflict", "strong_conflict"]


class MidOut(BaseModel):
    pattern_type: Literal["condition_trigger", "trend_change", "frequency", "continuing_state", "preference"]
    description: str


class RootOut(BaseModel):
    trait_type: Literal["personality", "value", "principle", "identity", "boundary"]
    claim: str


class RouteOut(BaseModel):
    level: Literal["leaf", "mid", "root"]


@dataclass
class Node:
    level: str  # leaf | mid | root
    text: str
    vector: np.ndarray
    log_odds: float
    updated: dt.datetime | None
    trace_id: str = ""  # leaves only
    tags: frozenset[str] = frozenset()
    children: list[int] = field(default_factory=list)  # mid: leaf ids; root: mid ids
    parent: int | None = None
    alive: bool = True

    @property
    def confidence(self) -> float:
        return 1.0 / (1.0 + math.exp(-self.log_odds))


def _when(trace: dict) -> dt.datetime | None:
    from synth.eval.data import parse_time

    return parse_time(trace.get("time") or trace.get("event_date"))


class PersonaTreeSystem:
    def __init__(self, embedder_factory, backbone, settings: dict) -> None:
        if backbone is None or embedder_factory is None:
            raise InputError("--system tree needs the answerer's route (its LLM) and an embedder")
        self.embedder = embedder_factory()
        self.backbone = backbone
        self.s = {key: float(settings[key]) for key in settings if key.startswith("tree_")}
        self.name, self.language = "", "en"
        self.nodes: list[Node] = []
        self.pending: list[dict] = []
        self.since_consolidation = 0
        self.now: dt.datetime | None = None
        self._notes: list[str] = []
        self.routes: dict[str, int] = {"leaf": 0, "mid": 0, "root": 0}

    def set_persona(self, name: str, language: str) -> None:
        self.name, self.language = name, language

    def ingest(self, trace: dict) -> None:
        self.pending.append(trace)

    # ---- writing ---------------------------------------------------------------------------------------------

    def _ask(self, task: str, variables: list[dict], model: type[BaseModel]) -> list[BaseModel | None]:
        common = {"language": self.language, "name": self.name}
        return self.backbone.ask_many(task, f"{task}.j2", [{**common, **v} for v in variables], model, self.language)

    def _typed(self, text: str, code: str, group: str) -> str:
        """A node's text with its type as the tree's later prompts read it: a Chinese prompt shows the native label,
        not the English code."""
        return f"{text}（{label(code, group, 'zh')}）" if self.language == "zh" else f"{text} ({code})"

    def prepare(self) -> None:
        """Leaves for the new traces (one concurrent batch), then each is inserted in time order."""
        if not self.pending:
            return
        traces, self.pending = self.pending, []
        leaves = self._ask("eval_tree_leaf", [{"time": t.get("event_date") or t.get("time") or "",
                                               "medium": t.get("medium", ""), "content": t.get("content", "")[:4000]}
                                              for t in traces], LeafOut)
        texts = [(out.summary if out and out.summary.strip() else t.get("content", "")) for t, out in
                 zip(traces, leaves, strict=True)]
        vectors = self.embedder.passages(texts)
        for trace, out, text, vector in zip(traces, leaves, texts, vectors, strict=True):
            when = _when(trace)
            self.now = max(self.now, when) if self.now and when else (when or self.now)
            tags = frozenset(t.strip().lower() for t in (out.scene_tags if out else []) if t.strip())
            self.nodes.append(Node("leaf", text, vector, self.s["tree_prior_log_odds"], when, trace["id"], tags))
            self._insert(len(self.nodes) - 1)
            self.since_consolidation += 1
            if self.since_consolidation >= self.s["tree_consolidate_every"]:
                self.consolidate()

    def _alive(self, level: str) -> list[int]:
        return [i for i, n in enumerate(self.nodes) if n.alive and n.level == level]

    def _insert(self, leaf_id: int) -> None:
        """Attach a leaf to the best mid that is close enough and that the validator says it supports."""
        leaf = self.nodes[leaf_id]
        mids = self._alive("mid")
        if not mids:
            return
        sims = np.stack([self.nodes[m].vector for m in mids]) @ leaf.vector
        order = [mids[i] for i in np.argsort(-sims)[:int(self.s["tree_validate_candidates"])]
                 if sims[i] >= self.s["tree_link_similarity"]]
        if not order:
            return
        verdicts = self._ask("eval_tree_validate", [{"pattern": self.nodes[m].text, "event": leaf.text}
                                                    for m in order], ValidateOut)
        best, best_score = None, self.s["tree_link_threshold"]
        for mid_id, verdict in zip(order, verdicts, strict=True):
            weight = RELATION_WEIGHT[verdict.relation] if verdict else 0.0
            self._update(mid_id, weight)
            mid = self.nodes[mid_id]
            compatible = not mid.tags or not leaf.tags or bool(mid.tags & leaf.tags) or weight > 0
            score = (0.5 * float(mid.vector @ leaf.vector) + 0.5 * weight) if compatible else 0.0
            if weight > 0 and score >= best_score:
                best, best_score = mid_id, score
        if best is not None:
            leaf.parent = best
            self.nodes[best].children.append(leaf_id)

    def _update(self, node_id: int, evidence: float) -> None:
        """L ← L_base + (L − L_base)·exp(−λ·Δt_days) + ω·evidence (PersonaTree's confidence update)."""
        node = self.nodes[node_id]
        days = (self.now - node.updated).total_seconds() / 86400 if self.now and node.updated else 0.0
        base = self.s["tree_prior_log_odds"]
        node.log_odds = base + (node.log_odds - base) * math.exp(-self.s["tree_decay_per_day"] * max(days, 0.0)) \
            + self.s["tree_evidence_weight"] * evidence
        node.updated = self.now or node.updated

    def consolidate(self) -> None:
        """Orphan leaves → new mids; confident mids → roots; weak mids pruned (their leaves become orphans)."""
        self.since_consolidation = 0
        self._new_mids()
        self._new_roots()
        for mid_id in self._alive("mid"):
            self._update(mid_id, 0.0)
            if self.nodes[mid_id].confidence < self.s["tree_prune_confidence"]:
                self._prune(mid_id)

    def _clusters(self, ids: list[int], threshold: float, minimum: int) -> list[list[int]]:
        """Greedy single-pass clustering by cosine similarity to each cluster's first member."""
        clusters: list[list[int]] = []
        for i in ids:
            for cluster in clusters:
                if float(self.nodes[cluster[0]].vector @ self.nodes[i].vector) >= threshold:
                    cluster.append(i)
                    break
            else:
                clusters.append([i])
        return [c for c in clusters if len(c) >= minimum]

    def _new_mids(self) -> None:
        orphans = [i for i in self._alive("leaf") if self.nodes[i].parent is None]
        clusters = self._clusters(orphans, self.s["tree_cluster_similarity"], int(self.s["tree_min_support"]))
        outs = self._ask("eval_tree_mid", [{"events": [self.nodes[i].text for i in c]} for c in clusters], MidOut)
        for cluster, out in zip(clusters, outs, strict=True):
            if out is None or not out.description.strip():
                continue
            vector = self._mean([self.nodes[i].vector for i in cluster])
            tags = frozenset().union(*(self.nodes[i].tags for i in cluster))
            log_odds = self.s["tree_prior_log_odds"] + self.s["tree_evidence_weight"] * 0.5 * len(cluster)
            text = self._typed(out.description, out.pattern_type, "tree_pattern")
            self.nodes.append(Node("mid", text, vector, log_odds, self.now, tags=tags, children=list(cluster)))
            for i in cluster:
                self.nodes[i].parent = len(self.nodes) - 1

    def _new_roots(self) -> None:
        ready = [m for m in self._alive("mid") if self.nodes[m].parent is None
                 and self.nodes[m].confidence >= self.s["tree_root_confidence"]
                 and len(self.nodes[m].children) >= self.s["tree_min_support"]]
        clusters = self._clusters(ready, self.s["tree_cluster_similarity"], int(self.s["tree_root_min_mids"]))
        outs = self._ask("eval_tree_root", [{"patterns": [self.nodes[m].text for m in c]} for c in clusters], RootOut)
        for cluster, out in zip(clusters, outs, strict=True):
            if out is None or not out.claim.strip():
                continue
            vector = self._mean([self.nodes[m].vector for m in cluster])
            log_odds = max(self.nodes[m].log_odds for m in cluster)
            text = self._typed(out.claim, out.trait_type, "tree_trait")
            self.nodes.append(Node("root", text, vector, log_odds, self.now, children=list(cluster)))
            for m in cluster:
                self.nodes[m].parent = len(self.nodes) - 1

    def _prune(self, mid_id: int) -> None:
        mid = self.nodes[mid_id]
        mid.alive = False
        for leaf in mid.children:
            self.nodes[leaf].parent = None
        if mid.parent is not None:
            root = self.nodes[mid.parent]
            root.children = [c for c in root.children if c != mid_id]
            root.alive = bool(root.children)

    @staticmethod
    def _mean(vectors: list[np.ndarray]) -> np.ndarray:
        v = np.mean(np.stack(vectors), axis=0)
        return v / (np.linalg.norm(v) or 1.0)

    # ---- retrieval -------------------------------------------------------------------------------------------

    def retrieve(self, question: str, k: int, question_time: dt.datetime | None) -> list[str]:
        self.prepare()
        leaves = self._alive("leaf")
        if not leaves:
            self._notes = []
            return []
        (route,) = self._ask("eval_tree_route", [{"question": question}], RouteOut)
        level = route.level if route else "leaf"
        self.routes[level] += 1
        query = self.embedder.query(question)
        budget = int(self.s["tree_budget_tokens"])
        if level == "leaf":
            paths = [[i] for i in self._ranked(leaves, query)]
        else:
            tops = self._alive(level) or self._alive("mid")
            paths = [self._path(i, query) for i in self._ranked(tops, query)]
            # leaves left without a pattern still count as evidence after the paths
            paths += [[i] for i in self._ranked(leaves, query)]
        return self._render(paths, budget, k)

    def _ranked(self, ids: list[int], query: np.ndarray) -> list[int]:
        """By r(q, x) = similarity + β·confidence (β = tree_confidence_weight)."""
        scores = {i: float(self.nodes[i].vector @ query) + self.s["tree_confidence_weight"] * self.nodes[i].confidence
                  for i in ids}
        return sorted(ids, key=lambda i: -scores[i])

    def _path(self, top: int, query: np.ndarray) -> list[int]:
        """A root → its mids → their leaves (or a mid → its leaves), children best first."""
        node = self.nodes[top]
        if node.level == "mid":
            return [top, *self._ranked([c for c in node.children if self.nodes[c].alive], query)]
        path = [top]
        for mid in self._ranked([c for c in node.children if self.nodes[c].alive], query):
            path += [mid, *self._ranked([c for c in self.nodes[mid].children if self.nodes[c].alive], query)]
        return path

    def _render(self, paths: list[list[int]], budget: int, k: int) -> list[str]:
        """Each path at the deepest depth that fits what is left of the budget (a root alone, with its mids, or
        with leaves too); the leaves on rendered paths, best first, are the retrieved traces."""
        ids: dict[str, None] = {}
        notes: list[str] = []
        spent = 0
        for path in paths:
            for node_id in path:
                node = self.nodes[node_id]
                if node.level == "leaf" and (node.trace_id in ids or len(ids) >= k):
                    continue
                cost = estimate_tokens(node.text)
                if spent + cost > budget and (ids or notes):
                    break  # deeper parts of this path do not fit: it stays at the depth reached
                spent += cost
                if node.level == "leaf":
                    ids.setdefault(node.trace_id, None)
                else:
                    notes.append(f"[{node.level}] {node.text} (confidence {node.confidence:.2f})")
            if len(ids) >= k or spent >= budget:
                break
        self._notes = notes
        return list(ids)

    def notes(self) -> list[str]:
        return list(self._notes)
