"""omoide plugin `tts_irodori`: Irodori-TTS-Server HTTP client.

Registers nothing yet: its components arrive with the issue that fills this stage.
"""
