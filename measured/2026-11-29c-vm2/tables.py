#!/usr/bin/env python3
"""Prints this folder's table (medians of the runs) from its CSVs.
Run from this folder: python3 tables.py"""
import csv, glob, statistics as st


def runs(np, rdv):
    out = []
    for f in sorted(glob.glob(f'slow/np{np}_cma{rdv}_r*.csv')):
        rows = csv.DictReader(l for l in open(f) if not l.startswith('#'))
        out.append({(r['impl'], int(r['block_bytes'])): float(r['pure_us']) for r in rows})
    return out


for np in (2, 4):
    fifo, cma = runs(np, 'n'), runs(np, 'y')
    print(f'\n`slow/`, {np} ranks, pure time ({len(fifo)} runs of each, in turn):\n')
    print('| block | MPI_Alltoall, µs | oc_thread FIFO, µs | oc_thread cma, µs '
          '| FIFO / MPI (runs) | cma / MPI (runs) |')
    print('| ---: | ---: | ---: | ---: | ---: | ---: |')
    for b in sorted({k[1] for k in fifo[0]}):
        def med(rs, impl):
            return st.median(r[(impl, b)] for r in rs)

        def rat(rs):
            return [r[('oc_thread', b)] / r[('mpi_blocking', b)] for r in rs]
        print('| %d KB | %.0f | %.0f | %.0f | %.2f (%s) | %.2f (%s) |' % (
            b // 1024, med(fifo + cma, 'mpi_blocking'), med(fifo, 'oc_thread'),
            med(cma, 'oc_thread'), st.median(rat(fifo)), ', '.join('%.2f' % x for x in rat(fifo)),
            st.median(rat(cma)), ', '.join('%.2f' % x for x in rat(cma))))
