variable "docker_host" {
  type        = string
  description = "The node's Docker engine, e.g. ssh://ops@10.0.0.5:22 or unix:///var/run/docker.sock"
}

variable "scrape_targets" {
  type        = string
  default     = "127.0.0.1:8000"
  description = "Comma-separated host:port list Prometheus scrapes at /metrics"
}

variable "grafana_port" {
  type        = number
  default     = 3000
  description = "Grafana's port on the node"
}

variable "prometheus_port" {
  type        = number
  default     = 9090
  description = "Prometheus's port on the node"
}

variable "retention_days" {
  type        = number
  default     = 15
  description = "How long Prometheus keeps samples"
}

# Set by the platform on every run (see the README: injected variables).
variable "tollgate_cluster_id" {
  type        = string
  description = "The cluster this run applies to"
}

variable "tollgate_public_domain" {
  type        = string
  description = "The cluster's public domain"
}
