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
  served_name = var.served_model_name != "" ? var.served_model_name : var.model
  # The node it runs on: the run's target, else the cluster's first node.
  node = var.tollgate_target_node == "" ? var.tollgate_nodes[0] : one([for node in var.tollgate_nodes : node if node.address == var.tollgate_target_node])
  host = strcontains(local.node.address, ":") ? "[${local.node.address}]" : local.node.address
  # The provider runs the ssh command: the cluster's key, the node's pinned host key (unchecked only when none was
  # registered, as in a connection block), and the run sandbox's proxy when there is one.
  ssh_opts = concat(
    ["-i", var.tollgate_ssh_private_key_file],
    local.node.host_key != "" ? ["-o", "UserKnownHostsFile=${var.tollgate_known_hosts_file}", "-o", "StrictHostKeyChecking=yes"] : ["-o", "UserKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=no"],
    var.tollgate_ssh_proxy == null ? [] : ["-o", "ProxyCommand=socat - PROXY:${var.tollgate_ssh_proxy.host}:%h:%p,proxyport=${var.tollgate_ssh_proxy.port}"],
  )
}

# Docker on the node, over SSH as the node's run user (who must be allowed to use Docker).
provider "docker" {
  host     = "ssh://${local.node.ssh_user}@${local.host}:${local.node.ssh_port}"
  ssh_opts = local.ssh_opts
}

resource "docker_image" "vllm" {
  name         = var.image
  keep_locally = true
}

resource "docker_volume" "huggingface" {
  name = "tollgate-hf-cache-${var.tollgate_cluster_id}"
}

resource "docker_container" "vllm" {
  name     = "tollgate-vllm-${var.tollgate_cluster_id}"
  image    = docker_image.vllm.image_id
  restart  = "unless-stopped"
  gpus     = "all"
  shm_size = 8192
  command = [
    "--model", var.model,
    "--served-model-name", local.served_name,
    "--tensor-parallel-size", tostring(var.tensor_parallel_size),
    "--max-model-len", tostring(var.max_model_len),
    "--port", "8000",
  ]
  ports {
    internal = 8000
    external = var.port
  }
  volumes {
    volume_name    = docker_volume.huggingface.name
    container_path = "/root/.cache/huggingface"
  }
  healthcheck {
    test         = ["CMD", "curl", "-fsS", "http://127.0.0.1:8000/health"]
    interval     = "30s"
    timeout      = "5s"
    retries      = 3
    start_period = "600s"
  }
}
