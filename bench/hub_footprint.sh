#!/usr/bin/env bash
# bench/hub_footprint.sh TREE: start a demo hub of TREE (its .venv), time to /readyz, RSS of its process 20 s after ready (issue 39 item 8)
T=$1; cd $T
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
D=$(mktemp -d)
t0=$(date +%s.%N)
setsid .venv/bin/python -m server serve --host 127.0.0.1 --port $PORT --ws-port 0 --data-dir $D >$D/log 2>&1 &
PID=$!
for i in $(seq 600); do curl -sf http://127.0.0.1:$PORT/readyz >/dev/null && break; sleep 0.05; done
t1=$(date +%s.%N)
cpu=$(awk -v hz=$(getconf CLK_TCK) '{printf "%.2f", ($14 + $15) / hz}' /proc/$PID/stat)  # user + system CPU to ready: less load-bound than the wall time
sleep 20
rss=$(ps -o rss= --ppid $PID -p $PID | awk '{s+=$1} END {print s}')
echo "$T ready_s=$(echo "$t1 - $t0" | bc) ready_cpu_s=$cpu rss_kib=$rss procs=$(ps -o pid= --ppid $PID -p $PID | wc -l)"
kill -- -$PID 2>/dev/null; wait $PID 2>/dev/null
