"""The gateway's HTTP/1.1 client of the services: their replicas, a keep-alive pool of its own
per replica and the proxy forwarding public requests over it; and the streamed answers, each
over a connection of its own.

- ``replicas``: an upstream's replicas, taken in turn, with passive health;
- ``connection``: one keep-alive connection, its responses parsed by httptools;
- ``pool``: the connections to every replica, within their limits and timeouts;
- ``message``: what crosses, a request's header block and the client's response;
- ``proxy``: forwarding, retries, and failures mapped to the contract;
- ``failover``: the loop over an upstream's replicas both proxies use;
- ``stream``: forwarding a streamed answer (Server-Sent Events) as it arrives;
- ``stream_client``: a stream's own connection, and its failures before an answer;
- ``reader``: a response parsed as it arrives, its body decoded piece by piece.

The rest of the gateway imports from ``proxy``, ``stream`` and ``replicas``, so that each
import names the module that defines it; the others are this package's own.
"""
