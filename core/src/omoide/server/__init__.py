"""The HTTP server: FastAPI app, text and audio turn endpoints, health, device routes."""
