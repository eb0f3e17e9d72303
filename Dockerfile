# agent-runtime: one image for the service and its `migrate` step.
#   docker build -t agent-runtime .
#   docker run -p 8000:8000 -v agent-runtime-data:/data agent-runtime      (embedded SQLite)
# The `claude_sdk` runtime is a choice: claude-agent-sdk bundles the Claude Code CLI, 385 MB installed
# (a 170 MB wheel) on top of the service's 320 MB virtualenv. Without it agents cannot choose that runtime
# (422 runtime_unavailable); with it:
#   docker build --build-arg WITH_CLAUDE=true -t agent-runtime:claude .
FROM python:3.11-slim AS build
ARG WITH_CLAUDE=false
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /src
# requirements.lock pins every distribution (with hashes) the service and its `otlp` extra need, and
# requirements-claude.lock the same with the `claude` extra; `make lock` makes both from pyproject.toml.
# The project itself goes in without resolving anything again.
COPY requirements.lock requirements-claude.lock ./
RUN case "$WITH_CLAUDE" in \
      true) lock=requirements-claude.lock ;; \
      false) lock=requirements.lock ;; \
      *) echo "WITH_CLAUDE must be true or false, not '$WITH_CLAUDE'" >&2; exit 1 ;; \
    esac \
 && pip install --require-hashes --no-deps -r "$lock"
COPY pyproject.toml README.md ./
COPY app ./app
RUN pip install --no-deps . && pip check

FROM python:3.11-slim
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DATA_DIR=/data
RUN groupadd --system --gid 10001 app \
 && useradd --system --uid 10001 --gid app --home-dir /srv --shell /usr/sbin/nologin app \
 && mkdir -p /data \
 && chown app:app /data
COPY --from=build /opt/venv /opt/venv
# The migrations ship inside the package (app/migrations): `agent-runtime migrate` needs no source tree.
WORKDIR /srv
USER 10001:10001
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=20s \
  CMD ["python", "-c", "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status != 200)"]
CMD ["agent-runtime", "serve", "--host", "0.0.0.0", "--port", "8000"]
