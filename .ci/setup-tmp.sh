#!/usr/bin/env bash
# CI: install everything from nothing, start the services the tests need when
# none answers, type-check and lint, then run the README's test command with REQUIRE_SERVICES=1.
set -euo pipefail
cd "$(dirname "$0")/.."
# record, stop_recorded, drop_stale: what this script starts is stopped only by the pid it recorded.
. .ci/pids.sh

log() { printf '\n==> %s\n' "$*"; }
apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if ! command -v node >/dev/null 2>&1; then
  log "installing Node.js"
  apt_install nodejs npm
fi
node --version

# PostgreSQL on 127.0.0.1:5432, trusting local connections (tests make and drop their own databases).
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  log "starting PostgreSQL"
  command -v pg_ctlcluster >/dev/null 2>&1 || apt_install postgresql postgresql-client
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  hba="/etc/postgresql/$version/main/pg_hba.conf"
  if ! grep -q '^host all all 127.0.0.1/32 trust' "$hba"; then
    sed -i '1i host all all 127.0.0.1/32 trust' "$hba"
  fi
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || pg_ctlcluster --skip-systemctl-redirect "$version" main restart
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi
pg_isready -h 127.0.0.1 -p 5432

# Redis on 127.0.0.1:6379, keeping nothing on disk.
if ! (command -v redis-cli >/dev/null 2>&1 && redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1); then
  log "starting Redis"
  command -v redis-server >/dev/null 2>&1 || apt_install redis-server
  mkdir -p /var/lib/redis /var/log/redis
  mkdir -p "$CI_PIDS"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log --pidfile "$CI_PIDS/redis.pid"
  for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done
fi
redis-cli -h 127.0.0.1 -p 6379 ping

# A Docker engine on /var/run/docker.sock (the simulator-image and Docker engine tests start
# containers; no bridge network and no iptables, so containers use host networking), and
# compose for the compose file's test (Debian's docker-compose 1.x when there is no v2 plugin).
if ! docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
  log "starting Docker"
  { command -v docker && command -v dockerd; } >/dev/null 2>&1 || apt_install docker.io
  containerd_of_docker=/var/run/docker/containerd/containerd.toml
  for attempt in 1 2 3; do
    # A dockerd this script started before (an earlier attempt, or a run killed with its session), and
    # the containerd it ran: stopped by the pids recorded, if those are still them.
    stop_recorded dockerd dockerd
    stop_recorded containerd containerd "$containerd_of_docker"
    # A dockerd killed before leaves its pid files behind. When a new process has taken such a pid,
    # dockerd takes it for a running containerd and waits on a socket no one serves ("timeout waiting
    # for containerd to start"): a pid file whose process is not that program any more goes first.
    drop_stale /var/run/docker.pid dockerd
    drop_stale /var/run/docker/containerd/containerd.pid containerd "$containerd_of_docker"
    if [ -f /var/run/docker.pid ]; then
      echo "a dockerd this script did not start runs (pid $(cat /var/run/docker.pid)) and does not answer; stop it, and run again" >&2
      exit 1
    fi
    nohup dockerd --bridge=none --iptables=false >/var/log/dockerd-ci.log 2>&1 &
    record dockerd $!
    for _ in $(seq 1 60); do docker version >/dev/null 2>&1 && break; sleep 1; done
    # The containerd that dockerd runs outlives a dockerd that is killed: noted, to be stopped with it next time.
    containerd_pid=$(cat /var/run/docker/containerd/containerd.pid 2>/dev/null || true)
    if is_program "$containerd_pid" containerd "$containerd_of_docker"; then record containerd "$containerd_pid"; fi
    docker version >/dev/null 2>&1 && break
    echo "dockerd did not answer within 60 s (attempt $attempt of 3); /var/log/dockerd-ci.log ends with:" >&2
    grep -v 'module=grpc' /var/log/dockerd-ci.log | tail -n 15 >&2 || true
  done
  docker version >/dev/null 2>&1 || exit 1
fi
echo "Docker server $(docker version --format '{{.Server.Version}}')"
if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null 2>&1; then
  log "installing docker-compose"
  apt_install docker-compose || echo "warning: docker-compose is not installable; the compose test cannot run" >&2
