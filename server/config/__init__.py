"""The hub's settings: each flag declared once, grouped, built from flags and MARKET_* env, validated once.

- server/config/setting.py: how one setting is declared (`setting(...)`: default, help, parser, check, flag
  kind) and what is derived from it (the argparse option, env `MARKET_<FLAG>`, parsing, checking);
- server/config/groups.py: the groups (http, feed, site, limits, stream, notify, auth, process, engine,
  storage), each a frozen dataclass of `setting(...)` fields with its own cross-field `check`;
- server/config/settings.py: `Settings` (every group at once), the rules across groups, the argparse glue;
- server/config/parsers.py: parsers and URL checks of the richer values.

The root hands each part only its group: `settings.group(NotifySettings)`. Adding a flag is adding one
field to one group. This package imports `core` only, no part it configures.
"""

from server.config.groups import (
    DEFAULT_ENTERPRISE_RATE,
    LOG_LEVELS,
    MAX_RATE,
    MAX_WORKERS,
    AuthSettings,
    DemoHours,
    EngineKind,
    EngineSettings,
    FeedSettings,
    Group,
    HttpSettings,
    LimitSettings,
    NotifySettings,
    ProcessSettings,
    Runtime,
    SiteSettings,
    StorageSettings,
    StreamSettings,
)
from server.config.parsers import PLANS, WEBHOOK_KINDS, Webhook, parse_instant
from server.config.setting import ConfigError, env_default, env_name
from server.config.settings import (
    BENCH_STATIC_PATH,
    GROUPS,
    ServiceUnreachable,
    Settings,
    add_data_dir,
    add_engine_args,
    add_history_args,
    add_serve_args,
    check_command_flags,
    check_database_url,
    check_engine,
    check_redis_url,
    engine_settings,
    history_settings,
    settings_clock,
    settings_from_args,
)

__all__ = [
    "BENCH_STATIC_PATH", "DEFAULT_ENTERPRISE_RATE", "GROUPS", "LOG_LEVELS", "MAX_RATE", "MAX_WORKERS", "PLANS",
    "WEBHOOK_KINDS", "AuthSettings", "ConfigError", "DemoHours", "EngineKind", "EngineSettings", "FeedSettings",
    "Group",
    "HttpSettings", "LimitSettings", "NotifySettings", "ProcessSettings", "Runtime", "ServiceUnreachable",
    "Settings", "SiteSettings", "StorageSettings", "StreamSettings", "Webhook", "add_data_dir", "add_engine_args",
    "add_history_args", "add_serve_args", "check_command_flags", "check_database_url", "check_engine",
    "check_redis_url", "engine_settings", "env_default", "env_name", "history_settings", "parse_instant",
    "settings_clock",
    "settings_from_args",
]
