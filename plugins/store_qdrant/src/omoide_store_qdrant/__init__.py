"""omoide plugin `store_qdrant`: Qdrant vector store (local mode or server).

Registers nothing yet: its components arrive with the issue that fills this stage.
"""
