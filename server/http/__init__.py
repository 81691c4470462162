"""The HTTP runtimes (layer 6): the Granian RSGI and Robyn adapters that carry `api`'s framework-neutral values,
and what both do at the edge (connection limits, the gate before the pipeline).

May import every lower layer.
"""
