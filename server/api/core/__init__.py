"""The pipeline every HTTP request runs, whatever the runtime: framework-neutral request and response values
(`types.py`), admission (key or address, rate limits), the route table, query and body parsing with per-field
errors, answers remembered per data version, content coding, and the finishing step (request id, CORS, ETags).

May import the layers below `api` only; every other room of `api/` builds on it.
"""
