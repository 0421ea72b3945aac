#!/usr/bin/env python3
"""Prints this folder's tables (medians over the runs) from its CSVs.
Run from this folder: python3 tables.py"""
import csv, glob, statistics as st


def rows(path):
    return csv.DictReader(l for l in open(path) if not l.startswith('#'))


def runs(folder, np, build):
    out = []
    for f in sorted(glob.glob(f'{folder}/np{np}_{build}_r*.csv')):
        out.append({(r['impl'], int(r['block_bytes'])): float(r['pure_us']) for r in rows(f)})
    return out


def size_label(b):
    if b < 1024:
        return '%d B' % b
    return '%d KB' % (b // 1024) if b < 1 << 20 else '%d MB' % (b >> 20)


def table(folder, np):
    old, new = runs(folder, np, 'old'), runs(folder, np, 'new')
    print(f'\n`{folder}/`, {np} ranks, pure time ({len(new)} runs of each build):\n')
    print('| block | MPI_Alltoall, µs | oc_thread before, µs | oc_thread after, µs '
          '| after / before | before / MPI | after / MPI (range) | oc_inline before / MPI '
          '| oc_inline after / MPI |')
    print('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
    for b in sorted({k[1] for k in new[0]}):
        def med(rs, impl):
            return st.median(r[(impl, b)] for r in rs)

        def rat(rs, impl):
            return [r[(impl, b)] / r[('mpi_blocking', b)] for r in rs]
        after = rat(new, 'oc_thread')
        print('| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f (%.2f-%.2f) | %.2f | %.2f |' % (
            size_label(b), med(old + new, 'mpi_blocking'), med(old, 'oc_thread'),
            med(new, 'oc_thread'),
            st.median(n[('oc_thread', b)] / o[('oc_thread', b)] for o, n in zip(old, new)),
            st.median(rat(old, 'oc_thread')), st.median(after), min(after), max(after),
            st.median(rat(old, 'oc_inline')), st.median(rat(new, 'oc_inline'))))


for base in ('', 'help/'):
    for folder, nps in (('small', (2, 4)), ('small1k', (4,)), ('full', (2, 4))):
        for np in nps:
            table(base + folder, np)
