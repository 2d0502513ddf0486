"""The names `synth eval` accepts — built-in systems, retrievers, offline embedders — in one light module that the
systems, the runner and the CLI's help all read."""

from __future__ import annotations

BUILT_IN = ("oracle", "oracle-traces", "flat", "full", "memory", "mem0", "tree")
RETRIEVERS = ("bm25", "dense", "hybrid")  # flat's and memory's --retriever (also as a -suffix: flat-dense)
EMBEDDERS = ("e5", "use")  # --embedder / [eval] embedder: the offline embedder's kind
