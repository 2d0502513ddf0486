"""The engine room's smallest parts, with no knowledge of lives or questions: errors, token estimates,
JSONL reading and atomic writing, lenient field readers, calendar dates, and the field names and date styles
of LongMemEval and LoCoMo.

May import: nothing else of synth.
"""
