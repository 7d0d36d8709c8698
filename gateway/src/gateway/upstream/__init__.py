"""The gateway's own HTTP/1.1 client to the services: their replicas, a keep-alive pool per
replica, and the proxy forwarding public requests over it.

- ``replicas``: an upstream's replicas, taken in turn, with passive health;
- ``connection``: one keep-alive connection, its responses parsed by httptools;
- ``pool``: the connections to every replica, within their limits and timeouts;
- ``message``: what crosses, a request's header block and the client's response;
- ``proxy``: forwarding, retries, and failures mapped to the contract.

The rest of the gateway imports from ``proxy`` and ``replicas``, so that each import names
the module that defines it; ``connection``, ``pool`` and ``message`` are this package's own.
"""
