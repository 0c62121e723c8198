output "grafana_port" {
  description = "The exposed web port: Grafana"
  value       = var.grafana_port
}

output "prometheus_url" {
  value = "http://${docker_container.prometheus.name}:9090"
}

# The platform gives the run a public URL, https://monitoring.<cluster's public domain>, routed to this port.
output "web_port" {
  description = "The exposed web port: Grafana"
  value       = var.grafana_port
}
