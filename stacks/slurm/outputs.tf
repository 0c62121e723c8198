output "controller" {
  description = "The node running slurmctld: sign in there (or on any node) to submit jobs"
  value       = local.controller.address
}

output "partition" {
  value = var.partition
}

output "slurm_nodes" {
  description = "Slurm's name for each node, and its address"
  value       = { for node in local.nodes : local.slurm_name[node.id] => node.address }
}

output "usage" {
  value = "On any node: sinfo (the nodes, idle when ready), srun -N ${length(local.nodes)} hostname (a job on every node), sbatch job.sh (a batch job). slurmctld listens on ${local.controller.address}:6817, slurmd on 6818 of each node."
}
