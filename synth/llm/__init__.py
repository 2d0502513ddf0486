"""One small LLM interface (`base`), its client (cache, budget, rate limits, retries, re-asks), the provider
adapters (anthropic, openai, fake; `local/` for llama.cpp), batches and the response cache.

May import: synth.core, synth.config.
"""
