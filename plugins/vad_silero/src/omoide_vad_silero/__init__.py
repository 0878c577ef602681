"""omoide plugin `vad_silero`: Silero VAD through onnxruntime (no torch).

Registers nothing yet: its components arrive with the issue that fills this stage.
"""
