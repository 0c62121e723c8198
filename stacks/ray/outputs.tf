output "head" {
  description = "The head node"
  value       = local.head.address
}

output "ray_address" {
  description = "What ray start --address and ray.init take inside the cluster's network"
  value       = "${local.head.address}:6379"
}

output "ray_client" {
  description = "Ray Client, for ray.init from a machine that reaches the head"
  value       = "ray://${local.head.address}:10001"
}

output "workers" {
  value = [for node in values(local.workers) : node.address]
}

output "usage" {
  value = "On the head: ${local.venv}/bin/ray status; ${local.venv}/bin/ray job submit --address http://127.0.0.1:${var.dashboard_port} -- ${local.venv}/bin/python -c 'import ray; ray.init(); print(ray.cluster_resources())'. ${local.public ? "The dashboard is the run's public URL (no login)." : "The dashboard listens on the head's 127.0.0.1:${var.dashboard_port} only (public_dashboard = yes publishes it)."}"
}

# The platform gives the run a public URL, https://ray.<cluster's public domain>, routed to this port: only when asked.
output "web_port" {
  description = "The exposed web port: the Ray dashboard, when public_dashboard is yes"
  value       = local.public ? var.dashboard_port : null
}
