"""Queries answered without Tartiflette: compiled plans over the catalog kept in memory.

``snapshot`` keeps the catalog in memory at its current version; ``shape`` reads from the
cooked schema what plans can answer; ``compiler`` turns a validated document into a plan,
taking from ``variables`` only the values whose coercion cannot differ; ``fast_path`` runs
the plan of a request, or says Tartiflette must execute it; ``wiring`` builds the snapshots
from the settings.
"""
