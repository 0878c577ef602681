"""omoide plugin `standins`: clearly labelled offline stand-ins for stages with no offline model (chat, Japanese ASR).

Registers nothing yet: its components arrive with the issue that fills this stage.
"""
