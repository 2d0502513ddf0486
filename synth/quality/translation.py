"""A translation keeps its source's structure: checked by the translate stage and by `synth validate`."""

from __future__ import annotations

from synth.records import FinalItem, Trace, Translation


def structure_problem(source: Trace | FinalItem, translation: Translation) -> str:
    """The translation keeps the source's structure: same kind and id, same option letters and key position
    (E fixed), same evidence ids in order, and no empty text. Used by the stage and by `synth validate`."""
    if translation.source_id != source.id:
        return f"translation {translation.id}: source {translation.source_id} is not {source.id}"
    if isinstance(source, Trace):
        return "" if translation.kind == "trace" and translation.content.strip() else "an empty trace translation"
    if translation.kind != "item" or not translation.question.strip() or not translation.answer.strip():
        return "an item translation without its question or answer"
    if [c.id for c in translation.choices] != [c.id for c in source.choices]:
        return "the option letters differ from the source item's"
    if any(not c.text.strip() for c in translation.choices):
        return "an empty option"
    if [e.evidence_id for e in translation.evidence] != [e.evidence_id for e in source.evidence]:
        return "the evidence ids differ from the source item's"
    return ""
