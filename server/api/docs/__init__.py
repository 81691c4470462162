"""The documents the service describes itself with: the OpenAPI 3.1 document (operations, schemas, this server's own
examples, the console's and the flat files' parts), the AsyncAPI 3.0 document of `/ws/quotes`, and the problem pages
each problem document's `type` points at.

May import the layers below `api`, `api/core/`, `api/auth/`, and the limits of `api/market/` and `api/console/`.
"""