fi

# The run sandbox: bubblewrap (namespaces), socat (the in-sandbox relay to the egress proxy), util-linux (setpriv, prlimit).
missing=""
# openssh-server and -client: the node access test runs two sshd "nodes"; scp is what remote-exec uploads with.
# zip: docs/operating.md packs a stack with it, and its test runs that. tmux: the coding agent's interactive test drives it as a person would; ripgrep: its search tool uses it when present.
for tool in bwrap:bubblewrap socat:socat setpriv:util-linux prlimit:util-linux sshd:openssh-server ssh-keygen:openssh-client scp:openssh-client zip:zip tmux:tmux rg:ripgrep; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${tool%%:*}" ] || missing+=" ${tool#*:}"
done
if [ -n "$missing" ]; then
  log "installing the run sandbox's packages:$missing"
  apt_install $missing
fi
bwrap --version

# OpenTofu or Terraform, for the run tests with the real tool and the hostile-stack test. Neither is in
# Debian or on npm, so nothing here installs one: the machine's image must bring it.
if ! command -v tofu >/dev/null 2>&1 && ! command -v terraform >/dev/null 2>&1; then
  echo "neither tofu nor terraform is on PATH: the run tests need one (neither is in Debian or on npm). Install OpenTofu's standalone binary (https://opentofu.org/docs/intro/install/standalone/) or Terraform into /usr/local/bin and run again." >&2
  exit 1
fi
if command -v tofu >/dev/null 2>&1; then tofu version | sed -n 1p; else terraform version | sed -n 1p; fi

# Debian's Chromium for the portal's browser tests (playwright-core drives it; nothing is downloaded by npm).
if [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
  log "installing Chromium"
  apt_install chromium
fi
# Stack icons are emoji: without a colour emoji font the screenshots show empty boxes.
if ! dpkg -s fonts-noto-color-emoji >/dev/null 2>&1; then
  log "installing an emoji font"
  apt_install fonts-noto-color-emoji || echo "warning: fonts-noto-color-emoji is not installable; screenshots show emoji as boxes" >&2
fi
"${CHROMIUM_PATH:-/usr/bin/chromium}" --version

# The agents whose tests drive the gateway as their users do (test/surfaces/agents/): installed as those
# users install them, from npm, at the versions the tests were written against.
agents=""
command -v claude >/dev/null 2>&1 || agents+=" @anthropic-ai/claude-code@2.1.197"
command -v codex >/dev/null 2>&1 || agents+=" @openai/codex@0.169.0"
if [ -n "$agents" ]; then
  log "installing the agents:$agents"
  for attempt in 1 2 3; do
    npm install -g --no-audit --no-fund $agents && break
    [ "$attempt" = 3 ] && exit 1
    echo "npm install -g failed (attempt $attempt of 3); trying again in 10 s" >&2
    sleep 10
  done
fi
claude --version
codex --version

log "installing npm packages"
# The registry sometimes drops a download midway (EIDLETIMEOUT); a second try usually gets it.
for attempt in 1 2 3; do
  npm ci --no-audit --no-fund && break
  [ "$attempt" = 3 ] && exit 1
  echo "npm ci failed (attempt $attempt of 3); trying again in 10 s" >&2
  sleep 10
done

# llama.cpp's server and a tiny model, the real engine of test/gateway/engines/llama-server.test.ts: its own
# sources compiled against the pinned npm packages' prebuilt libraries into a cache folder, once per version
# (scripts/llama-server.sh; the packages go to that folder, never to node_modules). The time shows whether it was cached.
log "building llama-server (scripts/llama-server.sh)"
llama_needs=""
for tool in g++ make git python3; do command -v "$tool" >/dev/null 2>&1 || llama_needs+=" $tool"; done
python3 -c 'import numpy' >/dev/null 2>&1 || llama_needs+=" python3-numpy"
if [ -n "$llama_needs" ]; then
  apt_install g++ make git python3 python3-numpy
fi
llama_started=$(date +%s)
scripts/llama-server.sh
echo "llama-server ready in $(($(date +%s) - llama_started)) s"
