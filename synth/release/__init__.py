"""Read-only views of a finished dataset: exports (CloneMem, HF, the seeds' layouts, LongMemEval, LoCoMo), the dataset card, the
static browser, review sheets, `synth stats` and its charts.

May import: synth.core, synth.config, synth.records, synth.life, synth.quality.
"""
