#!/bin/bash
# One run: pmlin check (main's binary and this branch's) on pmlin gen histories,
# GOMAXPROCS 1 and 2, two repetitions each, /usr/bin/time for wall, CPU and peak RSS.
# Run it in a directory holding pmlin-main and pmlin-new (go build -o ... ./cmd/pmlin).
set -e
[ -x ./pmlin-main ] && [ -x ./pmlin-new ] || { echo "needs ./pmlin-main and ./pmlin-new" >&2; exit 2; }
echo "# $(date -u) $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "ops,procs,file_bytes,binary,gomaxprocs,rep,wall_s,user_s,sys_s,peak_rss_kb,load1_before"
for spec in 100000:8 1000000:8 10000000:8 100000:32 1000000:32 10000000:32; do
  ops=${spec%:*}; procs=${spec#*:}
  ./pmlin-new gen --ops $ops --procs $procs -o g.hist --force >/dev/null 2>&1
  size=$(stat -c %s g.hist)
  for rep in 1 2; do
    for p in 1 2; do
      for b in main new; do
        l=$(cut -d' ' -f1 /proc/loadavg)
        r=$(GOMAXPROCS=$p /usr/bin/time -f "%e,%U,%S,%M" ./pmlin-$b check g.hist 2>&1 >/dev/null | tail -1)
        echo "$ops,$procs,$size,$b,$p,$rep,$r,$l"
      done
    done
  done
done
rm -f g.hist
echo "# $(date -u) load $(cat /proc/loadavg)"
