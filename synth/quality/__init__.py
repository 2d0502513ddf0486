"""What makes a dataset trustworthy, without a model: MCQ rules (length, centrality, duplicates), privacy,
the gold-label heuristic, and `synth validate`'s invariants.

May import: synth.core, synth.config, synth.records, synth.life.
"""
