terraform {
  required_version = ">= 1.6"
  required_providers {
    docker = {
      source  = "kreuzwerker/docker"
      version = "~> 3.0"
    }
  }
}

locals {
  # The node it runs on: the run's target, else the cluster's first node (where the public URL routes).
  node = var.tollgate_target_node == "" ? var.tollgate_nodes[0] : one([for node in var.tollgate_nodes : node if node.address == var.tollgate_target_node])
  host = strcontains(local.node.address, ":") ? "[${local.node.address}]" : local.node.address
  # The provider runs the ssh command: the cluster's key, the node's pinned host key (unchecked only when none was
  # registered, as in a connection block), and the run sandbox's proxy when there is one.
  ssh_opts = concat(
    ["-i", var.tollgate_ssh_private_key_file],
    local.node.host_key != "" ? ["-o", "UserKnownHostsFile=${var.tollgate_known_hosts_file}", "-o", "StrictHostKeyChecking=yes"] : ["-o", "UserKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=no"],
    var.tollgate_ssh_proxy == null ? [] : ["-o", "ProxyCommand=socat - PROXY:${var.tollgate_ssh_proxy.host}:%h:%p,proxyport=${var.tollgate_ssh_proxy.port}"],
  )

  listed  = [for target in split(",", var.scrape_targets) : trimspace(target) if trimspace(target) != ""]
  targets = length(local.listed) > 0 ? local.listed : [for address in [for node in var.tollgate_nodes : node.address] : strcontains(address, ":") ? "[${address}]:8000" : "${address}:8000"]
  prometheus_config = yamlencode({
    global = { scrape_interval = "15s" }
    scrape_configs = [
      { job_name = "prometheus", static_configs = [{ targets = ["127.0.0.1:9090"] }] },
      { job_name = "targets", static_configs = [{ targets = local.targets }] },
    ]
  })
  grafana_datasource = yamlencode({
    apiVersion = 1
    datasources = [{
      name      = "Prometheus"
      type      = "prometheus"
      access    = "proxy"
      url       = "http://tollgate-prometheus-${var.tollgate_cluster_id}:9090"
      isDefault = true
    }]
  })
  admin_password = var.grafana_admin_password != "" ? var.grafana_admin_password : terraform_data.admin_password.output
}

# Docker on the node, over SSH as the node's run user (who must be allowed to use Docker).
provider "docker" {
  host     = "ssh://${local.node.ssh_user}@${local.host}:${local.node.ssh_port}"
  ssh_opts = local.ssh_opts
}

# A password made once (uuid() is random; ignore_changes keeps the first) when none is given.
resource "terraform_data" "admin_password" {
  input = replace(uuid(), "-", "")
  lifecycle {
    ignore_changes = [input]
  }
}

resource "docker_network" "monitoring" {
  name = "tollgate-monitoring-${var.tollgate_cluster_id}"
}

resource "docker_volume" "prometheus" {
  name = "tollgate-prometheus-${var.tollgate_cluster_id}"
}

resource "docker_volume" "grafana" {
  name = "tollgate-grafana-${var.tollgate_cluster_id}"
}

resource "docker_image" "prometheus" {
  name         = "prom/prometheus:v2.53.0"
  keep_locally = true
}

resource "docker_image" "grafana" {
  name         = "grafana/grafana:11.1.0"
  keep_locally = true
}

resource "docker_container" "prometheus" {
  name    = "tollgate-prometheus-${var.tollgate_cluster_id}"
  image   = docker_image.prometheus.image_id
  restart = "unless-stopped"
  command = [
    "--config.file=/etc/prometheus/prometheus.yml",
    "--storage.tsdb.path=/prometheus",
    "--storage.tsdb.retention.time=${var.retention_days}d",
  ]
  upload {
    file    = "/etc/prometheus/prometheus.yml"
    content = local.prometheus_config
  }
  volumes {
    volume_name    = docker_volume.prometheus.name
    container_path = "/prometheus"
  }
  ports {
    internal = 9090
    external = var.prometheus_port
  }
  networks_advanced {
    name = docker_network.monitoring.name
  }
}

resource "docker_container" "grafana" {
  name    = "tollgate-grafana-${var.tollgate_cluster_id}"
  image   = docker_image.grafana.image_id
  restart = "unless-stopped"
  env = [
    "GF_SERVER_ROOT_URL=https://monitoring.${var.tollgate_public_domain}/",
    "GF_SECURITY_ADMIN_PASSWORD=${local.admin_password}",
    "GF_USERS_ALLOW_SIGN_UP=false",
    "GF_AUTH_ANONYMOUS_ENABLED=false",
  ]
  upload {
    file    = "/etc/grafana/provisioning/datasources/tollgate.yaml"
    content = local.grafana_datasource
  }
  volumes {
    volume_name    = docker_volume.grafana.name
    container_path = "/var/lib/grafana"
  }
  ports {
    internal = 3000
    external = var.grafana_port
  }
  networks_advanced {
    name = docker_network.monitoring.name
  }
}
