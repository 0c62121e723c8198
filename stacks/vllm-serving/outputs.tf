output "port" {
  description = "The exposed web port: vLLM's OpenAI-compatible server"
  value       = var.port
}

output "served_model_name" {
  value = local.served_name
}
