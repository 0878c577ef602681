"""omoide plugin `chat_modelscope`: OpenAI-compatible streaming chat (ModelScope API-Inference by default).

Registers nothing yet: its components arrive with the issue that fills this stage.
"""
