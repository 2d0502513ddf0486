"""The engine room's smallest parts, with no knowledge of lives or questions: errors, token estimates,
JSONL reading and atomic writing, lenient field readers and calendar dates.

May import: nothing else of synth.
"""
