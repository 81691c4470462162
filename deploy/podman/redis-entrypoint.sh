#!/bin/sh
# redis stand-in (redis.Containerfile): what the official image's entrypoint does, in short
set -e
if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then set -- redis-server "$@"; fi
if [ "$1" = redis-server ]; then
  shift
  set -- redis-server --bind 0.0.0.0 --protected-mode no --dir /data "$@"
  if [ "$(id -u)" = 0 ]; then
    chown -R redis:redis /data
    exec setpriv --reuid=redis --regid=redis --init-groups "$@"
  fi
fi
exec "$@"
