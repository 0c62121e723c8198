variable "docker_host" {
  type        = string
  description = "The node's Docker engine, e.g. ssh://ops@10.0.0.5:22"
}

variable "model" {
  type        = string
  description = "The Hugging Face repository id, e.g. Qwen/Qwen2.5-7B-Instruct"
}

variable "served_model_name" {
  type        = string
  default     = ""
  description = "The name clients use (default: the repository id)"
}

variable "port" {
  type        = number
  default     = 8000
  description = "The server's port on the node"
}

variable "tensor_parallel_size" {
  type        = number
  default     = 1
  description = "GPUs one model replica spans"
}

variable "max_model_len" {
  type        = number
  default     = 8192
  description = "The longest context served"
}

variable "image" {
  type        = string
  default     = "vllm/vllm-openai:v0.6.3"
  description = "The vLLM image"
}

# Set by the platform on every run (see the README: injected variables).
variable "tollgate_cluster_id" {
  type        = string
  description = "The cluster this run applies to"
}
