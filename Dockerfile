# Slim image: the pinned dependencies and the project, run as a non-root user.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    MARKET_HOST=0.0.0.0 MARKET_DATA_DIR=/data

WORKDIR /app
COPY pyproject.toml requirements.lock README.md ./
COPY server ./server
RUN pip install --no-cache-dir -c requirements.lock . \
    && useradd --system --uid 10001 --home /data market \
    && mkdir -p /data && chown market /data

USER market
VOLUME ["/data"]
EXPOSE 8000 8001
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
    CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status == 200 else 1)"

ENTRYPOINT ["market-server"]
CMD ["serve"]
