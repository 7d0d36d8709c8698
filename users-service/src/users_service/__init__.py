"""users-service: users, passwords, token issuing and signing keys."""
