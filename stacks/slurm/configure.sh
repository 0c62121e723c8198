#!/bin/sh
# Configures Slurm on the nodes terraform_data.install prepared. Run by the
# module's local-exec inside the run (its sandbox), it reaches each node over
# SSH with the cluster's key only: through the run's proxy when there is one,
# the node's host key pinned when the operator registered one.
#
# Environment (set by main.tf): NODES (one node a line: Slurm name, SSH user,
# port, address, 1 when its host key is pinned; the first is the controller),
# SSH_KEY, KNOWN_HOSTS, PROXY_HOST, PROXY_PORT, CLUSTER_NAME, PARTITION, MAX_TIME.
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

# put USER PORT ADDRESS PINNED FILE: replaces FILE on the node with our stdin, in one step.
put() {
  on "$1" "$2" "$3" "$4" "$(as_root "$1" "umask 022; cat > $5.new && mv $5.new $5")"
}

read -r ctl_name ctl_user ctl_port ctl_address ctl_pinned <<NODES_END
$NODES
NODES_END

# Each node's hardware as slurmd itself reports it, under the name Slurm knows it by.
node_lines=""
while read -r name user port address pinned; do
  hardware=$(on "$user" "$port" "$address" "$pinned" "/usr/sbin/slurmd -C" </dev/null | head -n 1)
  case "$hardware" in
    NodeName=*) ;;
    *) echo "slurm: $address did not report its hardware (slurmd -C): $hardware" >&2; exit 1 ;;
  esac
  line=$(printf '%s\n' "$hardware" | sed "s|^NodeName=[^ ]*|NodeName=$name NodeAddr=$address|")
  node_lines="$node_lines$line State=UNKNOWN
"
  echo "slurm: $name ($address): $line"
done <<NODES_END
$NODES
NODES_END

slurm_conf="# Written by the Tollgate slurm stack; applying the stack again rewrites it.
ClusterName=$CLUSTER_NAME
SlurmctldHost=$ctl_name($ctl_address)
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmUser=slurm
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
${node_lines}PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=$MAX_TIME State=UP"

while read -r name user port address pinned; do
  if [ "$name" != "$ctl_name" ]; then
    # The controller's MUNGE key, piped from one ssh to the next (never on the run's disk or in its log),
    # checked non-empty before it replaces anything.
    on "$ctl_user" "$ctl_port" "$ctl_address" "$ctl_pinned" "$(as_root "$ctl_user" "cat /etc/munge/munge.key")" </dev/null |
      on "$user" "$port" "$address" "$pinned" "$(as_root "$user" "umask 077; cat > /etc/munge/munge.key.new && [ -s /etc/munge/munge.key.new ] && chown munge:munge /etc/munge/munge.key.new && mv /etc/munge/munge.key.new /etc/munge/munge.key")"
  fi
  printf '%s\n' "$slurm_conf" | put "$user" "$port" "$address" "$pinned" /etc/slurm/slurm.conf
  # Debian's slurmd unit passes $SLURMD_OPTIONS: the node answers to the name slurm.conf gives it.
  printf 'SLURMD_OPTIONS="-N %s"\n' "$name" | put "$user" "$port" "$address" "$pinned" /etc/default/slurmd
  if [ "$name" = "$ctl_name" ]; then
    on "$user" "$port" "$address" "$pinned" "$(as_root "$user" "systemctl enable munge slurmctld && systemctl restart munge slurmctld")" </dev/null
  fi
  on "$user" "$port" "$address" "$pinned" "$(as_root "$user" "systemctl enable munge slurmd && systemctl restart munge slurmd")" </dev/null
  echo "slurm: $name ($address) configured"
done <<NODES_END
$NODES
NODES_END

# Every node idle (or busy) within a minute, else the run fails with what sinfo says.
wait_for_nodes='for i in $(seq 1 30); do s=$(sinfo -h -N -o %T 2>/dev/null) && [ -n "$s" ] && ! printf "%s\n" "$s" | grep -qv -e "^idle$" -e "^mixed$" -e "^allocated$" && sinfo -N && exit 0; sleep 2; done; sinfo -N; exit 1'
if ! on "$ctl_user" "$ctl_port" "$ctl_address" "$ctl_pinned" "$wait_for_nodes" </dev/null; then
  echo "slurm: not every node is up after 60 s (sinfo above); see /var/log/slurm/ on the nodes" >&2
  exit 1
fi
