"""Test support for every test suite, the benchmarks and the soak; never in a service's image.

Real parts, one small module each:

- ``paths``: the repository and its git-ignored cache;
- ``ports``, ``databases``, ``readiness``, ``in_process``: free ports, throw-away databases,
  waiting for ``/ready``, an app served in the test's own event loop;
- ``processes``, ``environment``, ``stack``: the platform as real processes, the way
  ``make run`` starts it;
- ``neighbours``, ``gates``: users-service and books-graphql as real processes for one
  service's integration tests, and a real HTTP hop in front of one that a test reads, holds
  or takes down;
- ``tokens``, ``callers``, ``actors``, ``catalog``, ``orders``, ``sessions``: real tokens,
  and users, books and orders made through the API;
- ``contract``, ``raw_http``: what a refusal looks like, and requests httpx cannot send;
- ``tracing``, ``node``, ``graphql_clients``: an OTLP receiver, and the JavaScript clients;
- ``upstream_fakes``: in-memory stand-ins for orders-service's upstreams, for unit tests
  only (integration tests have the real ones: ``neighbours``);
- ``faults``: steady traffic through a fault, and the rules it must keep;
- ``fixtures``: the pytest fixtures every suite shares (a pytest plugin).
"""
