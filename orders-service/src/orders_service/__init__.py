"""orders-service: orders with ownership, states and idempotent creation."""
