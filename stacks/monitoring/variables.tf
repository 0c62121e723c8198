variable "scrape_targets" {
  type        = string
  default     = ""
  description = "Comma-separated host:port list Prometheus scrapes at /metrics (empty: port 8000 of every node, where the vllm-serving stack serves)"
}

variable "grafana_port" {
  type        = number
  default     = 3000
  description = "Grafana's port on the node (the exposed web port)"
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

variable "grafana_admin_password" {
  type        = string
  default     = ""
  sensitive   = true
  description = "Grafana's admin password at its first start (empty: one is made, and shown in the run's outputs)"
}

# Set by the platform on every run (only the variables a module declares are passed).
# The stack reaches the nodes only through the cluster's identity: its key, installed
# on every node for the node's run user, and each node's pinned SSH host key.

variable "tollgate_cluster_id" {
  type        = string
  description = "The cluster this run applies to"
}

variable "tollgate_public_domain" {
  type        = string
  description = "The cluster's public domain"
}

variable "tollgate_target_node" {
  type        = string
  default     = ""
  description = "The targeted node's address; empty for the whole cluster"
}

variable "tollgate_nodes" {
  type = list(object({
    id       = string
    address  = string
    ssh_user = string
    ssh_port = number
    host_key = string
  }))
  description = "Every node of the cluster: its address, the user and port the cluster's key is installed for, and its SSH host key (empty when none was registered)"
}

variable "tollgate_ssh_private_key_file" {
  type        = string
  description = "Path of the cluster's private key file"
}

variable "tollgate_known_hosts_file" {
  type        = string
  description = "Path of a known_hosts file with every node's host key, for the ssh command line"
}

variable "tollgate_ssh_proxy" {
  type = object({
    scheme = string
    host   = string
    port   = number
  })
  default     = null
  description = "The run sandbox's HTTP CONNECT proxy to the nodes; null when runs are not sandboxed"
}
