"""Scoring memory systems on synth, CloneMem, LongMemEval or LoCoMo data: the loaders (`data`, and `formats` for
the benchmark files), what a system is fed and asked (`protocol`), the systems (`systems`, `index`, `embed`,
`memory`, `mem0_adapter`, `tree`), the answerer and judges (`scoring`), metrics and reports, and the `synth eval`
runner (`run`). `choices` names the built-in systems, retrievers and embedders without importing them, so the
CLI's help can list them cheaply.

May import: synth.core, synth.config, synth.llm, synth.records, synth.life.
"""
