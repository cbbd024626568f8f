# The local one-node SLURM cluster for a test, sourced after common.sh:
#   start_local_slurm NAME CTLD_PORT SLURMD_PORT
# skips when the SLURM binaries or root are missing, starts munged, slurmctld and
# slurmd (scripts/slurm-local.sh) with a short state path (slurmd and PMIx put unix
# sockets there: 108-byte limit), exports SLURM_CONF, and stops the daemons when the
# test exits, whatever happens (their logs are kept in $SCRATCH/slurm-logs).
start_local_slurm() {
  local name=$1 ctld_port=$2 slurmd_port=$3
  local b
  for b in sbatch srun sinfo slurmctld slurmd munged; do
    command -v "$b" >/dev/null 2>&1 || [[ -x /usr/sbin/$b ]] ||
      skip "SLURM binaries missing ($b); apt-get install slurm-wlm munge"
  done
  [[ $(id -u) == 0 ]] || skip "the local SLURM cluster needs root (slurmd), running as $(id -un)"
  export SLURM_LOCAL_DIR=$(mktemp -d "/tmp/trainer-slurm-$name.XXXXXX") SLURM_LOCAL_CPUS=16
  export SLURM_LOCAL_CTLD_PORT=${SLURM_LOCAL_CTLD_PORT:-$ctld_port}
  export SLURM_LOCAL_SLURMD_PORT=${SLURM_LOCAL_SLURMD_PORT:-$slurmd_port}
  at_exit 'bash "$REPO/scripts/slurm-local.sh" stop || true; cp -r "$SLURM_LOCAL_DIR/log" "$SCRATCH/slurm-logs" 2>/dev/null; rm -rf "$SLURM_LOCAL_DIR"'
  bash "$REPO/scripts/slurm-local.sh" start || fail "could not start the local SLURM cluster"
  export SLURM_CONF=$SLURM_LOCAL_DIR/slurm.conf
}
