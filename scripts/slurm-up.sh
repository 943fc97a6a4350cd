#!/usr/bin/env bash
# Start a throwaway single-host Slurm cluster on loopback, for the fleet and ReFrame tests.
#
#   bash scripts/slurm-up.sh            # as root on Debian 12; prints `export SLURM_CONF=...`
#   SLURM_ACCOUNTING=0 bash scripts/slurm-up.sh   # no MariaDB/slurmdbd: no sacct
#   bash scripts/slurm-down.sh          # stops it and removes its folder
#
# One node (this host, CPUs = nproc) in two partitions, `zen` and `grace`, standing for
# two node types.  Daemons run as root, bind to 127.0.0.1, and keep all state, logs,
# sockets and pid files under $SLURM_TEST_DIR (default /tmp/eb-torchperf-slurm); the
# cluster is found through SLURM_CONF=$SLURM_TEST_DIR/etc/slurm.conf.  Nothing is
# written to /etc.
#
# Accounting (MariaDB + slurmdbd, the default) costs a few seconds at start and gives
# `sacct`: reliable final job states (exit code, signal, TIMEOUT, CANCELLED,
# OUT_OF_MEMORY) after the job has left slurmctld's memory, and ReFrame's `slurm`
# scheduler, which needs sacct.  Without it, eb-torchperf falls back to `scontrol`.
set -euo pipefail
cd "$(dirname "$0")/.."

D=${SLURM_TEST_DIR:-/tmp/eb-torchperf-slurm}
ACCOUNTING=${SLURM_ACCOUNTING:-1}
CTLD_PORT=${SLURM_TEST_PORT:-6817}        # slurmd uses +1, slurmdbd +2, MariaDB +3
PACKAGES="slurm-wlm munge lmod"   # lmod: `module load` in fleet jobs, as on sites
[ "$ACCOUNTING" = 1 ] && PACKAGES="$PACKAGES slurmdbd mariadb-server"
START_TIMEOUT_S=60

die() { echo "slurm-up: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (daemons run as root; nothing goes to /etc)"

missing=$(for p in $PACKAGES; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null \
          | grep -q "install ok installed" || printf '%s ' "$p"; done)
if [ -n "$missing" ]; then
    echo "slurm-up: installing ${missing% }" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    # shellcheck disable=SC2086
    apt-get install -y -q --no-install-recommends $missing >/dev/null
    echo "slurm-up: installed in ${SECONDS}s" >&2
fi

if [ -e "$D/etc/slurm.conf" ]; then
    SLURM_CONF=$D/etc/slurm.conf timeout 5 sinfo -h >/dev/null 2>&1 \
        && { echo "export SLURM_CONF=$D/etc/slurm.conf"; exit 0; }
    bash scripts/slurm-down.sh
fi
STARTED=$SECONDS
mkdir -p "$D"/{etc,log,run,state,spool,munge,db}
chmod 0755 "$D" "$D/munge"
HOST=$(hostname -s)
CPUS=$(nproc)

wait_for() {  # wait_for WHAT COMMAND...: retry COMMAND until it succeeds or the deadline
    local what=$1; shift
    local end=$((SECONDS + START_TIMEOUT_S))
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $end ] || die "$what did not come up in ${START_TIMEOUT_S}s; logs in $D/log"
        sleep 0.2
    done
}

# munge: a fresh key; the socket folder must be 0755 for munged to accept it.
dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 status=none
chmod 0400 "$D/munge/munge.key"
munged --key-file="$D/munge/munge.key" --socket="$D/munge/munge.socket.2" \
    --pid-file="$D/run/munged.pid" --log-file="$D/log/munged.log" \
    --seed-file="$D/munge/munged.seed"
wait_for munged sh -c "munge -S '$D/munge/munge.socket.2' -n | unmunge -S '$D/munge/munge.socket.2'"

ACCT_LINES="AccountingStorageType=accounting_storage/none"
if [ "$ACCOUNTING" = 1 ]; then
    DB_PORT=$((CTLD_PORT + 3))
    mariadb-install-db --user=root --datadir="$D/db" --auth-root-authentication-method=normal \
        --skip-test-db >"$D/log/mariadb-install.log" 2>&1
    setsid -f mariadbd --no-defaults --user=root --datadir="$D/db" --socket="$D/run/mysqld.sock" \
        --pid-file="$D/run/mariadbd.pid" --bind-address=127.0.0.1 --port="$DB_PORT" \
        --skip-name-resolve --innodb-buffer-pool-size=64M --log-error="$D/log/mariadbd.log" \
        </dev/null 2>>"$D/log/mariadbd.log"
    wait_for mariadbd mariadb --no-defaults --socket="$D/run/mysqld.sock" -u root -e "select 1"
    mariadb --no-defaults --socket="$D/run/mysqld.sock" -u root -e \
        "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';
         GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
    cat >"$D/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$D/munge/munge.socket.2
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$((CTLD_PORT + 2))
SlurmUser=root
LogFile=$D/log/slurmdbd.log
PidFile=$D/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
EOF
    chmod 0600 "$D/etc/slurmdbd.conf"
    ACCT_LINES="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$((CTLD_PORT + 2))
AccountingStoragePass=$D/munge/munge.socket.2
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=5"
fi

cat >"$D/etc/slurm.conf" <<EOF
ClusterName=torchperf
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$((CTLD_PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$D/munge/munge.socket.2
CredType=cred/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
ReturnToService=2
MinJobAge=300
KillWait=5
InactiveLimit=0
MailProg=/bin/true
$ACCT_LINES
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS State=UNKNOWN
PartitionName=zen Nodes=$HOST Default=YES MaxTime=60 State=UP OverSubscribe=NO
PartitionName=grace Nodes=$HOST MaxTime=60 State=UP OverSubscribe=NO
EOF
export SLURM_CONF=$D/etc/slurm.conf

if [ "$ACCOUNTING" = 1 ]; then
    slurmdbd   # slurmctld registers the cluster itself; jobs need no association here
    wait_for slurmdbd sacctmgr -n list cluster
fi
slurmctld -c
slurmd -c
wait_for "the node" sh -c "sinfo -h -N -o %t | grep -qx idle"
echo "slurm-up: cluster up in $((SECONDS - STARTED))s (partitions zen, grace; accounting=$ACCOUNTING)" >&2
echo "export SLURM_CONF=$SLURM_CONF"
