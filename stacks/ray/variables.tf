variable "ray_version" {
  type        = string
  default     = "2.60.0"
  description = "The Ray release installed with pip, the same on every node"
}

variable "dashboard_port" {
  type        = number
  default     = 8265
  description = "The Ray dashboard's port on the head node"
}

variable "public_dashboard" {
  type        = string
  default     = "no"
  description = "yes: the dashboard gets the run's public URL. It has no login, and its Jobs API runs any code sent to it: only with something in front that checks who calls"
}

# Set by the platform on every run (only the variables a module declares are passed).
# The stack reaches the nodes only through the cluster's identity: its key, installed
# on every node for the node's run user, and each node's pinned SSH host key.

variable "tollgate_cluster_id" {
  type        = string
  description = "The cluster this run applies to"
}

variable "tollgate_cluster_name" {
  type        = string
  description = "The cluster's name"
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
