"""The in-process llama.cpp provider and its parts: GGUF files, loaded models, the sampler, the native-crash
probe and the AMX-safe launcher of llama.cpp's server.

May import: synth.core, synth.config, synth.llm.
"""
