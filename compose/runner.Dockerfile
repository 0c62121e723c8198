# The runner image of the docker run sandbox (TOLLGATE_RUN_SANDBOX=docker,
# TOLLGATE_RUN_IMAGE): OpenTofu, a shell and coreutils, socat (the relay to
# the run's egress proxy), CA certificates (provider downloads through the
# proxy) and an SSH client (provisioners reaching the cluster's nodes).
# Build from the repository root:
#   docker build -f compose/runner.Dockerfile -t tollgate/runner:latest .
# The gateway names the tool by the command it finds itself (`tofu`): an image
# with Terraform instead must hold it as `terraform` and the gateway must find
# `terraform` (TOLLGATE_TOFU_BIN).
FROM debian:bookworm-slim

# Pinned: a run's behaviour changes with the tool's version; bump deliberately.
ARG TOFU_VERSION=1.8.8
ARG TARGETARCH=amd64

RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      bash coreutils socat ca-certificates openssh-client curl \
 && curl -fsSL -o /tmp/tofu.deb "https://github.com/opentofu/opentofu/releases/download/v${TOFU_VERSION}/tofu_${TOFU_VERSION}_${TARGETARCH}.deb" \
 && curl -fsSL -o /tmp/tofu_SHA256SUMS "https://github.com/opentofu/opentofu/releases/download/v${TOFU_VERSION}/tofu_${TOFU_VERSION}_SHA256SUMS" \
 && (cd /tmp && grep " tofu_${TOFU_VERSION}_${TARGETARCH}.deb\$" tofu_SHA256SUMS | sha256sum -c -) \
 && apt-get install -y --no-install-recommends /tmp/tofu.deb \
 && apt-get purge -y curl && apt-get autoremove -y \
 && rm -rf /var/lib/apt/lists/* /tmp/tofu.deb /tmp/tofu_SHA256SUMS \
 && tofu version

# The sandbox runs everything as 65534 (Debian's nobody); the mount points of a run's container.
# test/platform/runs/runner-dockerfile.test.ts holds these to src/platform/runs/sandbox/inside.ts and docker-spec.ts.
RUN mkdir -p /workspace /run/tollgate /opt/tollgate/bin /opt/tollgate/providers
USER 65534:65534
WORKDIR /workspace
