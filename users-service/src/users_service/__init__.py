"""users-service: users, sessions and tokens, API keys and account mail, a sub-package each."""
