terraform {
  required_version = ">= 1.6"
}

locals {
  # A run aimed at one node makes a one-node k3s cluster there; otherwise every node, the first the server.
  nodes  = var.tollgate_target_node == "" ? var.tollgate_nodes : [for node in var.tollgate_nodes : node if node.address == var.tollgate_target_node]
  server = local.nodes[0]
  agents = { for node in slice(local.nodes, 1, length(local.nodes)) : node.id => node }
  # root runs commands itself; any other user through passwordless sudo.
  sudo        = { for node in local.nodes : node.id => node.ssh_user == "root" ? "" : "sudo -n " }
  server_host = strcontains(local.server.address, ":") ? "[${local.server.address}]" : local.server.address
  version     = var.k3s_version == "" ? "INSTALL_K3S_CHANNEL=stable" : "INSTALL_K3S_VERSION=${var.k3s_version}"
  # k3s's own installer; curl is installed first where it is missing.
  fetch_installer = [
    "command -v curl >/dev/null || { ${local.sudo[local.server.id]}apt-get update -q && ${local.sudo[local.server.id]}env DEBIAN_FRONTEND=noninteractive apt-get install -y -q curl; }",
    "curl -sfL https://get.k3s.io -o /tmp/tollgate-k3s-install.sh",
  ]
}

# The server on the first node, from get.k3s.io. Its join token stays on it
# (/var/lib/rancher/k3s/server/node-token) until copied to the agents below.
resource "terraform_data" "server" {
  triggers_replace = [local.server.address, local.server.ssh_user, local.server.ssh_port, var.k3s_version, var.server_args]

  connection {
    type         = "ssh"
    host         = local.server.address
    port         = local.server.ssh_port
    user         = local.server.ssh_user
    private_key  = file(var.tollgate_ssh_private_key_file)
    host_key     = local.server.host_key != "" ? local.server.host_key : null
    proxy_scheme = var.tollgate_ssh_proxy == null ? null : var.tollgate_ssh_proxy.scheme
    proxy_host   = var.tollgate_ssh_proxy == null ? null : var.tollgate_ssh_proxy.host
    proxy_port   = var.tollgate_ssh_proxy == null ? null : var.tollgate_ssh_proxy.port
    timeout      = "5m"
  }

  provisioner "remote-exec" {
    inline = concat(["set -eu"], local.fetch_installer, [
      "${local.sudo[local.server.id]}env ${local.version} sh /tmp/tollgate-k3s-install.sh server --node-ip ${local.server.address} --advertise-address ${local.server.address} --tls-san ${local.server.address} --write-kubeconfig-mode 0600 ${var.server_args}",
      "for i in $(seq 1 60); do ${local.sudo[local.server.id]}test -s /var/lib/rancher/k3s/server/node-token && break; sleep 2; done",
      "${local.sudo[local.server.id]}test -s /var/lib/rancher/k3s/server/node-token",
      "for i in $(seq 1 60); do ${local.sudo[local.server.id]}k3s kubectl get nodes >/dev/null 2>&1 && break; sleep 2; done",
      "${local.sudo[local.server.id]}k3s kubectl get nodes -o wide",
    ])
  }
}

# Every other node joins as an agent: the server's token is copied to it by
# the run (copy-token.sh: one ssh piped into the next, so the token is never on
# the run's disk, in its state or in its log), then get.k3s.io installs the agent.
resource "terraform_data" "agent" {
  for_each = local.agents

  triggers_replace = [terraform_data.server.id, each.value.address, each.value.ssh_user, each.value.ssh_port, var.k3s_version]

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

  provisioner "local-exec" {
    command     = "sh ./copy-token.sh"
    working_dir = path.module
    environment = {
      # Each: SSH user, port, address, and 1 when its host key is pinned.
      FROM        = "${local.server.ssh_user} ${local.server.ssh_port} ${local.server.address} ${local.server.host_key != "" ? 1 : 0}"
      TO          = "${each.value.ssh_user} ${each.value.ssh_port} ${each.value.address} ${each.value.host_key != "" ? 1 : 0}"
      SSH_KEY     = var.tollgate_ssh_private_key_file
      KNOWN_HOSTS = var.tollgate_known_hosts_file
      PROXY_HOST  = var.tollgate_ssh_proxy == null ? "" : var.tollgate_ssh_proxy.host
      PROXY_PORT  = var.tollgate_ssh_proxy == null ? "" : tostring(var.tollgate_ssh_proxy.port)
    }
  }

  provisioner "remote-exec" {
    inline = [
      "set -eu",
      "command -v curl >/dev/null || { ${local.sudo[each.key]}apt-get update -q && ${local.sudo[each.key]}env DEBIAN_FRONTEND=noninteractive apt-get install -y -q curl; }",
      "curl -sfL https://get.k3s.io -o /tmp/tollgate-k3s-install.sh",
      "${local.sudo[each.key]}env ${local.version} K3S_URL=https://${local.server_host}:6443 K3S_TOKEN_FILE=/etc/rancher/k3s/cluster-token sh /tmp/tollgate-k3s-install.sh agent --node-ip ${each.value.address}",
    ]
  }
}
