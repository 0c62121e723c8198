terraform {
  required_version = ">= 1.6"
  required_providers {
    docker = {
      source  = "kreuzwerker/docker"
      version = "~> 3.0"
    }
  }
}

provider "docker" {
  host = var.docker_host
}

locals {
  targets = [for target in split(",", var.scrape_targets) : trimspace(target) if trimspace(target) != ""]
  prometheus_config = yamlencode({
    global = { scrape_interval = "15s" }
    scrape_configs = [{
      job_name       = "targets"
      static_configs = [{ targets = local.targets }]
    }]
  })
}

resource "docker_network" "monitoring" {
  name = "tollgate-monitoring-${var.tollgate_cluster_id}"
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
    "--storage.tsdb.retention.time=${var.retention_days}d",
  ]
  upload {
    file    = "/etc/prometheus/prometheus.yml"
    content = local.prometheus_config
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
  ]
  ports {
    internal = 3000
    external = var.grafana_port
  }
  networks_advanced {
    name = docker_network.monitoring.name
  }
}
