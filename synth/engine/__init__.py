"""The machinery that runs stages: the `Stage` contract and its context, the runner (signatures, journals,
manifests), the pipeline session over personas, and the dry run. It never imports a stage.

May import: synth.core, synth.config, synth.llm, synth.records, synth.life, synth.quality.
"""
