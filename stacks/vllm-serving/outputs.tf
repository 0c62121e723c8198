output "port" {
  description = "The exposed web port: vLLM's OpenAI-compatible server"
  value       = var.port
}

output "served_model_name" {
  value = local.served_name
}

output "node" {
  description = "The node vLLM runs on"
  value       = local.node.address
}

output "base_url" {
  description = "The OpenAI-compatible endpoint on the node (register it as a static engine of the gateway)"
  value       = "http://${local.host}:${var.port}/v1"
}
