#!/usr/bin/env bash
# A single-node SLURM cluster on this machine, for the tests marked `slurm`:
#   tests/cluster/slurm.sh install   Debian's packages (as root; apt-get)
#   tests/cluster/slurm.sh installed succeeds when every program the cluster needs is there
#   tests/cluster/slurm.sh start     munge, MariaDB + slurmdbd (job accounting: sacct, which
#                                    submitit asks for the state of a job), slurmctld, slurmd;
#                                    returns once the node is idle
#   tests/cluster/slurm.sh stop      stops what start started (by the pids it recorded)
# One node, named after this host, with this machine's CPUs and memory, in partition `debug`
# (the default). No cgroups: processes are tracked through /proc (proctrack/linuxproc), tasks
# are not bound (task/none). Runs as root; state and logs under $SVMLAB_SLURM_DIR
# (default /var/tmp/svmlab-slurm), the configuration in /etc/slurm, where every SLURM command
# looks for it.
set -euo pipefail

DIR=${SVMLAB_SLURM_DIR:-/var/tmp/svmlab-slurm}
CLUSTER=svmlab
NODE=$(hostname -s)
PACKAGES="munge slurmctld slurmd slurm-client slurmdbd mariadb-server"
LIMIT_S=${SVMLAB_SLURM_LIMIT_S:-120}   # a daemon not up after this long is an error

say() { echo "slurm.sh: $*" >&2; }

wait_until() {  # wait_until WHAT COMMAND...: poll COMMAND until it succeeds, or fail
    local what=$1 deadline=$((SECONDS + LIMIT_S))
    shift
    until "$@" >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            say "gave up after ${LIMIT_S} s waiting for $what (logs: $DIR/log)"
            tail -n 20 "$DIR"/log/*.log >&2 || true
            return 1
        fi
        sleep 0.5
    done
}

install_packages() {
    # The packages would start their daemons (MariaDB's server among them): a policy-rc.d that
    # refuses keeps them from doing so, unless the machine has one already.
    local policy=/usr/sbin/policy-rc.d made=
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made=1
    fi
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $PACKAGES
    [ -z "$made" ] || rm -f "$policy"
}

node_idle() { [ "$(sinfo -h -n "$NODE" -o %t)" = idle ]; }

write_config() {
    local memory
    memory=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
    mkdir -p /etc/slurm
    cat > /etc/slurm/slurm.conf <<CONF
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
MpiDefault=none
ReturnToService=2
KillWait=30
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
CONF
    cat > /etc/slurm/slurmdbd.conf <<CONF
AuthType=auth/munge
DbdHost=$NODE
DbdAddr=127.0.0.1
SlurmUser=slurm
PidFile=$DIR/run/slurmdbd.pid
LogFile=$DIR/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=localhost
StoragePort=0
StorageUser=slurm
StorageLoc=slurm_acct_db
CONF
    chown slurm:slurm /etc/slurm/slurmdbd.conf
    chmod 600 /etc/slurm/slurmdbd.conf
}

installed() {
    local program
    for program in munged slurmctld slurmd slurmdbd mariadbd mariadb-install-db sinfo sbatch; do
        command -v "$program" >/dev/null || { say "$program is not installed ($0 install)"; return 1; }
    done
}

start() {
    installed
    stop  # what an earlier start left running
    mkdir -p "$DIR"/{state,spool,run,log,mysql}
    chown slurm:slurm "$DIR"/{state,log}
    chmod 777 "$DIR/log"  # every daemon writes its log here
    write_config

    # munge: a key if there is none, then the daemon (as its own user)
    [ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key
    chown munge:munge /etc/munge/munge.key && chmod 600 /etc/munge/munge.key
    install -d -o munge -g munge /run/munge
    runuser -u munge -- munged --pid-file=/run/munge/munged.pid
    wait_until "munge" sh -c 'munge -n | unmunge'

    # MariaDB on a socket only, in a folder of its own, with the accounting database
    chown mysql:mysql "$DIR/mysql"
    install -d -o mysql -g mysql /run/mysqld
    if [ ! -d "$DIR/mysql/mysql" ]; then
        mariadb-install-db --user=mysql --datadir="$DIR/mysql" --auth-root-authentication-method=socket >"$DIR/log/mariadb-install.log" 2>&1
    fi
    setsid mariadbd --user=mysql --datadir="$DIR/mysql" --skip-networking \
        --socket=/run/mysqld/mysqld.sock --pid-file=/run/mysqld/mariadb.pid \
        --log-error="$DIR/log/mariadb.log" </dev/null >/dev/null 2>&1 &
    wait_until "MariaDB" mariadb -e 'SELECT 1'
    mariadb -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
                CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED VIA unix_socket;
                GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"

    slurmdbd
    wait_until "slurmdbd" sacctmgr -n list cluster
    sacctmgr -i add cluster "$CLUSTER" >/dev/null 2>&1 || true  # there already, on a restart
    slurmctld
    slurmd
    wait_until "node $NODE to be idle" node_idle
    say "node $NODE idle: $(sinfo -h -o '%P %D %c %m')"
}

stop_pid() {  # stop_pid NAME PIDFILE: SIGTERM to the pid in PIDFILE, wait until it is gone
    local name=$1 file=$2 pid
    [ -s "$file" ] || return 0
    pid=$(cat "$file")
    if kill "$pid" 2>/dev/null; then
        wait_until "$name ($pid) to stop" sh -c "! kill -0 $pid"
    fi
    rm -f "$file"
}

stop() {
    scancel --user=root >/dev/null 2>&1 || true
    stop_pid slurmd "$DIR/run/slurmd.pid"
    stop_pid slurmctld "$DIR/run/slurmctld.pid"
    stop_pid slurmdbd "$DIR/run/slurmdbd.pid"
    stop_pid mariadb /run/mysqld/mariadb.pid
    stop_pid munged /run/munge/munged.pid
}

case "${1:-}" in
    install) install_packages ;;
    installed) installed ;;
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 install|installed|start|stop" >&2; exit 2 ;;
esac
