"""Events: a transactional outbox, relayed to NATS JetStream, and durable consumers.

- ``envelope``: the CloudEvents 1.0 document, and the NATS subject of each event type;
- ``catalog``: a service's event types, each with the model of its ``data``;
- ``asyncapi``: the AsyncAPI 3.0 document of a catalog (``/docs/asyncapi.json``), and their merge;
- ``models`` and ``outbox``: the outbox table, and ``Outbox.record``, which writes an event
  of its catalog in the caller's transaction (each service's migration creates the tables);
- ``relay``: publishes unpublished rows in order, marks them after the ack, and purges the
  published ones after ``EVENTS_HISTORY_RETENTION_S``;
- ``history``: a subject's retained events after a sequence (an order's event history);
- ``consumer``: a durable pull consumer that acks after its handler succeeded;
- ``streams``: the JetStream streams, created or updated idempotently;
- ``runtime``: the link, relay and consumers of one service, tied to its server's life;
- ``access``: the NATS users (one per process) and what each may publish and subscribe to;
- ``credentials``: the NKey seed each process authenticates with, and its public key.

``make run`` and the tests run nats-server through ``api_devservers.nats_server``.
"""
