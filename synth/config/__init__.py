"""How a run is configured: presets and typed settings (`sections` with each knob's help text, `settings`), their
loading and routes (`conf`), their rendering (`explain`: `synth config show`, docs/configuration.md), persona seed
files (`personas`), prompt templates and native labels (`prompts`, and `shown_schema` for the schema a prompt
shows), the question-type registry (`question_types`), and the TOML tables beside them.

May import: synth.core.
"""
