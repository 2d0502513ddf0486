"""Model-free rules of a simulated life: the event-seed pool, gaps in a timeline, QA windows over it, spoken
sources (group chats, lifelog), relation-controlled variants and the lifelog calendar.

May import: synth.core, synth.config, synth.records.
"""
