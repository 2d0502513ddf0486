"""Runs the stage registry over personas: a session (the dataset's lock, `dataset.json`, the shared client and
cache), stage order and staleness across stages, and the dry run that prices a run before it is made.

May import: every layer below the CLI (synth.core, synth.config, synth.llm, synth.records, synth.life,
synth.quality, synth.engine, synth.stages).
"""
