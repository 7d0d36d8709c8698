"""Webhooks: three products on one database, a sub-package each.

- ``endpoints``: the endpoint API (``/api/webhooks…``): endpoints, their secrets and
  audiences, their deliveries as the API shows them (listed, replayed, test events);
- ``delivery``: the dispatcher, a process of its own (``python -m webhooks_service
  dispatch``): events in from JetStream, deliveries out to the endpoints, the upkeep;
- ``event_log``: every event kept once (``GET /api/events``) and its live stream
  (``GET /api/events/stream``).

Each owns its routes, rules, ports and storage, and builds its parts in its ``wiring``;
``context`` (the API) and ``dispatcher`` (the dispatcher) compose them. The modules here are
what they share: the settings, the models and their migrations, the clock, the event as it
crosses the service, the URL guard, sealed secrets, signing, the retry schedule and
personal data.
"""
