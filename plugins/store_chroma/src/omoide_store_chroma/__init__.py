"""omoide plugin `store_chroma`: Chroma vector store (persistent or server).

Registers nothing yet: its components arrive with the issue that fills this stage.
"""
