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
  served_name = var.served_model_name != "" ? var.served_model_name : var.model
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
