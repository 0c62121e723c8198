output "grafana_port" {
  description = "The exposed web port: Grafana"
  value       = var.grafana_port
}

output "prometheus_url" {
  value = "http://${docker_container.prometheus.name}:9090"
}
