"""omoide plugin `embed_qwen`: Qwen3-Embedding text embeddings (transformers) and the OpenAI-compatible embedding API.

Registers nothing yet: its components arrive with the issue that fills this stage.
"""
