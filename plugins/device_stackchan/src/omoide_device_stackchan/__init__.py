"""omoide plugin `device_stackchan`: StackChan (xiaozhi protocol) OTA + WebSocket device transport.

Registers nothing yet: its components arrive with the issue that fills this stage.
"""
