# syntax=docker/dockerfile:1
# One image for both programs (cos-webhook, cos-reconciler) and cosctl (run by deploy/components/auto-upgrade's
# CronJob); the manifests in deploy/ pick one with `command:`.
#
#   make image                       # docker build (or podman build) -t cluster-object-set:<version> .
#   make image IMAGE=registry.example.com/cluster-object-set:0.1.0
#
# Stage 1 installs the package and exactly the pinned dependency tree (constraints.txt) into a virtualenv, then
# removes what neither program loads at run time (see "Trim" below). Stage 2 copies only that virtualenv onto a
# fresh slim Debian Python, with gpg from Debian (cosctl verifies simple signatures with it): no pip, no source
# tree, no compiler or build tools. It runs as the unprivileged
# user 65532 with a read-only root filesystem: bytecode is compiled at build time and nothing is written under
# /opt at run time (the webhook needs a writable /tmp; deploy/ mounts an emptyDir there).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
# binutils for `strip`: the wheels' compiled modules carry debug symbols (about 20 MB of the 77 MB of them).
RUN apt-get update \
 && apt-get install -y --no-install-recommends binutils \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
RUN python -m venv /opt/cos
# The runtime dependencies first, in a layer of their own: a change to the sources does not download them again.
# Their names come from pyproject.toml, their exact versions from constraints.txt (test-only pins there are not
# installed: nothing requires them). Wheels only: nothing is compiled here.
COPY constraints.txt pyproject.toml ./
RUN python -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"], sep="\n")' \
      > /tmp/runtime-requirements.txt \
 && /opt/cos/bin/pip install --no-compile --only-binary=:all: -c constraints.txt -r /tmp/runtime-requirements.txt
COPY README.md ./
COPY common ./common
COPY webhook ./webhook
COPY reconciler ./reconciler
RUN /opt/cos/bin/pip wheel --no-deps --wheel-dir /tmp/wheels . \
 && /opt/cos/bin/pip install --no-compile --no-deps /tmp/wheels/*.whl \
 && /opt/cos/bin/pip check

# Trim: what the installed tree holds but neither program ever imports (the unit tests pass with these imports
# blocked, and tests/e2e passes against this image). Every step is a measured saving:
# - kubernetes/aio (68 MB): the client's asyncio flavour; `import kubernetes` does not load it, and it is the
#   only user of aiohttp and aiohttp-retry, which the kubernetes distribution requires unconditionally, with
#   their own dependencies (aiohappyeyeballs, aiosignal, frozenlist, multidict, propcache, yarl: 14 MB);
# - cel_expr_python/ext (37 MB): optional CEL extension libraries; the CRD's rules use the standard environment;
# - pip and setuptools (23 MB): the installer, not needed once the tree is in place (there is no pip at run time);
# - the dependencies' own test suites (tests/ directories and kubernetes' *_test.py, 2 MB);
# - debug symbols of the compiled modules (`strip --strip-unneeded` keeps what the dynamic loader needs).
# Then everything left is compiled once, so a read-only root filesystem costs no start-up time.
RUN set -eu; site=$(/opt/cos/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))'); \
    /opt/cos/bin/pip uninstall --yes --quiet \
      aiohttp aiohttp-retry aiohappyeyeballs aiosignal frozenlist multidict propcache yarl pip setuptools; \
    rm -rf "$site/kubernetes/aio" "$site/cel_expr_python/ext"; \
    find "$site" -depth -type d -name tests -exec rm -rf {} +; \
    find "$site" -name '*_test.py' -delete; \
    find "$site" -name '*.so' -exec strip --strip-unneeded {} +; \
    find /opt/cos -name __pycache__ -type d -exec rm -rf {} +; \
    /opt/cos/bin/python -m compileall -q -j 0 /opt/cos/lib; \
    /opt/cos/bin/python -c 'import common.cosctl, reconciler.cli, webhook.app, webhook.certs, webhook.cli; \
      from kubernetes import client, config'; \
    /opt/cos/bin/cos-webhook --help > /dev/null; /opt/cos/bin/cos-reconciler --help > /dev/null

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="cluster-object-set" \
      org.opencontainers.image.description="ClusterObjectSet admission webhook (cos-webhook) and reconciler (cos-reconciler)" \
      org.opencontainers.image.licenses="Apache-2.0"
# gpg (GnuPG) verifies simple signatures when a signature policy mounted at /etc/containers/policy.json asks for them
# (signedBy; docs/bundles.md, section 1), as podman's GPGME does: only cosctl runs it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends gpg \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/cos /opt/cos
# The licence travels with the binaries it covers.
COPY LICENSE /usr/share/licenses/cluster-object-set/LICENSE
ENV PATH=/opt/cos/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# 65532: the conventional "nonroot" UID; numeric so that runAsNonRoot can verify it without /etc/passwd.
USER 65532:65532
WORKDIR /tmp
CMD ["cos-webhook", "--help"]
