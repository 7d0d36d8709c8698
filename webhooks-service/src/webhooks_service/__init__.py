"""Webhooks: endpoints registered by admins, and the dispatcher that delivers events to them."""
