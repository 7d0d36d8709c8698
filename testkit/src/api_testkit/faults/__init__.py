"""Fault injection under steady traffic: ``traffic`` sends and judges, ``scenario`` holds the
rules a fault must keep. The process suite (tests/e2e/faults) and the container suite
(tests/compose) inject their faults differently and share both."""
