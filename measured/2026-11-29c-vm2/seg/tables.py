#!/usr/bin/env python3
"""Prints seg/'s tables for one folder: python3 seg/tables.py seg/slow (or seg/fast), from
measured/2026-11-29c-vm2."""
import csv,glob,statistics as st,sys
d=sys.argv[1]
def runs(np,seg):
    out=[]
    for f in sorted(glob.glob(f'{d}/np{np}_{seg}_r*.csv')):
        out.append({(r['impl'],int(r['block_bytes'])):float(r['pure_us']) for r in csv.DictReader(l for l in open(f) if not l.startswith('#'))})
    return out
def lab(b): return f"{b//1024} KB" if b<1<<20 else f"{b>>20} MB"
for np in (2,4):
    a,b_=runs(np,'def'),runs(np,'32k')
    print(f"\n{np} ranks ({len(a)} rounds), pure time / MPI_Alltoall's (medians, range); 32k/def = oc_thread's time with 32 KB over 8 KB\n")
    print("| block | MPI, µs | oc_thread 8 KB seg | oc_thread 32 KB seg | 32k / def | oc_inline 8 KB | oc_inline 32 KB |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for b in sorted({k[1] for k in a[0]}):
        def rat(rs,impl): return [r[(impl,b)]/r[('mpi_blocking',b)] for r in rs]
        ra,rb=rat(a,'oc_thread'),rat(b_,'oc_thread')
        ia,ib=rat(a,'oc_inline'),rat(b_,'oc_inline')
        m=st.median([r[('mpi_blocking',b)] for r in a+b_])
        sp=st.median([y[('oc_thread',b)] for y in b_])/st.median([x[('oc_thread',b)] for x in a])
        print(f"| {lab(b)} | {m:.1f} | {st.median(ra):.2f} ({min(ra):.2f}-{max(ra):.2f}) | {st.median(rb):.2f} ({min(rb):.2f}-{max(rb):.2f}) | {sp:.2f} | {st.median(ia):.2f} | {st.median(ib):.2f} |")
