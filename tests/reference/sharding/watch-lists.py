"""Four concurrent watch-lists (sendInitialEvents=true) of every pod, to the
initial-events-end bookmark, sharded into four uid ranges or not: wall
time, events, bytes, and the CPU the apiserver and kache spent meanwhile
(utime+stime from /proc; run on the apiserver's host). One row per run.
Usage: [RV0=1] watch-lists.py sharded|unsharded BASE_URL [KACHE_PID]
(RV0=1 asks for resourceVersion=0 instead of a consistent start)."""
import http.client, os, ssl, sys, threading, time, urllib.parse

mode, base = sys.argv[1], sys.argv[2]
rv0 = os.environ.get("RV0") == "1"
kache_pid = int(sys.argv[3]) if len(sys.argv) > 3 else None
u = urllib.parse.urlparse(base)
api_pid = int(os.popen("pgrep -x kube-apiserver").read().split()[0])
tick = os.sysconf("SC_CLK_TCK")

def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick

def hexb(v):
    return "0x10000000000000000" if v == 1 << 64 else "0x%016x" % v

q = 1 << 62
selectors = [f"shardRange(object.metadata.uid, '{hexb(i*q)}', '{hexb((i+1)*q)}')" for i in range(4)] if mode == "sharded" else [None] * 4
results = [None] * 4

def run(i):
    params = {"watch": "1", "sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan", "allowWatchBookmarks": "true"}
    if rv0:
        params["resourceVersion"] = "0"
    if selectors[i]:
        params["shardSelector"] = selectors[i]
    path = "/api/v1/pods?" + urllib.parse.urlencode(params)
    if u.scheme == "https":
        ctx = ssl.create_default_context(cafile="/opt/realapi/pki/ca.crt")
        c = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=600)
    else:
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    c.request("GET", path, headers={"Authorization": "Bearer kreal-admin-token", "Accept": "application/json", "User-Agent": "bench"})
    r = c.getresponse()
    assert r.status == 200, (r.status, r.read()[:300])
    n = nbytes = 0
    while True:
        line = r.readline()
        if not line:
            break
        nbytes += len(line)
        if b'"BOOKMARK"' in line[:30]:
            if b"initial-events-end" in line:
                break
            continue
        n += 1
    results[i] = (n, nbytes)
    c.close()

a0 = cpu(api_pid); k0 = cpu(kache_pid) if kache_pid else 0
t0 = time.monotonic()
ts = [threading.Thread(target=run, args=(i,)) for i in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
wall = time.monotonic() - t0
a1 = cpu(api_pid); k1 = cpu(kache_pid) if kache_pid else 0
events = [r[0] for r in results]
rvs = "rv=0" if rv0 else "rv=unset"
print(f"{mode:9} {rvs:8} via {'kache' if kache_pid else 'direct':6} wall {wall:6.2f} s  events {sum(events):6} {events}  MB {sum(r[1] for r in results)/1e6:7.1f}  apiserver CPU {a1-a0:6.2f} s  kache CPU {k1-k0:6.2f} s")
