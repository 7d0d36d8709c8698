"""GraphQL over HTTP, below the handler (``books_graphql.routes``) and free of Sanic's requests.

``answering`` answers a parsed request (an ``answer.Answer``: bytes, status, caching), with
``persisted_queries`` and the ``response_cache``; ``protocol`` holds the specification's
rules (negotiation, CSRF, parameters, status), ``cache_headers`` the ETag and Cache-Control
of GET answers; ``docs`` describes the routes in OpenAPI and ``sandbox`` renders GraphiQL;
``wiring`` builds the parts the service's context keeps.
"""
