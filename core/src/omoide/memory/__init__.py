"""Long-term memory: journal, extraction, retrieval engines, evaluation."""
