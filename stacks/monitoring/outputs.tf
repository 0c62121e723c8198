output "node" {
  description = "The node Prometheus and Grafana run on"
  value       = local.node.address
}

output "grafana_port" {
  description = "The exposed web port: Grafana"
  value       = var.grafana_port
}

output "grafana_admin_password" {
  description = "Grafana's admin password at its first start (user admin): everyone in the organization reads a run's outputs"
  value       = nonsensitive(local.admin_password)
}

output "prometheus_url" {
  description = "Prometheus on the node (Grafana's data source uses the container network)"
  value       = "http://${local.host}:${var.prometheus_port}"
}

output "scrape_targets" {
  value = local.targets
}

# The platform gives the run a public URL, https://monitoring.<cluster's public domain>, routed to this port.
output "web_port" {
  description = "The exposed web port: Grafana"
  value       = var.grafana_port
}
