terraform {
  required_version = ">= 1.6"
}

locals {
  # A run aimed at one node makes a one-node Slurm cluster there; otherwise every node, the first the controller.
  nodes      = var.tollgate_target_node == "" ? var.tollgate_nodes : [for node in var.tollgate_nodes : node if node.address == var.tollgate_target_node]
  controller = local.nodes[0]
  by_id      = { for node in local.nodes : node.id => node }
  # Slurm names nodes itself (slurmd -N): node_5f0c2b9e... becomes node-5f0c2b9e.
  slurm_name = { for node in local.nodes : node.id => substr(replace(lower(node.id), "_", "-"), 0, 13) }
  cluster    = var.slurm_cluster_name != "" ? var.slurm_cluster_name : coalesce(substr(trim(replace(lower(var.tollgate_cluster_name), "/[^a-z0-9]+/", "-"), "-"), 0, 40), "tollgate")
  # root runs commands itself; any other user through passwordless sudo.
  sudo = { for node in local.nodes : node.id => node.ssh_user == "root" ? "" : "sudo -n " }
}

# Debian's Slurm (the slurm-wlm packages) and MUNGE on every node: the controller
# also gets slurmctld and makes the cluster's MUNGE key once. Re-running is harmless.
resource "terraform_data" "install" {
  for_each = local.by_id

  triggers_replace = [each.value.address, each.value.ssh_user, each.value.ssh_port, each.key == local.controller.id]

  connection {
    type         = "ssh"
    host         = each.value.address
    port         = each.value.ssh_port
    user         = each.value.ssh_user
    private_key  = file(var.tollgate_ssh_private_key_file)
    host_key     = each.value.host_key != "" ? each.value.host_key : null
    proxy_scheme = var.tollgate_ssh_proxy == null ? null : var.tollgate_ssh_proxy.scheme
    proxy_host   = var.tollgate_ssh_proxy == null ? null : var.tollgate_ssh_proxy.host
    proxy_port   = var.tollgate_ssh_proxy == null ? null : var.tollgate_ssh_proxy.port
    timeout      = "5m"
  }

  provisioner "remote-exec" {
    inline = [
      "set -eu",
      "export DEBIAN_FRONTEND=noninteractive",
      "${local.sudo[each.key]}apt-get update -q",
      "${local.sudo[each.key]}apt-get install -y -q munge slurm-client slurmd ${each.key == local.controller.id ? "slurmctld" : ""}",
      each.key == local.controller.id ? "${local.sudo[each.key]}sh -c '[ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key'" : "true",
      "${local.sudo[each.key]}mkdir -p /etc/slurm /var/lib/slurm/slurmd /var/lib/slurm/slurmctld /var/log/slurm",
      "${local.sudo[each.key]}chown slurm:slurm /var/lib/slurm/slurmctld /var/log/slurm",
    ]
  }
}

# The cluster-wide part, from the run itself over SSH (configure.sh): each node's
# hardware as slurmd -C reports it makes slurm.conf; the controller's MUNGE key is
# copied to the others (a pipe from one ssh to the next: it never touches the run's
# disk or log); then MUNGE, slurmctld and slurmd are (re)started.
resource "terraform_data" "configure" {
  triggers_replace = [
    [for id, install in terraform_data.install : install.id],
    var.partition,
    var.max_time,
    local.cluster,
    filesha256("${path.module}/configure.sh"),
  ]

  provisioner "local-exec" {
    command     = "sh ./configure.sh"
    working_dir = path.module
    environment = {
      # One node a line: Slurm name, SSH user, port, address, and 1 when its host key is pinned. The first is the controller.
      NODES        = join("\n", [for node in local.nodes : "${local.slurm_name[node.id]} ${node.ssh_user} ${node.ssh_port} ${node.address} ${node.host_key != "" ? 1 : 0}"])
      SSH_KEY      = var.tollgate_ssh_private_key_file
      KNOWN_HOSTS  = var.tollgate_known_hosts_file
      PROXY_HOST   = var.tollgate_ssh_proxy == null ? "" : var.tollgate_ssh_proxy.host
      PROXY_PORT   = var.tollgate_ssh_proxy == null ? "" : tostring(var.tollgate_ssh_proxy.port)
      CLUSTER_NAME = local.cluster
      PARTITION    = var.partition
      MAX_TIME     = var.max_time
    }
  }
}
