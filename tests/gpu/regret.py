#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Regret of the tuner and of NCCL's default from a topo-calibrate --bench summary: geometric means of
tuner/default, tuner/oracle and default/oracle per collective, with the oracle over every forced
setting and over those NCCL's channel count can reach (<= 24 channels, no /ch32).
Usage: python3 tests/gpu/regret.py calibrate-summary.txt"""
import re,sys,math,collections
txt=open(sys.argv[1]).read().splitlines()
tables=collections.defaultdict(dict)   # (coll,setting) -> size -> time
cur=None
for l in txt:
    m=re.match(r"# (allreduce|allgather|reducescatter|reduce|broadcast)\s+(\S+)\s+\(",l)
    if m: cur=(m.group(1),m.group(2)); continue
    if l.startswith('# ') and 'size(B)' not in l: cur=None; continue
    if l.startswith('#') or not l.strip(): 
        if l.startswith('# --bench'): cur=None
        continue
    if cur:
        f=l.split()
        if len(f)>=4 and f[0].isdigit():
            tables[cur][int(f[0])]=float(f[3])
bench={}
coll=None
inb=False
for l in txt:
    if l.startswith('# --bench'): inb=True; continue
    if not inb: continue
    m=re.match(r"# (allreduce|allgather|reducescatter|reduce|broadcast)$",l)
    if m: coll=m.group(1); continue
    f=l.split()
    if coll and len(f)>=7 and f[0].isdigit():
        bench[(coll,int(f[0]))]=(float(f[1]),f[2],float(f[3]),f[4])
for c in ("allreduce","allgather","reducescatter"):
    rows=[(s,v) for (cc,s),v in sorted(bench.items()) if cc==c]
    gm=lambda xs: math.exp(sum(map(math.log,xs))/len(xs))
    td=[];to=[];do=[];to24=[];do24=[];worst=(0,0);worstd=(0,0)
    for s,(d,dr,t,tr) in rows:
        best=min(tab[s] for (cc,st),tab in tables.items() if cc==c and s in tab)
        best24=min(tab[s] for (cc,st),tab in tables.items() if cc==c and s in tab and not st.endswith('/ch32'))
        best=min(best,d,t); best24=min(best24,d,t)
        td.append(t/d); to.append(t/best); do.append(d/best); to24.append(t/best24); do24.append(d/best24)
        if t/best24>worst[0]: worst=(t/best24,s)
        if t/d>worstd[0]: worstd=(t/d,s)
    print(f"{c:14s} n={len(rows)} tuner/default gm {gm(td):.3f} worst {worstd[0]:.3f}@{worstd[1]} | vs oracle(all): tuner {gm(to):.3f} default {gm(do):.3f} | vs oracle(<=24ch): tuner {gm(to24):.3f} (worst {worst[0]:.3f}@{worst[1]}) default {gm(do24):.3f}")
