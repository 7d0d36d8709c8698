"""The gateway's HTTP/1.1 clients of the services: their replicas, a keep-alive pool of its
own per replica and the proxy forwarding public requests over it; and an httpx client for the
answers that are streams.

- ``replicas``: an upstream's replicas, taken in turn, with passive health;
- ``connection``: one keep-alive connection, its responses parsed by httptools;
- ``pool``: the connections to every replica, within their limits and timeouts;
- ``message``: what crosses, a request's header block and the client's response;
- ``proxy``: forwarding, retries, and failures mapped to the contract;
- ``stream``: forwarding a streamed answer (Server-Sent Events) as it arrives, over httpx;
- ``stream_client``: the streams' httpx client, and their failures before an answer.

The rest of the gateway imports from ``proxy``, ``stream`` and ``replicas``, so that each
import names the module that defines it; ``connection``, ``pool``, ``message`` and
``stream_client`` are this package's own.
"""
