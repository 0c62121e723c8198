terraform {
  required_version = ">= 1.6"
}

locals {
  # A run aimed at one node makes a one-node Ray cluster there; otherwise every node, the first the head.
  nodes   = var.tollgate_target_node == "" ? var.tollgate_nodes : [for node in var.tollgate_nodes : node if node.address == var.tollgate_target_node]
  head    = local.nodes[0]
  workers = { for node in slice(local.nodes, 1, length(local.nodes)) : node.id => node }
  public  = lower(var.public_dashboard) == "yes"
  # root runs commands itself; any other user through passwordless sudo.
  sudo = { for node in local.nodes : node.id => node.ssh_user == "root" ? "" : "sudo -n " }
  venv = "/opt/tollgate-ray"

  # Ray in a virtual environment of Debian's Python, run by its own system user.
  install = {
    for node in local.nodes : node.id => [
      "set -eu",
      "${local.sudo[node.id]}apt-get update -q",
      "${local.sudo[node.id]}env DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv python3-pip",
      "id ray >/dev/null 2>&1 || ${local.sudo[node.id]}useradd --system --create-home --home-dir /var/lib/tollgate-ray --shell /usr/sbin/nologin ray",
      "[ -x ${local.venv}/bin/python ] || ${local.sudo[node.id]}python3 -m venv ${local.venv}",
      "${local.sudo[node.id]}${local.venv}/bin/pip install --quiet --disable-pip-version-check 'ray[default]==${var.ray_version}'",
      "${local.sudo[node.id]}install -m 0644 /tmp/tollgate-ray.service /etc/systemd/system/tollgate-ray.service",
      "rm -f /tmp/tollgate-ray.service",
      "${local.sudo[node.id]}systemctl daemon-reload",
      "${local.sudo[node.id]}systemctl enable tollgate-ray",
      "${local.sudo[node.id]}systemctl restart tollgate-ray",
    ]
  }
  unit = {
    for node in local.nodes : node.id => <<-UNIT
      [Unit]
      Description=Ray ${node.id == local.head.id ? "head" : "worker"} (the Tollgate ray stack)
      Wants=network-online.target
      After=network-online.target

      [Service]
      User=ray
      Environment=RAY_USAGE_STATS_ENABLED=0
      ExecStart=${local.venv}/bin/ray start --block --node-ip-address=${node.address} ${node.id == local.head.id ? "--head --port=6379 --ray-client-server-port=10001 --dashboard-host=${local.public ? "0.0.0.0" : "127.0.0.1"} --dashboard-port=${var.dashboard_port}" : "--address=${local.head.address}:6379"}
      ExecStop=${local.venv}/bin/ray stop
      Restart=on-failure
      RestartSec=5

      [Install]
      WantedBy=multi-user.target
    UNIT
  }
}

# The head on the first node: GCS on 6379, Ray Client on 10001, the dashboard.
resource "terraform_data" "head" {
  triggers_replace = [local.head.address, local.head.ssh_user, local.head.ssh_port, sha256(join("\n", concat([local.unit[local.head.id]], local.install[local.head.id])))]

  connection {
    type         = "ssh"
    host         = local.head.address
    port         = local.head.ssh_port
    user         = local.head.ssh_user
    private_key  = file(var.tollgate_ssh_private_key_file)
    host_key     = local.head.host_key != "" ? local.head.host_key : null
    proxy_scheme = var.tollgate_ssh_proxy == null ? null : var.tollgate_ssh_proxy.scheme
    proxy_host   = var.tollgate_ssh_proxy == null ? null : var.tollgate_ssh_proxy.host
    proxy_port   = var.tollgate_ssh_proxy == null ? null : var.tollgate_ssh_proxy.port
    timeout      = "5m"
  }

  provisioner "file" {
    content     = local.unit[local.head.id]
    destination = "/tmp/tollgate-ray.service"
  }

  provisioner "remote-exec" {
    inline = concat(local.install[local.head.id], [
      "for i in $(seq 1 60); do ${local.venv}/bin/ray status --address=${local.head.address}:6379 >/dev/null 2>&1 && break; sleep 2; done",
      "${local.venv}/bin/ray status --address=${local.head.address}:6379",
    ])
  }
}

# Every other node joins the head as a worker.
resource "terraform_data" "worker" {
  for_each = local.workers

  triggers_replace = [terraform_data.head.id, each.value.address, each.value.ssh_user, each.value.ssh_port, sha256(join("\n", concat([local.unit[each.key]], local.install[each.key])))]

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

  provisioner "file" {
    content     = local.unit[each.key]
    destination = "/tmp/tollgate-ray.service"
  }

  provisioner "remote-exec" {
    inline = local.install[each.key]
  }
}
