"""Who a request came from, network-wise, as a service behind the gateway sees it.

The gateway resolves each client's address once (``X-Forwarded-For`` believed only from its
trusted proxies) and sends it upstream in ``X-Real-IP``, replacing any the client sent. A
service reads it there: the right-most ``X-Forwarded-For`` entry would be the last proxy
(an ingress), not the client. Services are reachable only through the gateway (the
deployment's network rules), which is what makes the header believable.
"""

from __future__ import annotations

import ipaddress

from sanic import Request

CLIENT_ADDRESS_HEADER = "X-Real-IP"


def client_address(request: Request) -> str:
    """The address the gateway resolved for this request, else the connection's peer."""
    sent = request.headers.get(CLIENT_ADDRESS_HEADER)
    if sent is not None:
        try:
            return str(ipaddress.ip_address(sent.strip()))
        except ValueError:
            pass
    return request.conn_info.client_ip if request.conn_info else ""
