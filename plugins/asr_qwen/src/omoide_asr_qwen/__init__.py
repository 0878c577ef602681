"""omoide plugin `asr_qwen`: Qwen3-ASR speech recognition (qwen-asr).

Registers nothing yet: its components arrive with the issue that fills this stage.
"""
