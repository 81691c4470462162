"""The service console's API (`/api/console/...`, SPEC 17): accounts' keys, usage, plan requests, the audit list."""
