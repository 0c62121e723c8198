#!/bin/sh
# Copies the k3s server's join token to an agent node. Run by the module's
# local-exec inside the run (its sandbox): it reaches both nodes over SSH with
# the cluster's key only, through the run's proxy when there is one, each
# node's host key pinned when the operator registered one. The token goes from
# one ssh to the other through a pipe: never on the run's disk or in its log.
#
# Environment (set by main.tf): FROM and TO (SSH user, port, address, and 1
# when the host key is pinned), SSH_KEY, KNOWN_HOSTS, PROXY_HOST, PROXY_PORT.
set -eu

# on USER PORT ADDRESS PINNED COMMAND: runs COMMAND on a node (its stdin is ours).
on() {
  _user=$1 _port=$2 _address=$3 _pinned=$4 _command=$5
  if [ "$_pinned" = 1 ]; then
    set -- -o "UserKnownHostsFile=$KNOWN_HOSTS" -o StrictHostKeyChecking=yes
  else
    # No host key was registered for this node: as in the connection blocks, it is not checked.
    set -- -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -o LogLevel=ERROR
  fi
  if [ -n "$PROXY_HOST" ]; then
    set -- "$@" -o "ProxyCommand=socat - PROXY:$PROXY_HOST:%h:%p,proxyport=$PROXY_PORT"
  fi
  ssh -i "$SSH_KEY" -o BatchMode=yes -o ConnectTimeout=30 -p "$_port" "$@" "$_user@$_address" -- "$_command"
}

# as_root USER SCRIPT: the command line that runs SCRIPT (no single quotes in it) as root on that user's node.
as_root() {
  if [ "$1" = root ]; then echo "sh -c '$2'"; else echo "sudo -n sh -c '$2'"; fi
}

read -r from_user from_port from_address from_pinned <<END
$FROM
END
read -r to_user to_port to_address to_pinned <<END
$TO
END

on "$from_user" "$from_port" "$from_address" "$from_pinned" "$(as_root "$from_user" "cat /var/lib/rancher/k3s/server/node-token")" </dev/null |
  on "$to_user" "$to_port" "$to_address" "$to_pinned" "$(as_root "$to_user" "umask 077; mkdir -p /etc/rancher/k3s && cat > /etc/rancher/k3s/cluster-token.new && [ -s /etc/rancher/k3s/cluster-token.new ] && mv /etc/rancher/k3s/cluster-token.new /etc/rancher/k3s/cluster-token")"
echo "k3s: the server's join token is on $to_address"
