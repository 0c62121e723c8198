output "server" {
  description = "The node running the k3s server (the Kubernetes API)"
  value       = local.server.address
}

output "api_server" {
  value = "https://${local.server_host}:6443"
}

output "agents" {
  description = "The nodes that joined as agents"
  value       = [for node in values(local.agents) : node.address]
}

output "usage" {
  value = "On the server: sudo k3s kubectl get nodes. Elsewhere: copy the server's /etc/rancher/k3s/k3s.yaml (the cluster's admin credentials) and replace 127.0.0.1 in it with ${local.server.address}, then kubectl --kubeconfig k3s.yaml get nodes."
}
