"""omoide plugin `tts_openjtalk`: Japanese TTS with pyopenjtalk-plus (offline).

Registers nothing yet: its components arrive with the issue that fills this stage.
"""
