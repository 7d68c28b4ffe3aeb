# syntax=docker/dockerfile:1
# One image for both programs (cos-webhook, cos-reconciler); the manifests in deploy/ pick one with `command:`.
#
#   docker build -t cluster-object-set:0.1.0 .
#
# Stage 1 installs the package and exactly the pinned dependency tree (constraints.txt) into a virtualenv.
# Stage 2 copies only that virtualenv onto a fresh slim Debian Python: no pip cache, no source tree, no
# compiler or build tools, and it runs as an unprivileged user with a read-only root filesystem in mind
# (bytecode is compiled at build time, nothing is written under /opt at run time).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
RUN python -m venv /opt/cos
COPY constraints.txt pyproject.toml README.md ./
COPY common ./common
COPY webhook ./webhook
COPY reconciler ./reconciler
# The project is built into a wheel; it and its runtime dependencies are then installed from wheels only,
# at exactly the versions in constraints.txt (test-only pins there are not installed: nothing requires them).
RUN /opt/cos/bin/pip wheel --no-deps --wheel-dir /tmp/wheels . \
 && /opt/cos/bin/pip install --only-binary=:all: -c constraints.txt /tmp/wheels/*.whl \
 && /opt/cos/bin/pip check \
 && /opt/cos/bin/python -m compileall -q /opt/cos/lib \
 && /opt/cos/bin/pip uninstall --yes pip

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="cluster-object-set" \
      org.opencontainers.image.description="ClusterObjectSet admission webhook (cos-webhook) and reconciler (cos-reconciler)" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/cos /opt/cos
ENV PATH=/opt/cos/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# 65532: the conventional "nonroot" UID; numeric so that runAsNonRoot can verify it without /etc/passwd.
USER 65532:65532
WORKDIR /tmp
CMD ["cos-webhook", "--help"]
