"""The gateway: the platform's only public entry (routing, token check, limits, docs)."""
