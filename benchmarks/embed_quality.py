"""Retrieval quality of the offline embedders on real English and Chinese text: Recall@10 and MRR of question →
paragraph retrieval, and how much of e5's top 10 each embedder keeps, with the CPU each one spent embedding.

The data are two reading-comprehension sets in SQuAD's JSON layout, read from paths you give (nothing is
downloaded): English — SQuAD 2.0 dev (answerable questions), Chinese — CMRC 2018 dev. Each question's gold is the
paragraph it was written from; every paragraph of the file is a candidate. Vectors are kept under `--cache`, so a
second run (or another embedder) does not pay for e5 again. The last line printed is one JSON object.

    python benchmarks/embed_quality.py --en dev-v2.0.json --zh cmrc2018_dev.json --embedders bm25,e5,use
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np


def load_squad(path: Path, questions: int, seed: int) -> tuple[list[str], list[tuple[str, int]]]:
    """Paragraphs, and a seeded sample of (question, gold paragraph index) over the answerable questions."""
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    paragraphs = [p for article in data for p in article["paragraphs"]]
    pairs = [(qa["question"], i) for i, p in enumerate(paragraphs) for qa in p["qas"] if not qa.get("is_impossible")]
    chosen = np.random.default_rng(seed).choice(len(pairs), size=min(questions, len(pairs)), replace=False)
    return [p["context"] for p in paragraphs], [pairs[j] for j in sorted(chosen)]


def _ranks(scores: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """0-based rank of each question's gold paragraph (ties count against it)."""
    return (scores > scores[np.arange(len(gold)), gold][:, None]).sum(axis=1)


def bm25_scores(docs: list[str], questions: list[str]) -> np.ndarray:
    from synth.eval.index import BM25Index, tokenize

    index = BM25Index()
    index.add(docs)
    index.prepare()
    scores = np.zeros((len(questions), len(docs)), dtype=np.float32)
    for row, question in enumerate(questions):
        terms = [t for t in tokenize(question) if t in index._index.vocab_dict]
        if terms:
            scores[row] = index._index.get_scores(terms)
    return scores


def rrf(*score_rows: np.ndarray, k: int = 60, depth: int = 100) -> np.ndarray:
    """Reciprocal rank fusion of several score matrices, as `flat-hybrid` fuses BM25 and dense (same constants)."""
    fused = np.zeros_like(score_rows[0])
    for scores in score_rows:
        order = np.argsort(-scores, axis=1, kind="stable")[:, :depth]
        rows = np.arange(len(scores))[:, None]
        fused[rows, order] += 1.0 / (k + np.arange(1, order.shape[1] + 1))
    return fused


def embedded(kind: str, lang: str, docs: list[str], questions: list[str], cache: Path, max_chars: int) -> tuple:
    """(passage matrix, query matrix, CPU seconds and wall seconds the passages took) — from the cache if there,
    under the embedder's own name (which carries its version and cuts)."""
    import hashlib

    from synth.eval.embed import make_embedder
    from synth.eval.run import eval_settings

    embedder = make_embedder(None, None, max_chars, None, kind, int(eval_settings()["use_max_tokens"]))
    stem = cache / f"{kind}-{lang}-{hashlib.sha256(embedder.name.encode()).hexdigest()[:12]}"
    if stem.with_suffix(".npz").is_file():
        saved = np.load(stem.with_suffix(".npz"))
        return saved["docs"], saved["queries"], float(saved["cpu"]), float(saved["wall"])
    cpu, wall = time.process_time(), time.perf_counter()
    matrix = embedder.passages(docs)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    queries = np.stack([embedder.query(q) for q in questions])
    np.savez(stem.with_suffix(".npz"), docs=matrix, queries=queries, cpu=cpu, wall=wall)
    return matrix, queries, cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--en", type=Path, required=True, help="SQuAD-layout JSON, English (SQuAD 2.0 dev)")
    parser.add_argument("--zh", type=Path, required=True, help="SQuAD-layout JSON, Chinese (CMRC 2018 dev)")
    parser.add_argument("--embedders", default="bm25,e5,use",
                        help="bm25, any of synth's offline embedders, and hybrid-<embedder> (BM25 fused with it)")
    parser.add_argument("--questions", type=int, default=400, help="questions sampled per language")
    parser.add_argument("--max-chars", type=int, default=1200, help="embed_max_chars for the embedders")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "synth-embed-quality")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    sets = {"en": load_squad(args.en, args.questions, args.seed), "zh": load_squad(args.zh, args.questions, args.seed)}
    results: dict[str, dict] = {}
    top10: dict[tuple[str, str], np.ndarray] = {}
    kinds = args.embedders.split(",")
    for kind in (["e5"] if "e5" in kinds else []) + [k for k in kinds if k != "e5"]:  # e5 first: the reference
        for lang, (docs, pairs) in sets.items():
            questions, gold = [q for q, _ in pairs], np.array([g for _, g in pairs])
            row: dict = {"paragraphs": len(docs), "questions": len(pairs)}
            if kind == "bm25":
                scores = bm25_scores(docs, questions)
            elif kind.startswith("hybrid-"):
                matrix, queries, _, _ = embedded(kind[7:], lang, docs, questions, args.cache, args.max_chars)
                scores = rrf(bm25_scores(docs, questions), queries @ matrix.T)
            else:
                matrix, queries, cpu, wall = embedded(kind, lang, docs, questions, args.cache, args.max_chars)
                scores = queries @ matrix.T
                row.update(embed_cpu_s=round(cpu, 1), embed_wall_s=round(wall, 1),
                           cpu_ms_per_paragraph=round(1000 * cpu / len(docs), 1))
            ranks = _ranks(scores, gold)
            row.update(recall_at_10=round(float((ranks < 10).mean()), 3), mrr=round(float((1 / (ranks + 1)).mean()), 3))
            top10[kind, lang] = np.argsort(-scores, axis=1, kind="stable")[:, :10]
            if kind != "e5" and ("e5", lang) in top10:
                row["e5_top10_kept"] = round(float(np.mean([len(set(a) & set(b)) / 10 for a, b in
                                                            zip(top10["e5", lang], top10[kind, lang], strict=True)])), 3)
            results[f"{kind}/{lang}"] = row
            print(f"{kind:5s} {lang} {json.dumps(row)}", flush=True)
    print(json.dumps({"max_chars": args.max_chars, "seed": args.seed, "results": results,
                      "cpu_count": os.cpu_count(), "load_average": os.getloadavg()}))


if __name__ == "__main__":
    main()
