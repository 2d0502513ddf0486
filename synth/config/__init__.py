"""How a run is configured: presets and typed settings (`settings`), their loading and routes (`conf`),
persona seed files (`personas`), prompt templates and native labels (`prompts`), the question-type registry
(`question_types`), and the TOML tables beside them.

May import: synth.core.
"""
